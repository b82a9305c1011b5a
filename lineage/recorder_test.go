package lineage

import (
	"testing"

	"github.com/ray-go/ray/internal/ids"
)

type mapPacker map[string][]byte

func (m mapPacker) Append(id string, rec []byte) { m[id] = rec }
func (m mapPacker) Remove(id string)             { delete(m, id) }

func TestRecorder(t *testing.T) {
	m := mapPacker{}
	r := NewRecorder(m)
	task := ids.ChildTaskID(ids.NewRootTaskID(), 1)
	r.Record(task, []byte("spec"))
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
