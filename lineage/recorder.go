package lineage

import (
	"fmt"

	"github.com/ray-go/ray/internal/ids"
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

// Record stores the marshalled spec of task.
func (r *Recorder) Record(task ids.TaskID, spec []byte) error {
	if err := r.p.Append(string(task[:]), spec); err != nil {
		return fmt.Errorf("lineage: record task %s: %w", task, err)
	}
	return nil
}

// Drop deletes task's record.
func (r *Recorder) Drop(task ids.TaskID) { r.p.Remove(string(task[:])) }

// TaskIDOf parses a record ID back into a task ID.
func TaskIDOf(recordID string) (ids.TaskID, error) { return ids.TaskIDFromBytes([]byte(recordID)) }
