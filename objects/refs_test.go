package objects

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/ray-go/ray/internal/base/ids"
)

// TestRefTableScenarios drives the table through scripts of events and checks what each
// step releases.
func TestRefTableScenarios(t *testing.T) {
	root := ids.NewRootTaskID()
	ta, tb, tc := ids.ChildTaskID(root, 1), ids.ChildTaskID(root, 2), ids.ChildTaskID(root, 3)
	a, b, c := ids.ReturnID(ta, 1), ids.ReturnID(tb, 1), ids.ReturnID(tc, 1)
	p := ids.PutID(root, 1)

	type step struct {
		do          func(rt *RefTable) Released
		wantValues  []ids.ObjectID
		wantLineage []ids.TaskID
	}
	addLocal := func(id ids.ObjectID) func(*RefTable) Released {
		return func(rt *RefTable) Released { rt.AddLocal(id); return Released{} }
	}
	rm := func(id ids.ObjectID) func(*RefTable) Released {
		return func(rt *RefTable) Released { return rt.RemoveLocal(id) }
	}
	task := func(tk ids.TaskID, ret ids.ObjectID, args ...ids.ObjectID) func(*RefTable) Released {
		return func(rt *RefTable) Released { rt.AddTask(tk, args, nil); return Released{} }
	}
	a2 := ids.ReturnID(ta, 2)
	// submit3 is the submission of a task of three returns, with its first being ReturnID(tk, 1).
	submit3 := func(tk ids.TaskID) func(*RefTable) Released {
		return func(rt *RefTable) Released { rt.Submitted(tk, nil, nil); rt.AddReturns(tk, 3); return Released{} }
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"put then release frees the value, no lineage", []step{
			{do: addLocal(p)},
			{do: rm(p), wantValues: []ids.ObjectID{p}},
		}},
		{"task result released drops value and lineage", []step{
			{do: task(ta, a)},
			{do: addLocal(a)},
			{do: rm(a), wantValues: []ids.ObjectID{a}, wantLineage: []ids.TaskID{ta}},
		}},
		{"two handles: only the last release frees", []step{
			{do: task(ta, a)},
			{do: addLocal(a)},
			{do: addLocal(a)},
			{do: rm(a)},
			{do: rm(a), wantValues: []ids.ObjectID{a}, wantLineage: []ids.TaskID{ta}},
		}},
		{"argument lineage kept while a dependent's lineage lives", []step{
			{do: task(ta, a)},
			{do: addLocal(a)},
			{do: task(tb, b, a)}, // b = f(a)
			{do: addLocal(b)},
			{do: rm(a), wantValues: []ids.ObjectID{a}}, // a's value freed, its lineage kept for b
			{do: rm(b), wantValues: []ids.ObjectID{b}, wantLineage: []ids.TaskID{tb, ta}},
		}},
		{"chain of three collapses from the end", []step{
			{do: task(ta, a)}, {do: addLocal(a)},
			{do: task(tb, b, a)}, {do: addLocal(b)},
			{do: task(tc, c, b)}, {do: addLocal(c)},
			{do: rm(a), wantValues: []ids.ObjectID{a}},
			{do: rm(b), wantValues: []ids.ObjectID{b}},
			{do: rm(c), wantValues: []ids.ObjectID{c}, wantLineage: []ids.TaskID{tc, tb, ta}},
		}},
		{"submitted and completed: one entry per task", []step{
			{do: func(rt *RefTable) Released { rt.AddLocal(p); return Released{} }},
			{do: func(rt *RefTable) Released {
				rt.AddLocal(p)
				rt.Submitted(ta, []ids.ObjectID{p}, nil)
				return Released{}
			}},
			{do: rm(p)}, // the user drops the put; the pending task still holds it
			{do: func(rt *RefTable) Released {
				unref, r := rt.Completed(a, []ids.ObjectID{p})
				if unref {
					t.Error("Completed: the result's handle is still held")
				}
				return r
			}, wantValues: []ids.ObjectID{p}}, // p's value goes, a's lineage still needs it
			{do: rm(a), wantValues: []ids.ObjectID{a}, wantLineage: []ids.TaskID{ta}},
		}},
		{"several returns: the record lives until the last is released (first released first)", []step{
			{do: submit3(ta)},
			{do: rm(a), wantValues: []ids.ObjectID{a}},
			{do: rm(a2), wantValues: []ids.ObjectID{a2}},
			{do: rm(ids.ReturnID(ta, 3)), wantValues: []ids.ObjectID{ids.ReturnID(ta, 3)}, wantLineage: []ids.TaskID{ta}},
		}},
		{"several returns: the first released last", []step{
			{do: submit3(ta)},
			{do: rm(a2), wantValues: []ids.ObjectID{a2}},
			{do: rm(ids.ReturnID(ta, 3)), wantValues: []ids.ObjectID{ids.ReturnID(ta, 3)}},
			{do: rm(a), wantValues: []ids.ObjectID{a}, wantLineage: []ids.TaskID{ta}},
		}},
		{"several returns: a dependent of the second keeps the record", []step{
			{do: submit3(ta)},
			{do: task(tb, b, a2)}, // b = f(second return of ta)
			{do: addLocal(b)},
			{do: rm(a), wantValues: []ids.ObjectID{a}},
			{do: rm(a2), wantValues: []ids.ObjectID{a2}},
			{do: rm(ids.ReturnID(ta, 3)), wantValues: []ids.ObjectID{ids.ReturnID(ta, 3)}},
			{do: rm(b), wantValues: []ids.ObjectID{b}, wantLineage: []ids.TaskID{tb, ta}},
		}},
		{"releasing twice is harmless", []step{
			{do: addLocal(p)},
			{do: rm(p), wantValues: []ids.ObjectID{p}},
			{do: rm(p)},
		}},
		{"put as argument: value kept while task pending", []step{
			{do: addLocal(p)},
			{do: task(ta, a, p)},
			{do: addLocal(p)}, // submitted-task reference
			{do: rm(p)},       // user drops the handle
			{do: addLocal(a)},
			{do: rm(p), wantValues: []ids.ObjectID{p}}, // task finished
			{do: rm(a), wantValues: []ids.ObjectID{a}, wantLineage: []ids.TaskID{ta}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := NewRefTable()
			for i, s := range tt.steps {
				got := s.do(rt)
				if !slices.Equal(got.Values(), s.wantValues) || !slices.Equal(got.Lineage(), s.wantLineage) {
					t.Fatalf("step %d: released values %v lineage %v, want %v %v", i, got.Values(), got.Lineage(), s.wantValues, s.wantLineage)
				}
			}
			if n, l := rt.Len(); n != 0 || l != 0 {
				t.Errorf("table not empty at the end: %d objects, %d lineage records", n, l)
			}
		})
	}
}

