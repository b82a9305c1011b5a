package ray_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"runtime"
	"time"

	"github.com/ray-go/ray"
)

func ExampleTaskFilter() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	for i := range 5 {
		_, _ = ray.Get(ctx, Halve.Remote(ctx, ray.V(2*i)))
	}
	_, _ = ray.Get(ctx, Square.Remote(ctx, ray.V(1)))
	// Empty fields match everything; Limit bounds the list, not the total.
	tasks, total, err := ray.ListTasks(ctx, ray.TaskFilter{Function: "example.halve", State: ray.TaskFinished, Limit: 2})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(tasks), total)
	node, _ := ray.NodeID(ctx)
	_, here, _ := ray.ListTasks(ctx, ray.TaskFilter{Node: node[:8]}) // a prefix of a node's ID
	fmt.Println(here)
	// Output:
	// 2 5
	// 6
}

func ExampleTaskInfo() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	_, _ = ray.Get(ctx, Halve.Remote(ctx, ray.V(3)))
	c := CounterClass.Remote(ctx)
	_, _ = ray.Get(ctx, CounterAdd.Remote(ctx, c, ray.V(1)))

	tasks, _, err := ray.ListTasks(ctx, ray.TaskFilter{}) // newest first
	if err != nil {
		log.Fatal(err)
	}
	node, _ := ray.NodeID(ctx)
	for _, t := range tasks {
		fmt.Printf("%s %s attempt=%d actor=%v owner=here:%v timed=%v error=%s %q\n",
			t.Function, t.State, t.Attempt, t.ActorCall, t.OwnerNode == node, !t.Ended.Before(t.Submitted), t.ErrorType, t.Error)
	}
	call := tasks[0] // the actor call: Worker names the actor, Node the node it is on
	fmt.Println(call.Worker == c.ID(), call.Node == node)
	// Output:
	// example.Counter.Add FINISHED attempt=0 actor=true owner=here:true timed=true error= ""
	// example.halve FAILED attempt=0 actor=false owner=here:true timed=true error=APPLICATION "3 is odd"
	// true true
}

func ExampleTaskCount() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	for i := range 3 {
		_, _ = ray.Get(ctx, Halve.Remote(ctx, ray.V(i)))
		_, _ = ray.Get(ctx, Square.Remote(ctx, ray.V(i)))
	}
	counts, err := ray.SummarizeTasks(ctx, ray.TaskFilter{State: ray.TaskFinished})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range counts {
		fmt.Println(c.Function, c.State, c.Count)
	}
	// Output:
	// example.halve FINISHED 2
	// example.square FINISHED 3
}

// A task whose argument is another task's unfinished result waits in TaskPendingArgs.
func ExampleTaskPendingArgs() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	first := Sleep.Options(ray.NumCPUs(0)).Remote(ctx, ray.V(time.Hour))
	second := Sleep.Remote(ctx, first) // waits for first's result
	waiting, _, err := ray.ListTasks(ctx, ray.TaskFilter{State: ray.TaskPendingArgs})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(waiting), waiting[0].Function, waiting[0].State)
	ray.Cancel(ctx, first)
	_, err = ray.Get(ctx, second) // the failure travels on
	fmt.Println(errors.Is(err, ray.ErrCancelled))
	// Output:
	// 1 example.sleep PENDING_ARGS_AVAIL
	// true
}

func ExampleObjectFilter() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	refs := make([]ray.ObjectRef[int], 5)
	for i := range refs {
		refs[i], _ = ray.Put(ctx, i)
	}
	failed := Divide.Remote(ctx, ray.V(1), ray.V(0))
	_, _ = ray.Get(ctx, failed)
	// Empty fields match everything; Limit bounds the list, not the total.
	objs, total, err := ray.ListObjects(ctx, ray.ObjectFilter{State: ray.ObjectReady, RefType: ray.LocalReference, Limit: 2})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(objs), total)
	objs, _, _ = ray.ListObjects(ctx, ray.ObjectFilter{ObjectID: failed.ID()[:12]}) // a prefix of an ID
	fmt.Println(objs[0].ObjectID == failed.ID(), objs[0].State)
	// Output:
	// 2 5
	// true FAILED
}

