package sched

import (
	"fmt"
	"strings"
	"testing"
)

// A queue scenario is a list of steps:
//
//	push ID SHAPE...      enqueue ID demanding SHAPE (P syntax)
//	dispatch MAX AVAIL... Dispatch with max MAX and available AVAIL; want lists the IDs
//	                      started, then "|", then what remains available
//	remove IDS            RemoveFunc for the comma-separated IDS; want is the count
//	backlog               want lists "shape*n" per class
//	len                   want is "Len Classes"
//	any ID                whether Any finds a waiting ID: "true" or "false"
type step struct{ op, want string }

func TestQueue(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"fifo within a class", []step{
			{"push a CPU=1", ""}, {"push b CPU=1", ""}, {"push c CPU=1", ""},
			{"dispatch 0 CPU=2", "a b | {}"},
			{"len", "1 1"},
			{"any a", "false"}, {"any c", "true"},
			{"dispatch 0 CPU=4", "c | {CPU=3}"},
			{"len", "0 0"},
		}},
		{"big task does not block a smaller shape", []step{
			{"push big CPU=4", ""}, {"push s1 CPU=1", ""}, {"push s2 CPU=1", ""},
			{"dispatch 0 CPU=2", "s1 s2 | {}"},
			{"dispatch 0 CPU=3", " | {CPU=3}"},
			{"dispatch 0 CPU=4", "big | {}"},
		}},
		{"class stays FIFO after its head is blocked", []step{
			{"push a CPU=2", ""}, {"push b CPU=1", ""}, {"push c CPU=2", ""}, {"push d CPU=1", ""},
			{"dispatch 0 CPU=3", "a b | {}"},
			{"dispatch 0 CPU=2", "c | {}"},
			{"dispatch 0 CPU=2", "d | {CPU=1}"},
		}},
		{"oldest first across classes", []step{
			{"push g1 GPU=1", ""}, {"push c1 CPU=1", ""}, {"push g2 GPU=1", ""}, {"push c2 CPU=1", ""},
			{"dispatch 0 CPU=1 GPU=1", "g1 c1 | {}"},
			{"dispatch 0 CPU=2 GPU=2", "g2 c2 | {CPU=1, GPU=1}"},
		}},
		{"max limits starts", []step{
			{"push a CPU=1", ""}, {"push b CPU=1", ""}, {"push c CPU=1", ""},
			{"dispatch 2 CPU=8", "a b | {CPU=6}"},
			{"dispatch 1 CPU=8", "c | {CPU=7}"},
		}},
		{"max counts only starts, not blocked heads", []step{
			{"push big CPU=8", ""}, {"push a CPU=1", ""},
			{"dispatch 1 CPU=1", "a | {}"},
		}},
		{"custom resources only where available", []step{
			{"push t tpu=1", ""}, {"push c CPU=1", ""},
			{"dispatch 0 CPU=4", "c | {CPU=3}"},
			{"dispatch 0 CPU=4 tpu=2", "t | {CPU=4, tpu=1}"},
		}},
		{"oversubscribed node starts only zero-resource work", []step{
			{"push a CPU=0.5", ""}, {"push z", ""}, {"push b CPU=1", ""},
			{"dispatch 0 CPU=-1", "z | {CPU=-1}"},
			{"dispatch 0 CPU=0.5", "a | {}"},
		}},
		{"fractional shapes", []step{
			{"push a CPU=0.5", ""}, {"push b CPU=0.5", ""}, {"push c CPU=0.25", ""},
			{"dispatch 0 CPU=1", "a b | {}"},
			{"dispatch 0 CPU=0.3", "c | {CPU=0.05}"},
		}},
		{"remove keeps order", []step{
			{"push a CPU=1", ""}, {"push b CPU=1", ""}, {"push c CPU=1", ""}, {"push g GPU=1", ""},
			{"remove b,g,zz", "2"},
			{"len", "2 1"},
			{"dispatch 0 CPU=8 GPU=8", "a c | {CPU=6, GPU=8}"},
			{"remove a", "0"},
		}},
		{"backlog by class, oldest first", []step{
			{"backlog", ""},
			{"push g1 GPU=1", ""}, {"push c1 CPU=1", ""}, {"push g2 GPU=1", ""}, {"push m CPU=1 memory=100", ""},
			{"backlog", "{GPU=1}*2 {CPU=1}*1 {CPU=1, memory=100}*1"},
			{"dispatch 0 GPU=1", "g1 | {}"},
			{"backlog", "{CPU=1}*1 {GPU=1}*1 {CPU=1, memory=100}*1"},
			{"len", "3 3"},
			{"dispatch 0 CPU=1", "c1 | {}"},
			{"backlog", "{GPU=1}*1 {CPU=1, memory=100}*1"},
			{"len", "2 2"},
		}},
		{"empty queue", []step{
			{"dispatch 0 CPU=1", " | {CPU=1}"},
			{"len", "0 0"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q Queue[string]
			for i, s := range tt.steps {
				if got := runStep(&q, s.op); got != s.want {
					t.Fatalf("step %d %q: got %q, want %q", i, s.op, got, s.want)
				}
			}
		})
	}
}

