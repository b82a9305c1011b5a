package taskstate

import (
	"fmt"
	"io"
	"testing"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/ids"
)

// report100k is a report of n finished tasks on 4 workers, a tenth of them consumers of
// the one before.
func reportOf(n int) *core.TaskReport {
	r := &core.TaskReport{Total: n}
	t0 := int64(1_700_000_000_000_000_000)
	for i := range n {
		id := ids.NewRootTaskID().String()
		r.Tasks = append(r.Tasks, core.TaskEvent{TaskID: id, Function: "bench.f", State: core.StateFinished, Job: "job1",
			Node: "node-a", Worker: fmt.Sprintf("n/node-a/worker/%d", i%4), Owner: "node-a",
			Submitted: t0 + int64(i)*1000, Ready: t0 + int64(i)*1000, Dispatched: t0 + int64(i)*1000 + 10,
			Started: t0 + int64(i)*1000 + 100, Ended: t0 + int64(i)*1000 + 900})
		if i%10 != 0 {
			r.Edges = append(r.Edges, core.TaskEdge{Producer: r.Tasks[i-1].TaskID, Consumer: id})
		}
	}
	return r
}

func BenchmarkEncodeReport100k(b *testing.B) {
	r := reportOf(100_000)
	for b.Loop() {
		if _, err := EncodeReport(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeReport100k(b *testing.B) {
	enc, _ := EncodeReport(reportOf(100_000))
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		if _, err := DecodeReport(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteTimeline100k(b *testing.B) {
	r := reportOf(100_000)
	for b.Loop() {
		if err := WriteTimeline(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkArchiveForm50k is the archive of a process that keeps 50,000 records or more
// (Archive reads the newest ArchiveRecords), cut to ArchiveBytes: what a clean stop adds.
func BenchmarkArchiveForm50k(b *testing.B) {
	r := reportOf(ArchiveRecords)
	var kept int
	for b.Loop() {
		c := *r
		c.Tasks = append([]core.TaskEvent(nil), r.Tasks...)
		enc, err := archiveForm(&c, "node-a", 1, ArchiveBytes)
		if err != nil {
			b.Fatal(err)
		}
		kept = len(c.Tasks)
		b.SetBytes(int64(len(enc)))
	}
	b.ReportMetric(float64(kept), "records_kept")
}