func TestMemoryStore(t *testing.T) {
	s := NewMemoryStore()
	id := ids.PutID(ids.NewRootTaskID(), 1)
	if _, _, known := s.Get(id); known {
		t.Fatal("unknown object reported known")
	}
	s.Create(id)
	var got []Value
	s.OnReady(id, func(v Value) { got = append(got, v) })
	if _, ready, known := s.Get(id); ready || !known {
		t.Fatalf("pending object: ready=%v known=%v", ready, known)
	}
	ch := s.Ready(id)
	if !s.Set(id, Value{Data: []byte("x")}) {
		t.Fatal("first Set did not make the object ready")
	}
	if s.Set(id, Value{Data: []byte("y")}) {
		t.Fatal("second Set replaced the value")
	}
	<-ch
	v, ready, _ := s.Get(id)
	if !ready || string(v.Data) != "x" || len(got) != 1 || string(got[0].Data) != "x" {
		t.Fatalf("value %q ready=%v subscribers saw %v", v.Data, ready, got)
	}
	s.OnReady(id, func(v Value) { got = append(got, v) })
	if len(got) != 2 {
		t.Fatal("OnReady on a ready object did not run at once")
	}
	s.Delete(id)
	if s.Len() != 0 {
		t.Fatal("Delete left the object")
	}
}

// TestRefTableConcurrentChains: goroutines build chains of tasks (each task takes the
// previous one's return as its argument) over a table of many shards and release their
// refs in random orders, concurrently. Every value and every lineage record must be
// released exactly once, and the table must end empty: the cross-shard hand-back of
// lineage holds loses and doubles nothing.
func TestRefTableConcurrentChains(t *testing.T) {
	rt := newRefTable(16)
	const goroutines, chains, length = 8, 50, 6
	var mu sync.Mutex
	values := map[ids.ObjectID]int{}
	lineage := map[ids.TaskID]int{}
	record := func(r Released) {
		mu.Lock()
		defer mu.Unlock()
		for _, v := range r.Values() {
			values[v]++
		}
		for _, l := range r.Lineage() {
			lineage[l]++
		}
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range chains {
				root := ids.NewRootTaskID()
				var rets []ids.ObjectID
				var prev []ids.ObjectID
				for i := range length {
					tk := ids.ChildTaskID(root, uint64(i+1))
					for _, a := range prev {
						rt.AddLocal(a) // the submitted task's hold on its argument
					}
					rt.Submitted(tk, prev, nil)
					ret := ids.ReturnID(tk, 1)
					rets = append(rets, ret)
					if len(prev) > 0 {
						_, r := rt.Completed(ret, prev)
						record(r)
					}
					prev = []ids.ObjectID{ret}
				}
				rng.Shuffle(len(rets), func(i, j int) { rets[i], rets[j] = rets[j], rets[i] })
				for _, id := range rets {
					record(rt.RemoveLocal(id))
				}
			}
		}()
	}
	wg.Wait()
	if len(values) != goroutines*chains*length || len(lineage) != goroutines*chains*length {
		t.Fatalf("%d values and %d lineage records released, want %d each", len(values), len(lineage), goroutines*chains*length)
	}
	for id, n := range values {
		if n != 1 {
			t.Fatalf("value %s released %d times", id, n)
		}
	}
	for tk, n := range lineage {
		if n != 1 {
			t.Fatalf("lineage of %s released %d times", tk, n)
		}
	}
	if n, l := rt.Len(); n != 0 || l != 0 {
		t.Fatalf("table not empty: %d objects, %d lineage records", n, l)
	}
}