func ExampleObjectState() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	small := Square.Remote(ctx, ray.V(5))
	_, _ = ray.Get(ctx, small)
	big, _ := ray.Put(ctx, make([]byte, 1<<20)) // over 100 KiB: in the node's store
	node, _ := ray.NodeID(ctx)
	for _, r := range []ray.Ref{small, big} {
		objs, _, err := ray.ListObjects(ctx, ray.ObjectFilter{ObjectID: r.ID()})
		if err != nil {
			log.Fatal(err)
		}
		o := objs[0]
		fmt.Println(o.State, o.RefType, o.Location == "INLINE", o.Location == node, o.OwnerNode == node, o.Size > 0, o.TaskID != "")
	}
	// Output:
	// READY LOCAL_REFERENCE true false true true true
	// READY LOCAL_REFERENCE false true true true true
}

// An object is pending while its task runs.
func ExampleObjectPending() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	r := Sleep.Remote(ctx, ray.V(time.Hour))
	objs, _, err := ray.ListObjects(ctx, ray.ObjectFilter{ObjectID: r.ID()})
	if err != nil {
		log.Fatal(err)
	}
	o := objs[0]
	fmt.Println(o.State == ray.ObjectPending, o.State, o.Size, o.Location == "")
	ray.Cancel(ctx, r)
	_, _ = ray.Get(ctx, r)
	objs, _, _ = ray.ListObjects(ctx, ray.ObjectFilter{ObjectID: r.ID()})
	fmt.Println(objs[0].State == ray.ObjectFailed)
	// Output:
	// true PENDING 0 true
	// true
}

// While this process holds a ref to an object, it is a LocalReference.
func ExampleLocalReference() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	a, _ := ray.Put(ctx, "kept")
	b, _ := ray.Put(ctx, "released")
	b.Release()
	objs, total, err := ray.ListObjects(ctx, ray.ObjectFilter{RefType: ray.LocalReference})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(total, objs[0].ObjectID == a.ID(), objs[0].RefType == ray.LocalReference, objs[0].RefType)
	// Output: 1 true true LOCAL_REFERENCE
}

// The owner of a non-detached actor lists its handle object as an ActorHandleReference
// while any handle to the actor lives.
func ExampleActorHandleReference() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	c := CounterClass.Remote(ctx)
	objs, total, err := ray.ListObjects(ctx, ray.ObjectFilter{RefType: ray.ActorHandleReference})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(total, objs[0].RefType, objs[0].Location)
	runtime.KeepAlive(c)
	// Output: 1 ACTOR_HANDLE INLINE
}

func ExampleObjectCount() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	for i := range 3 {
		_, _ = ray.Put(ctx, make([]byte, 1000+i))
	}
	_, _ = ray.Get(ctx, Divide.Remote(ctx, ray.V(1), ray.V(0)))
	counts, err := ray.SummarizeObjects(ctx, ray.ObjectFilter{})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range counts {
		fmt.Println(c.State, c.RefType, c.Count, c.Bytes > 3000)
	}
	// Output:
	// FAILED LOCAL_REFERENCE 1 false
	// READY LOCAL_REFERENCE 3 true
}

func ExampleObjectInfo() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	good := Tagged.Remote(ctx, ray.V(10)) // attaches "rows=10" to its result
	// A failed task's object is ready, with no size: Err holds the failure.
	bad := Divide.Remote(ctx, ray.V(1), ray.V(0))
	if _, _, err := ray.WaitAny(ctx, []ray.Ref{good, bad}, ray.NumReady(2)); err != nil {
		log.Fatal(err)
	}
	for _, r := range []ray.Ref{good, bad} {
		info, err := ray.RefInfo(ctx, r) // without fetching the value
		if err != nil {
			log.Fatal(err)
		}
		var te *ray.TaskError
		fmt.Printf("%v %v %q %v\n", info.Ready, info.Size > 0, info.Metadata, errors.As(info.Err, &te))
	}
	// Output:
	// true true "rows=10" false
	// true false "" true
}

