package lineage

import (
	"fmt"
	"sync"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// Packer is where records go: gcs.Packer in production, a map in tests. Append and Remove
// must not block on I/O.
type Packer interface {
	Append(id string, rec []byte) error
	Remove(id string) bool
}

// Recorder records and drops lineage records.
type Recorder struct{ p Packer }

// NewRecorder returns a Recorder writing through p.
func NewRecorder(p Packer) *Recorder { return &Recorder{p: p} }

// scratch holds encoding buffers: the packer copies each record, so a buffer is reused.
var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// Record stores spec as its task's lineage record.
func (r *Recorder) Record(spec *pb.TaskSpec) error {
	bp := scratch.Get().(*[]byte)
	*bp = AppendSpec((*bp)[:0], spec)
	err := r.p.Append(string(spec.TaskId), *bp)
	if cap(*bp) <= 64<<10 { // do not keep huge buffers (specs with large inline args)
		scratch.Put(bp)
	}
	if err != nil {
		return fmt.Errorf("lineage: record task %x: %w", spec.TaskId, err)
	}
	return nil
}

// Drop deletes task's record.
func (r *Recorder) Drop(task ids.TaskID) { r.p.Remove(string(task[:])) }

// TaskIDOf parses a record ID back into a task ID.
func TaskIDOf(recordID string) (ids.TaskID, error) { return ids.TaskIDFromBytes([]byte(recordID)) }