func runStep(q *Queue[string], op string) string {
	f := strings.Fields(op)
	switch f[0] {
	case "push":
		q.Push(f[1], P(strings.Join(f[2:], " ")))
		return ""
	case "dispatch":
		var max int
		fmt.Sscan(f[1], &max)
		var avail Resources
		for _, kv := range f[2:] { // allow negative amounts, which P rejects
			if rest, ok := strings.CutPrefix(kv, "CPU=-"); ok {
				avail = avail.Sub(P("CPU=" + rest))
			} else {
				avail = avail.Add(P(kv))
			}
		}
		got, left := q.Dispatch(avail, max, nil)
		return strings.Join(got, " ") + " | " + left.String()
	case "remove":
		ids := strings.Split(f[1], ",")
		return fmt.Sprint(q.RemoveFunc(func(v string) bool {
			for _, id := range ids {
				if v == id {
					return true
				}
			}
			return false
		}))
	case "backlog":
		var out []string
		q.Backlog(func(shape Resources, n int) { out = append(out, fmt.Sprintf("%v*%d", shape, n)) })
		return strings.Join(out, " ")
	case "len":
		return fmt.Sprintf("%d %d", q.Len(), q.Classes())
	case "any":
		return fmt.Sprint(q.Any(func(v string) bool { return v == f[1] }))
	}
	panic("bad step " + op)
}

// TestQueueManyClasses checks that empty classes are kept for reuse up to idleClasses and
// forgotten beyond.
func TestQueueManyClasses(t *testing.T) {
	var q Queue[int]
	for i := range 40 {
		q.Push(i, Resources{}.With(CPU, Quantity(i+1)))
	}
	if q.Len() != 40 || q.Classes() != 40 {
		t.Fatalf("len %d classes %d", q.Len(), q.Classes())
	}
	got, _ := q.Dispatch(P("CPU=1"), 0, nil)
	if len(got) != 40 {
		t.Fatalf("dispatched %d", len(got))
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("order %v", got)
		}
	}
	if q.Len() != 0 || q.Classes() != 0 || len(q.classes) != 0 {
		t.Fatalf("after: len %d classes %d kept %d", q.Len(), q.Classes(), len(q.classes))
	}
	for i := range 20 {
		q.Push(i, Resources{}.With(CPU, Quantity(i+1)))
	}
	if got, _ := q.Dispatch(Resources{}.With(CPU, 10), 0, nil); len(got) != 4 || q.Classes() != 16 || len(q.classes) != 16 {
		t.Fatalf("partial dispatch: %v, classes %d kept %d", got, q.Classes(), len(q.classes))
	}
	q = Queue[int]{}
	q.Push(1, P("CPU=1"))
	q.Push(2, P("GPU=1"))
	q.Dispatch(P("CPU=1 GPU=1"), 0, nil)
	if len(q.classes) != 2 || q.Classes() != 0 {
		t.Fatalf("few empty classes should be kept: %d", len(q.classes))
	}
}

// TestQueueReleasesItems: dispatched and removed items are cleared from the buffers.
func TestQueueReleasesItems(t *testing.T) {
	var q Queue[*int]
	x := new(int)
	for range 4 {
		q.Push(x, P("CPU=1"))
	}
	q.Dispatch(P("CPU=1"), 0, nil)
	q.RemoveFunc(func(*int) bool { return true })
	c := q.classes[0]
	for _, it := range c.items[:cap(c.items)] {
		if it.v != nil {
			t.Fatal("queue still references a dispatched or removed item")
		}
	}
}

func TestQueueSteadyStateAllocatesNothing(t *testing.T) {
	var q Queue[int]
	one := P("CPU=1")
	avail := P("CPU=4")
	buf := make([]int, 0, 8)
	run := func() {
		for i := range 4 {
			q.Push(i, one)
		}
		buf, _ = q.Dispatch(avail, 0, buf[:0])
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Fatalf("allocs = %v", n)
	}
}
