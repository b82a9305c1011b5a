package lineage

import (
	"testing"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

type mapPacker map[string][]byte

func (m mapPacker) Append(id string, rec []byte) error { m[id] = rec; return nil }
func (m mapPacker) Remove(id string) bool {
	_, ok := m[id]
	delete(m, id)
	return ok
}

func TestRecorder(t *testing.T) {
	m := mapPacker{}
	r := NewRecorder(m)
	task := ids.ChildTaskID(ids.NewRootTaskID(), 1)
	if err := r.Record(&pb.TaskSpec{TaskId: task[:], Function: "f"}); err != nil {
		t.Fatal(err)
	}
	for id := range m {
		back, err := TaskIDOf(id)
		if err != nil || back != task {
			t.Fatalf("record ID %q parses to %v, %v; want %v", id, back, err, task)
		}
	}
	if len(m) != 1 {
		t.Fatalf("%d records, want 1", len(m))
	}
	r.Drop(task)
	if len(m) != 0 {
		t.Fatalf("%d records after Drop, want 0", len(m))
	}
}
