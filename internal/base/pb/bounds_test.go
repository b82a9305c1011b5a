package pb

import (
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
)

func TestSplit(t *testing.T) {
	size := func(n int) int { return n }
	cases := []struct {
		items []int
		max   int
		want  [][]int
	}{
		{nil, 10, nil},
		{[]int{3, 3, 3}, 10, [][]int{{3, 3, 3}}},
		{[]int{6, 6, 6}, 10, [][]int{{6}, {6}, {6}}},
		{[]int{4, 6, 1, 20, 2, 2}, 10, [][]int{{4, 6}, {1}, {20}, {2, 2}}},
		{[]int{20}, 10, [][]int{{20}}},
	}
	for _, c := range cases {
		var got [][]int
		Split(c.items, size, c.max, func(run []int) { got = append(got, append([]int(nil), run...)) })
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Split(%v, %d) = %v, want %v", c.items, c.max, got, c.want)
		}
	}
	var got [][]int
	SplitCount([]int{1, 2, 3, 4, 5}, 2, func(run []int) { got = append(got, run) })
	if want := [][]int{{1, 2}, {3, 4}, {5}}; !reflect.DeepEqual(got, want) {
		t.Errorf("SplitCount = %v, want %v", got, want)
	}
}

func TestSpecBytesCountsArguments(t *testing.T) {
	s := &TaskSpec{Function: "f", Args: []*Arg{{Data: make([]byte, 5000)}, {ObjectId: make([]byte, 28), IsRef: true}}}
	got := SpecBytes(s)
	if got < 5000+28 || got > 5000+28+specOverhead+64 {
		t.Fatalf("SpecBytes = %d", got)
	}
	real := len(mustMarshal(t, s))
	if got < real {
		t.Fatalf("SpecBytes = %d under the encoded size %d", got, real)
	}
}

func mustMarshal(t *testing.T, s *TaskSpec) []byte {
	t.Helper()
	b, err := proto.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestResultBytesCountsError: a failed result's estimate covers its error's every field,
// the stack of a panic (several KiB) among them.
func TestResultBytesCountsError(t *testing.T) {
	r := &TaskResult{TaskId: make([]byte, 24), Error: &ErrorInfo{Kind: ErrorInfo_PANIC, Function: "f", TaskId: make([]byte, 24),
		Message: "panic: boom", Stack: strings.Repeat("goroutine 1 [running]:\n", 400), NodeId: strings.Repeat("n", 64),
		Causes: []ErrorInfo_Kind{ErrorInfo_OBJECT_LOST, ErrorInfo_ACTOR_DIED}}}
	b, err := proto.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := ResultBytes(r); got < len(b) {
		t.Fatalf("ResultBytes = %d under the encoded size %d", got, len(b))
	}
}