// TestKeepForLineage: an object kept for lineage keeps its value while a task's lineage
// record holds it, after its last reference went; an ordinary one is freed then.
func TestKeepForLineage(t *testing.T) {
	rt := NewRefTable()
	root := ids.NewRootTaskID()
	kept, plain := ids.PutID(root, 1), ids.PutID(root, 2)
	task := ids.ChildTaskID(root, 1)
	ret := ids.ReturnID(task, 1)
	rt.AddLocal(kept)
	rt.AddLocal(plain)
	rt.KeepForLineage(kept)
	rt.Submitted(task, []ids.ObjectID{kept, plain}, nil)
	r := rt.RemoveLocalAll([]ids.ObjectID{kept, plain})
	if got := r.Values(); len(got) != 1 || got[0] != plain {
		t.Fatalf("freed %v after the last references, want only the ordinary object %v", got, plain)
	}
	r = rt.RemoveLocal(ret) // the task's record goes, and with it the lineage holds
	var freedKept bool
	for _, id := range r.Values() {
		freedKept = freedKept || id == kept
	}
	if !freedKept {
		t.Fatalf("freed %v when the record went, want the kept object among them", r.Values())
	}
	if n, l := rt.Len(); n != 0 || l != 0 {
		t.Fatalf("%d objects and %d records left", n, l)
	}
}

// TestFreeCarriedOutAfterAHoldKeepsTheValue: an owner's free is decided under the
// table's lock (Released) and carried out after it (MemoryStore.RemoveFreedIn). An object
// held again in between (a lineage rerun's argument) keeps its value, which the rerun
// found ready; a free with no hold in between, or after the new hold is dropped in turn,
// removes it; so does the free of a task's result that lost every reference while the
// task ran (Completed).
func TestFreeCarriedOutAfterAHoldKeepsTheValue(t *testing.T) {
	mem, rt := NewOwned()
	root := ids.NewRootTaskID()
	task, reduce := ids.ChildTaskID(root, 1), ids.ChildTaskID(root, 2)
	m := ids.ReturnID(task, 1)
	rt.Submitted(task, nil, nil)
	rt.Submitted(reduce, []ids.ObjectID{m}, nil) // a record holds m: m's record stays
	mem.Set(m, Value{Data: []byte("v")})

	decided := rt.RemoveLocal(m) // the last reference goes: the free is decided
	if got := decided.Values(); len(got) != 1 || got[0] != m {
		t.Fatalf("released %v, want %v", got, m)
	}
	rt.AddLocal(m) // a rerun holds m again, and finds it ready
	if _, _, kept := mem.RemoveFreedIn(m, nil); !kept {
		t.Fatal("a free decided before the hold removed the value")
	}
	if v, ready, _ := mem.Get(m); !ready || string(v.Data) != "v" {
		t.Fatalf("after the stale free: %q ready=%v", v.Data, ready)
	}
	again := rt.RemoveLocal(m) // the rerun's hold goes: freed again, and now removed
	if got := again.Values(); len(got) != 1 || got[0] != m {
		t.Fatalf("released %v, want %v", got, m)
	}
	if v, ready, kept := mem.RemoveFreedIn(m, nil); kept || !ready || string(v.Data) != "v" {
		t.Fatalf("the second free: %q ready=%v kept=%v", v.Data, ready, kept)
	}
	if _, _, known := mem.Get(m); known {
		t.Fatal("the value outlived its free")
	}
	if !rt.HasLineage(task) {
		t.Fatal("m's record went while the reduce's record holds it")
	}

	// A result nothing references when its task completes (here an adopted task's:
	// AddTask takes no reference; another record holds it) is freed then.
	late := ids.ChildTaskID(root, 3)
	ret := ids.ReturnID(late, 1)
	rt.AddTask(late, nil, nil)
	rt.AddTask(ids.ChildTaskID(root, 4), []ids.ObjectID{ret}, nil)
	mem.Set(ret, Value{Data: []byte("late")})
	if unreferenced, _ := rt.Completed(ret, nil); !unreferenced {
		t.Fatal("the result has a reference")
	}
	if _, _, kept := mem.RemoveFreedIn(ret, nil); kept {
		t.Fatal("the unreferenced result was kept")
	}

	// A store of its own (no reference table) removes as Remove does.
	s := NewMemoryStore()
	s.Set(m, Value{Data: []byte("v")})
	if _, ready, kept := s.RemoveFreedIn(m, nil); kept || !ready || s.Len() != 0 {
		t.Fatalf("a plain store's free: ready=%v kept=%v len=%d", ready, kept, s.Len())
	}
}
