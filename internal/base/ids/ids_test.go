package ids

import "testing"

func TestDerivation(t *testing.T) {
	root := NewRootTaskID()
	tests := []struct {
		name string
		a, b TaskID
		same bool
	}{
		{"same parent and counter", ChildTaskID(root, 1), ChildTaskID(root, 1), true},
		{"different counter", ChildTaskID(root, 1), ChildTaskID(root, 2), false},
		{"different parent", ChildTaskID(root, 1), ChildTaskID(ChildTaskID(root, 1), 1), false},
	}
	for _, tc := range tests {
		if (tc.a == tc.b) != tc.same {
			t.Errorf("%s: equal=%v, want %v", tc.name, tc.a == tc.b, tc.same)
		}
	}
}

func TestObjectIDParts(t *testing.T) {
	task := ChildTaskID(NewRootTaskID(), 7)
	tests := []struct {
		id    ObjectID
		index uint32
		put   bool
	}{
		{ReturnID(task, 1), 1, false},
		{ReturnID(task, 3), 3, false},
		{PutID(task, 1), PutIndexBit | 1, true},
	}
	for _, tc := range tests {
		if tc.id.Task() != task {
			t.Errorf("%v: task %v, want %v", tc.id, tc.id.Task(), task)
		}
		if tc.id.Index() != tc.index || tc.id.IsPut() != tc.put {
			t.Errorf("%v: index %d put %v, want %d %v", tc.id, tc.id.Index(), tc.id.IsPut(), tc.index, tc.put)
		}
		back, err := ParseObjectID(tc.id.String())
		if err != nil || back != tc.id {
			t.Errorf("parse %s: %v %v", tc.id, back, err)
		}
	}
	if _, err := ObjectIDFromBytes([]byte{1, 2}); err == nil {
		t.Error("short object ID accepted")
	}
	if _, err := ParseTaskID("zz"); err == nil {
		t.Error("non-hex task ID accepted")
	}
}

func TestAttemptTaskID(t *testing.T) {
	task := NewRootTaskID()
	if AttemptTaskID(task, 0) != task {
		t.Fatal("the first attempt must derive from the task itself")
	}
	seen := map[TaskID]int32{task: 0}
	for a := int32(1); a <= 5; a++ {
		id := AttemptTaskID(task, a)
		if id != AttemptTaskID(task, a) {
			t.Fatalf("attempt %d: not deterministic", a)
		}
		if prev, dup := seen[id]; dup {
			t.Fatalf("attempts %d and %d share %s", prev, a, id)
		}
		seen[id] = a
	}
}

func TestActorHandleID(t *testing.T) {
	a := NewActorID()
	h := ActorHandleID(a)
	if got, ok := h.HandleOf(); !ok || got != a {
		t.Fatalf("HandleOf(ActorHandleID(%s)) = %s, %v", a, got, ok)
	}
	if !h.IsPut() {
		t.Errorf("a handle object is not a Put object: nothing can recreate it")
	}
	task := NewRootTaskID()
	for _, o := range []ObjectID{ReturnID(task, 1), PutID(task, 1), ReturnID(task, 0)} {
		if _, ok := o.HandleOf(); ok {
			t.Errorf("%s taken for a handle object", o)
		}
	}
}

// TestChildTaskIDsDistinct: a tree of IDs (every parent's first 64 children, four levels,
// and four attempts of each) has no duplicate, children share their parent's Family, and
// the derivation is the same every time (it must be across processes: lineage rebuilds
// tasks by their IDs).
func TestChildTaskIDsDistinct(t *testing.T) {
	seen := map[TaskID]bool{}
	add := func(id TaskID) {
		if seen[id] {
			t.Fatalf("duplicate ID %x", id)
		}
		seen[id] = true
	}
	level := []TaskID{NewRootTaskID(), {}, {0xff, 0xff}}
	for _, r := range level {
		add(r)
	}
	for depth := 0; depth < 3; depth++ {
		var next []TaskID
		for _, p := range level {
			for c := uint64(1); c <= 64; c++ {
				id := ChildTaskID(p, c)
				if id.Family() != p[1] {
					t.Fatalf("Family %d, want the parent's byte 1 %d", id.Family(), p[1])
				}
				if ChildTaskID(p, c) != id {
					t.Fatal("ChildTaskID is not deterministic")
				}
				add(id)
				for a := int32(1); a <= 4; a++ {
					add(AttemptTaskID(id, a))
				}
				next = append(next, id)
			}
		}
		level = next
	}
	if len(seen) < 3*64*64*64 {
		t.Fatalf("%d IDs", len(seen))
	}
}

// TestChildTaskIDAllocates nothing: it runs once per task and actor call.
func TestChildTaskIDAllocates(t *testing.T) {
	parent := NewRootTaskID()
	var sink TaskID
	if n := testing.AllocsPerRun(100, func() { sink = ChildTaskID(parent, 7) }); n != 0 {
		t.Fatalf("ChildTaskID: %v allocations per call, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { sink = AttemptTaskID(parent, 2) }); n != 0 {
		t.Fatalf("AttemptTaskID: %v allocations per call, want 0", n)
	}
	_ = sink
}

func BenchmarkChildTaskID(b *testing.B) {
	parent := NewRootTaskID()
	for i := range b.N {
		_ = ChildTaskID(parent, uint64(i))
	}
}
