package taskstate

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ray-go/ray/internal/assembly/core"
)

func TestReportRoundTrip(t *testing.T) {
	r := reportOf(1000)
	r.Dropped = 7
	r.Tasks[3].Error, r.Tasks[3].ErrorKind, r.Tasks[3].State, r.Tasks[3].Actor = "it broke\nbadly", "APPLICATION", core.StateFailed, true
	r.Tasks[3].Incarnation = 3
	r.Tasks[4].Ready, r.Tasks[4].Started = 0, 0               // unknown times stay unknown
	r.Tasks[5].LogStart, r.Tasks[5].LogEnd = 1<<33, 1<<33+517 // its output in its worker's log
	r.Tasks[6].TaskID = "not-a-hex-id"                        // IDs other than lowercase hex go as strings
	r.Tasks[7].TaskID = strings.ToUpper(r.Tasks[7].TaskID)    // (their 16 bytes would come back in lowercase)
	r.Summary = []core.TaskCount{{Function: "bench.f", State: core.StateFinished, Count: 999}, {Function: "bench.f", State: core.StateFailed, Count: 1}}
	b, err := EncodeReport(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeReport(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip differs:\n got %+v\nwant %+v", got.Tasks[:5], r.Tasks[:5])
	}
	empty, err := EncodeReport(&core.TaskReport{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeReport(empty); err != nil || got.Total != 0 || len(got.Tasks) != 0 {
		t.Fatalf("empty report: %+v, %v", got, err)
	}
	for _, bad := range [][]byte{nil, []byte("junk"), b[:len(b)/2]} {
		if _, err := DecodeReport(bad); err == nil {
			t.Errorf("DecodeReport(%.20q) accepted it", bad)
		}
	}
}

func FuzzDecodeReport(f *testing.F) {
	for _, n := range []int{0, 1, 3} {
		r := reportOf(n)
		r.Summary = []core.TaskCount{{Function: "f", State: core.StateFinished, Count: n}}
		b, _ := EncodeReport(r)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeReport(b)
		if err != nil {
			return
		}
		again, err := EncodeReport(r)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := DecodeReport(again)
		if err != nil || !reflect.DeepEqual(r, r2) {
			t.Fatalf("a decoded report does not round-trip: %v", err)
		}
	})
}

// Merge interleaves the processes' answers (each newest first) newest first, and keeps
// the newest Limit.
func TestMergeNewest(t *testing.T) {
	a, b := reportOf(50), reportOf(30)
	core.SortNewest(a.Tasks)
	for i := range b.Tasks {
		b.Tasks[i].Ended += 333 // between a's
	}
	core.SortNewest(b.Tasks)
	want := append(append([]core.TaskEvent(nil), a.Tasks...), b.Tasks...)
	core.SortNewest(want)
	got := Merge([]*core.TaskReport{a, {}, b}, core.TaskQuery{Limit: 60})
	if got.Total != 80 || len(got.Tasks) != 60 || !reflect.DeepEqual(got.Tasks, want[:60]) {
		t.Fatalf("merged %d of %d, in order: %v", len(got.Tasks), got.Total, reflect.DeepEqual(got.Tasks, want[:len(got.Tasks)]))
	}
	one := Merge([]*core.TaskReport{a}, core.TaskQuery{})
	if len(one.Tasks) != 50 || !reflect.DeepEqual(one.Tasks, a.Tasks) {
		t.Fatalf("one answer: %d tasks", len(one.Tasks))
	}
}
