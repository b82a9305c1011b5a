package objects

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// freed is what one free carried out: the value a RemoveFreedIn (or the combined step)
// took out of the store.
type freed struct {
	id          ids.ObjectID
	data        string
	ready, kept bool
}

// ownedSide is one owner's table driven either through the two steps of each operation
// (MemoryStore then RefTable, as before the combined steps) or through the combined ones.
type ownedSide struct {
	mem      *MemoryStore
	rt       *RefTable
	combined bool
	entries  map[ids.ObjectID]*Entry // the fresh entries given at creation (the caller's hints)
}

func newOwnedSide(combined bool) *ownedSide {
	mem, rt := NewOwned()
	return &ownedSide{mem: mem, rt: rt, combined: combined, entries: map[ids.ObjectID]*Entry{}}
}

func (s *ownedSide) submit(task ids.TaskID, args []ids.ObjectID, spec *pb.TaskSpec) {
	ret := ids.ReturnID(task, 1)
	e := new(Entry)
	s.entries[ret] = e
	if s.combined {
		s.rt.CreateSubmittedIn(task, args, spec, e)
		return
	}
	s.mem.CreateIn(ret, e)
	s.rt.SubmittedIn(task, args, spec, e)
}

func (s *ownedSide) call(task ids.TaskID) {
	ret := ids.ReturnID(task, 1)
	e := new(Entry)
	s.entries[ret] = e
	if s.combined {
		s.rt.CreateLocalIn(ret, e)
		return
	}
	s.mem.CreateIn(ret, e)
	s.rt.AddLocal(ret)
}

func (s *ownedSide) release(id ids.ObjectID) (values []ids.ObjectID, lineage []ids.TaskID, out []freed) {
	var r Released
	done := freed{}
	removed := false
	if s.combined {
		var v Value
		r, v, done.ready, removed = s.rt.RemoveLocalFreeIn(id, s.entries[id])
		done.id, done.data = id, string(v.Data)
	} else {
		r = s.rt.RemoveLocalIn(id, s.entries[id])
	}
	for _, x := range r.Values() {
		if removed && x == id {
			out = append(out, done)
			continue
		}
		v, ready, kept := s.mem.RemoveFreedIn(x, nil)
		out = append(out, freed{id: x, data: string(v.Data), ready: ready, kept: kept})
	}
	return r.Values(), r.Lineage(), out
}

// state is everything observable about ids in the table.
func (s *ownedSide) state(objs []ids.ObjectID, tasks []ids.TaskID) string {
	out := ""
	for _, id := range objs {
		v, ready, known := s.mem.Get(id)
		local, lin, counted := s.rt.Counts(id)
		out += fmt.Sprintf("%x: %q %v %v | %d %d %v\n", id[:6], v.Data, ready, known, local, lin, counted)
	}
	for _, t := range tasks {
		out += fmt.Sprintf("%x lineage %v\n", t[:6], s.rt.HasLineage(t))
	}
	no, nl := s.rt.Len()
	return out + fmt.Sprintf("store %d, table %d objects %d records\n", s.mem.Len(), no, nl)
}

// TestCombinedStepsMatchTheirTwoSteps drives two owners' tables through the same random
// scripts of submissions, actor calls, results, holds, completions and releases: one with
// each operation's two steps (the store's, then the reference table's), the other with
// the combined steps (CreateSubmittedIn, CreateLocalIn, RemoveLocalFreeIn). After every
// operation both must release the same values and records, free the same values with the
// same contents, and hold the same state.
func TestCombinedStepsMatchTheirTwoSteps(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		two, one := newOwnedSide(false), newOwnedSide(true)
		root := ids.NewRootTaskID()
		var tasks []ids.TaskID
		var objs []ids.ObjectID
		for step := 0; step < 60; step++ {
			var what string
			switch op := rng.IntN(10); {
			case op < 3 || len(objs) == 0: // a task, its arguments earlier results
				task := ids.ChildTaskID(root, uint64(len(tasks)+1))
				var args []ids.ObjectID
				for range rng.IntN(3) {
					if len(objs) == 0 {
						break
					}
					a := objs[rng.IntN(len(objs))]
					if _, _, known := two.rt.Counts(a); !known {
						continue // submit holds only what is still counted, as the core does
					}
					args = append(args, a)
				}
				spec := &pb.TaskSpec{Function: "f"}
				for _, s := range []*ownedSide{two, one} {
					for _, a := range args {
						s.rt.AddLocal(a) // the task's own reference to its argument (holdArgs)
					}
					s.submit(task, args, spec)
				}
				tasks = append(tasks, task)
				objs = append(objs, ids.ReturnID(task, 1))
				what = fmt.Sprintf("submit %x args %d", task[:6], len(args))
			case op < 5: // an actor call
				task := ids.ChildTaskID(root, uint64(len(tasks)+1))
				two.call(task)
				one.call(task)
				tasks = append(tasks, task)
				objs = append(objs, ids.ReturnID(task, 1))
				what = fmt.Sprintf("call %x", task[:6])
			case op < 7: // a result arrives
				id := objs[rng.IntN(len(objs))]
				v := Value{Data: fmt.Appendf(nil, "v%d", step)}
				a, b := two.mem.SetIfPresentIn(id, two.entries[id], v), one.mem.SetIfPresentIn(id, one.entries[id], v)
				if a != b {
					t.Fatalf("seed %d step %d: set %x known %v against %v", seed, step, id[:6], a, b)
				}
				what = fmt.Sprintf("set %x", id[:6])
			case op < 8: // a hold taken again (a rerun's argument)
				id := objs[rng.IntN(len(objs))]
				if _, _, known := two.rt.Counts(id); !known {
					continue
				}
				two.rt.AddLocal(id)
				one.rt.AddLocal(id)
				what = fmt.Sprintf("hold %x", id[:6])
			default: // a release
				id := objs[rng.IntN(len(objs))]
				va, la, fa := two.release(id)
				vb, lb, fb := one.release(id)
				if !slices.Equal(va, vb) || !slices.Equal(la, lb) || !slices.Equal(fa, fb) {
					t.Fatalf("seed %d step %d: release %x: two steps released %v %v freed %v; combined %v %v freed %v",
						seed, step, id[:6], va, la, fa, vb, lb, fb)
				}
				what = fmt.Sprintf("release %x", id[:6])
			}
			if a, b := two.state(objs, tasks), one.state(objs, tasks); a != b {
				t.Fatalf("seed %d step %d (%s): state differs\ntwo steps:\n%s\ncombined:\n%s", seed, step, what, a, b)
			}
		}
	}
}

// TestCombinedStepsNeedAnOwnedTable: a reference table made on its own has no store part
// for them to take.
func TestCombinedStepsNeedAnOwnedTable(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("CreateLocalIn on NewRefTable's table did not panic")
		}
	}()
	NewRefTable().CreateLocalIn(ids.ReturnID(ids.NewRootTaskID(), 1), nil)
}