func ExampleMemoryReport() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2), ray.WithObjectStoreMemory(64<<20))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	for i := 1; i <= 3; i++ {
		r, _ := ray.Put(ctx, make([]byte, i<<20))
		defer r.Release()
	}
	rep, err := ray.Memory(ctx, 2) // with each store's 2 largest objects
	if err != nil {
		log.Fatal(err)
	}
	for _, n := range rep.Nodes { // local mode: one node
		fmt.Println(n.Objects, n.Bytes>>20, len(n.Largest), n.Largest[0].Size>>20, n.Largest[1].Size>>20)
	}
	// Output: 3 6 2 3 2
}

func ExampleNodeMemory() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2), ray.WithObjectStoreMemory(64<<20))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	r, _ := ray.Put(ctx, make([]byte, 4<<20))
	defer r.Release()
	rep, err := ray.Memory(ctx, 0)
	if err != nil {
		log.Fatal(err)
	}
	node, _ := ray.NodeID(ctx)
	n := rep.Nodes[0]
	fmt.Println(n.Node == node, n.Budget>>20, n.Objects, n.Bytes>>20, n.MemoryBytes>>20, n.SpilledObjects, n.SpilledBytes, n.SpillErrors)
	// Output: true 64 1 4 4 0 0 0
}

func ExampleStoredObject() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	r, _ := ray.Put(ctx, make([]float64, 1<<18)) // 2 MiB
	defer r.Release()
	rep, err := ray.Memory(ctx, 1)
	if err != nil {
		log.Fatal(err)
	}
	o := rep.Nodes[0].Largest[0]
	fmt.Println(o.ID == r.ID(), o.Size>>20, o.Owner != "", o.Spilled)
	// Output: true 2 true false
}

func ExampleNode() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2), ray.WithNumGPUs(1), ray.WithObjectStoreMemory(128<<20))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	nodes, err := ray.Nodes(ctx)
	if err != nil {
		log.Fatal(err)
	}
	host, _ := os.Hostname()
	n := nodes[0] // local mode: the node runs in this process
	fmt.Println(n.Role, n.PID == os.Getpid(), n.Hostname == host, n.Address != "", n.Resources["CPU"], n.Resources["GPU"], n.ObjectStoreBytes>>20)
	// Output: local true true true 2 1 128
}

func ExampleRuntimeContext() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2), ray.WithResources(map[string]float64{"accel": 1}))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	driver, err := ray.GetRuntimeContext(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(driver.JobID != "", driver.NodeID != "", driver.TaskID == "", driver.Resources == nil)
	task, err := ray.Get(ctx, Where.Options(ray.NumCPUs(1), ray.Resources(map[string]float64{"accel": 1})).Remote(ctx))
	fmt.Println(task.JobID == driver.JobID, task.TaskID != "", task.Resources, err)
	// Output:
	// true true true true
	// true true map[CPU:1 accel:1] <nil>
}

func ExampleRuntimeStats() {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		log.Fatal(err)
	}
	defer ray.Shutdown(ctx)
	before, _ := ray.Stats(ctx)
	// Division by zero fails every time: with RetryExceptions it is retried twice.
	_, _ = ray.Get(ctx, Divide.Options(ray.MaxRetries(2), ray.RetryExceptions(true)).Remote(ctx, ray.V(1), ray.V(0)))
	after, err := ray.Stats(ctx)
	fmt.Println(after.TasksRetried-before.TasksRetried, after.ObjectsReconstructed, after.MessagesHandled > before.MessagesHandled, err)
	// Output: 2 0 true <nil>
}
