package ray

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/assembly/node"
	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// gcsState reads what etcd holds for lineage and the object table.
func gcsState(t *testing.T, ctx context.Context, n *node.Node) (lineage map[string][]byte, objects map[string]bool) {
	t.Helper()
	if err := n.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	lineage, _, err := gcs.ReadAll(ctx, n.GCS(), gcs.LineagePrefix)
	if err != nil {
		t.Fatal(err)
	}
	kvs, _, err := n.GCS().List(ctx, gcs.ObjectsPrefix)
	if err != nil {
		t.Fatal(err)
	}
	objects = map[string]bool{}
	for _, kv := range kvs {
		rest := strings.TrimPrefix(kv.Key, gcs.ObjectsPrefix)
		objects[rest[strings.LastIndexByte(rest, '/')+1:]] = true // objects/<node>/<id>
	}
	return lineage, objects
}

func taskOf(t *testing.T, r Ref) string {
	t.Helper()
	id, err := ids.ParseObjectID(r.ID())
	if err != nil {
		t.Fatal(err)
	}
	tid := id.Task()
	return string(tid[:])
}

// TestRecordsAppearAndGoAway checks the GCS side of objects on real embedded etcd: every
// task's spec is in the lineage table and every object kept outside its owner is in the
// object table while referenced, and both are deleted when the refs go away.
func TestRecordsAppearAndGoAway(t *testing.T) {
	ctx, err := Init(context.Background(), WithNumCPUs(2))
	if err != nil {
		t.Fatal(err)
	}
	defer Shutdown(ctx)
	n := nodeOf(ctx)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	xs := big.Remote(ctx, V(1<<18)) // 2 MiB: lives in the store shard
	total := sumAll.Remote(ctx, xs)
	if _, err := Get(ctx, total); err != nil {
		t.Fatal(err)
	}
	lin, objs := gcsState(t, ctx, n)
	for _, r := range []Ref{xs, total} {
		if _, ok := lin[taskOf(t, r)]; !ok {
			t.Errorf("no lineage record for %v", r)
		}
	}
	if !objs[xs.ID()] {
		t.Errorf("no object table record for the large object %s; have %v", xs.ID(), objs)
	}
	if objs[total.ID()] {
		t.Errorf("the small result %s is in the object table; small values stay with their owner", total.ID())
	}

	// xs's value may go once only the dependent's lineage needs it; its lineage stays.
	xs.Release()
	eventually.AfterGC(t, 10*time.Second, "the large object to leave the object table", func() bool {
		_, objs := gcsState(t, ctx, n)
		return !objs[xs.ID()]
	})
	if lin, _ := gcsState(t, ctx, n); lin[taskOf(t, xs)] == nil {
		t.Fatal("the producer's lineage was dropped while a dependent's lineage still needs it")
	}
	total.Release()
	eventually.AfterGC(t, 10*time.Second, "both lineage records to be deleted", func() bool {
		lin, _ := gcsState(t, ctx, n)
		return len(lin) == 0
	})

	// The same through the garbage collector: refs dropped without Release.
	func() {
		for i := 0; i < 20; i++ {
			r := square.Remote(ctx, V(i))
			if _, err := Get(ctx, r); err != nil {
				t.Fatal(err)
			}
			p, err := Put(ctx, make([]byte, 200<<10))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Get(ctx, sumBytes.Remote(ctx, p)); err != nil {
				t.Fatal(err)
			}
		}
	}()
	eventually.AfterGC(t, 10*time.Second, "dropped refs to be collected", func() bool {
		lin, objs := gcsState(t, ctx, n)
		o, l := n.Core.Refs().Len()
		return len(lin) == 0 && len(objs) == 0 && o == 0 && l == 0 && n.Core.Objects().Len() == 0
	})
}

var sumBytes = Task1("test.sumBytes", func(_ context.Context, b []byte) (int, error) {
	s := 0
	for _, x := range b {
		s += int(x)
	}
	return s, nil
})

func TestInitAndShutdown(t *testing.T) {
	tests := []struct {
		name string
		opts []InitOption
		env  string
		want string
	}{
		// Nothing listens on ports 1 and 2: joining fails, naming the address and what to do
		// (WithInsecure: straight to the GCS; without credentials Init stops before, saying so).
		{"RAY_ADDRESS", []InitOption{WithInsecure()}, "127.0.0.1:2", "GCS at 127.0.0.1:2 is unreachable (is `rayctl start` running there?)"},
		{"WithAddress", []InitOption{WithAddress("127.0.0.1:1")}, "127.0.0.1:2", "127.0.0.1:1"},
		// Ray's forms that ray-go does not take say what to give instead.
		{"RAY_ADDRESS=auto", nil, "auto", `address "auto" (Ray's "find the running cluster") is not supported: set RAY_ADDRESS (or WithAddress) to HOST:PORT of the head's GCS`},
		{"ray://", nil, "ray://127.0.0.1:10001", `a URL (Ray Client's ray://...) is not supported: a driver joins the GCS directly: set RAY_ADDRESS`},
		{"negative CPUs", []InitOption{WithNumCPUs(-1)}, "", "CPU"},
		{"CPU as a custom resource", []InitOption{WithResources(map[string]float64{"CPU": 1})}, "", "WithNumCPUs"},
		{"negative store", []InitOption{WithObjectStoreMemory(-5)}, "", "object store"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(AddressEnv, tc.env)
			ctx, err := Init(context.Background(), tc.opts...)
			if err == nil {
				Shutdown(ctx)
				t.Fatal("Init succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}

	t.Run("Shutdown removes what Init created", func(t *testing.T) {
		ctx, err := Init(context.Background(), WithNumCPUs(1))
		if err != nil {
			t.Fatal(err)
		}
		dir := nodeOf(ctx).Dir()
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("session directory: %v", err)
		}
		r := square.Remote(ctx, V(3))
		if v, err := Get(ctx, r); err != nil || v != 9 {
			t.Fatalf("Get: %v %v", v, err)
		}
		if err := Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("session directory left behind: %v", err)
		}
		if err := Shutdown(ctx); err != nil {
			t.Fatalf("second Shutdown: %v", err)
		}
		if _, err := Get(ctx, square.Remote(ctx, V(2))); !errors.Is(err, ErrShutdown) {
			t.Fatalf("Remote after Shutdown: %v", err)
		}
		if _, err := Put(ctx, 1); !errors.Is(err, ErrShutdown) {
			t.Fatalf("Put after Shutdown: %v", err)
		}
		// GetActor and Kill too (they said "gcs: store closed").
		if _, err := GetActor(ctx, accountClass, "someone"); !errors.Is(err, ErrShutdown) {
			t.Fatalf("GetActor after Shutdown: %v", err)
		}
		if err := Kill(ctx, accountClass.Remote(ctx, V("x"), AtMostOnce()), true); !errors.Is(err, ErrShutdown) {
			t.Fatalf("Kill after Shutdown: %v", err)
		}
	})

	t.Run("an object larger than the object store is refused, from Put or a task", func(t *testing.T) {
		ctx, err := Init(context.Background(), WithNumCPUs(1), WithObjectStoreMemory(1<<20))
		if err != nil {
			t.Fatal(err)
		}
		defer Shutdown(ctx)
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if _, err := Put(ctx, make([]byte, 2<<20)); !errors.Is(err, ErrObjectTooLarge) || !strings.Contains(err.Error(), "WithObjectStoreMemory") {
			t.Fatalf("oversized Put: %v", err)
		}
		if _, err := Put(ctx, make([]byte, 512<<10)); err != nil {
			t.Fatalf("a Put within the budget: %v", err)
		}
		// The same rule for a task's result (it used to be accepted and held over the
		// budget): the task fails, at its first attempt (retrying gives the same size).
		retried := nodeOf(ctx).Core.Stats().Retried.Load()
		_, err = Get(ctx, big.Options(MaxRetries(3)).Remote(ctx, V(256<<10))) // 2 MiB of int64
		var te *TaskError
		if !errors.Is(err, ErrObjectTooLarge) || !errors.As(err, &te) || !strings.Contains(err.Error(), "WithObjectStoreMemory") {
			t.Fatalf("a task returning 2 MiB into a 1 MiB store: %v", err)
		}
		if n := nodeOf(ctx).Core.Stats().Retried.Load(); n != retried {
			t.Errorf("the task was retried %d times", n-retried)
		}
		if v, err := Get(ctx, big.Remote(ctx, V(64<<10))); err != nil || len(v) != 64<<10 {
			t.Fatalf("a result within the budget: %d values, %v", len(v), err)
		}
		// And for an actor method's.
		h := blobberClass.Remote(ctx)
		if _, err := Get(ctx, blobberMake.Remote(ctx, h, V(2<<20))); !errors.Is(err, ErrObjectTooLarge) {
			t.Fatalf("an actor method returning 2 MiB into a 1 MiB store: %v", err)
		}
		if b, err := Get(ctx, blobberMake.Remote(ctx, h, V(300<<10))); err != nil || len(b) != 300<<10 {
			t.Fatalf("an actor method's result within the budget: %d bytes, %v", len(b), err)
		}
	})

	t.Run("a directory given is kept", func(t *testing.T) {
		dir := t.TempDir()
		ctx, err := Init(context.Background(), WithNumCPUs(1), WithDir(dir))
		if err != nil {
			t.Fatal(err)
		}
		if err := Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("given directory removed: %v", err)
		}
	})
}

type blobber struct{}

var (
	blobberClass = Actor("test.Blobber", func() *blobber { return &blobber{} })
	blobberMake  = Method1(blobberClass, "Make", func(_ *blobber, _ context.Context, n int) ([]byte, error) { return make([]byte, n), nil })
)

var depthTask *Func1[int, int]

func init() {
	depthTask = Task1("test.depth", func(ctx context.Context, n int) (int, error) {
		if n == 0 {
			return 0, nil
		}
		v, err := Get(ctx, depthTask.Remote(ctx, V(n-1)))
		return v + 1, err
	})
}

// TestNestedChainOnOneCPU: every level holds the node's only CPU while it waits for the
// next; only CPU lending in Get lets the chain finish.
func TestNestedChainOnOneCPU(t *testing.T) {
	ctx, err := Init(context.Background(), WithNumCPUs(1))
	if err != nil {
		t.Fatal(err)
	}
	defer Shutdown(ctx)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	refs := []ObjectRef[int]{depthTask.Remote(ctx, V(6)), depthTask.Remote(ctx, V(6))}
	vals, err := GetAll(ctx, refs)
	if err != nil || vals[0] != 6 || vals[1] != 6 {
		t.Fatalf("nested chains on one CPU: %v, %v", vals, err)
	}
}

var (
	incTask    = Task1("test.inc", func(_ context.Context, x int) (int, error) { return x + 1, nil })
	sleepNoCPU = Task1("test.sleepNoCPU", func(_ context.Context, ms int) (int, error) {
		time.Sleep(time.Duration(ms) * time.Millisecond)
		return ms, nil
	}).Options(NumCPUs(0))
	twoWaitsTask = Task1("test.twoWaits", func(ctx context.Context, x int) (int, error) {
		// Goroutine b waits for a task that needs a CPU only after 150 ms; goroutine a, 20 ms
		// later, for a quick one. a's wait ends first: the task must still lend its CPU
		// while b waits.
		var wg sync.WaitGroup
		var a, b int
		var ea, eb error
		wg.Add(2)
		go func() {
			defer wg.Done()
			b, eb = Get(ctx, incTask.Remote(ctx, sleepNoCPU.Remote(ctx, V(150))))
		}()
		go func() {
			defer wg.Done()
			time.Sleep(20 * time.Millisecond)
			a, ea = Get(ctx, incTask.Remote(ctx, V(x)))
		}()
		wg.Wait()
		return a + b, errors.Join(ea, eb)
	})
)

// TestConcurrentWaitsOfATaskLendItsCPU: a task whose goroutines wait at once (through its
// ctx) lends its CPU until the last wait ends. The end of the first took it back while the
// other still waited, and the other's child then waited for that CPU for ever.
func TestConcurrentWaitsOfATaskLendItsCPU(t *testing.T) {
	ctx, err := Init(context.Background(), WithNumCPUs(1))
	if err != nil {
		t.Fatal(err)
	}
	defer Shutdown(ctx)
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	v, err := Get(ctx, twoWaitsTask.Remote(ctx, V(1)))
	if err != nil || v != 2+151 {
		t.Fatalf("a task whose two goroutines wait at once on one CPU: %v, %v (want %d)", v, err, 2+151)
	}
}

// TestSpillBeyondStoreBudget: live data four times the object store budget; the store
// spills to disk and every value reads back exactly.
func TestSpillBeyondStoreBudget(t *testing.T) {
	ctx, err := Init(context.Background(), WithNumCPUs(2), WithObjectStoreMemory(8<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer Shutdown(ctx)
	const n, elems = 16, 256 << 10 // 16 objects of 2 MiB
	var refs []ObjectRef[[]int64]
	for i := range n {
		v := make([]int64, elems)
		for k := range v {
			v[k] = int64(i*elems + k)
		}
		r, err := Put(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, r)
	}
	// Objects made by tasks spill too.
	refs = append(refs, big.Remote(ctx, V(elems)))
	for i, r := range refs {
		v, err := Get(ctx, r)
		if err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		base := int64(i * elems)
		if i == n {
			base = 0
		}
		if len(v) != elems || v[0] != base || v[elems-1] != base+elems-1 {
			t.Fatalf("object %d read back wrong", i)
		}
	}
	// Spilling runs off the request path: wait for the store to be back under budget.
	stats := func() *pb.StoreStatsReply {
		res, err := nodeOf(ctx).System().Root.RequestFuture(nodeOf(ctx).Store(), &pb.StoreStats{}, 5*time.Second).Result()
		if err != nil {
			t.Fatal(err)
		}
		return res.(*pb.StoreStatsReply)
	}
	deadline := time.Now().Add(60 * time.Second)
	for stats().MemoryBytes > 8<<20 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	files, _ := filepath.Glob(filepath.Join(nodeOf(ctx).Dir(), "spill", "*.zst"))
	if st := stats(); st.MemoryBytes > 8<<20 || len(files) < n/2 {
		t.Fatalf("%d spill files for 34 MiB in an 8 MiB store (%v)", len(files), st)
	}
	// The memory report sees it too.
	rep, err := Memory(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	nm := rep.Nodes[0]
	if nm.Budget != 8<<20 || nm.Objects != n+1 || nm.MemoryBytes > 8<<20 || nm.SpilledObjects < n/2 || nm.Bytes != nm.MemoryBytes+nm.SpilledBytes ||
		len(nm.Largest) != 3 || nm.Largest[0].Size < 2<<20 || nm.Largest[0].Owner == "" {
		t.Fatalf("memory report: %+v", nm)
	}
	// Read back again, now that most values are on disk: restored, checked, exact.
	for i, r := range refs[:n] {
		v, err := Get(ctx, r)
		if err != nil || len(v) != elems || v[7] != int64(i*elems+7) {
			t.Fatalf("object %d after spilling: %v", i, err)
		}
	}
}

// TestPutReleaseLoopBaseline: 100,000 puts whose refs are dropped leave the owner's memory
// store and reference table, the object store, the spill directory and etcd's object
// table as they were.
func TestPutReleaseLoopBaseline(t *testing.T) {
	ctx, err := Init(context.Background(), WithNumCPUs(2), WithObjectStoreMemory(2<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer Shutdown(ctx)
	n := nodeOf(ctx)
	c := n.Core
	memBefore := c.Objects().Len()
	objsBefore, _ := c.Refs().Len()
	large := make([]byte, 300<<10) // over the inline limit: goes to the object store
	var window []ObjectRef[[]byte] // the last 10 large objects stay alive: 3 MiB, so some spill
	for i := range 100_000 {
		var r ObjectRef[[]byte]
		if i%500 == 0 {
			large[0] = byte(i)
			r, err = Put(ctx, large)
		} else {
			r, err = Put(ctx, []byte{byte(i)})
		}
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		if i%10_000 == 0 { // read some back, including large ones that may be spilled
			if v, err := Get(ctx, r); err != nil || v[0] != byte(i) {
				t.Fatalf("get %d: %v", i, err)
			}
		}
		if i%500 == 0 {
			window = append(window, r)
			if len(window) > 10 {
				window[0].Release()
				window = window[1:]
			}
			continue
		}
		r.Release()
	}
	if st, err := Memory(ctx, 0); err != nil || st.Nodes[0].SpilledObjects+st.Nodes[0].MemoryBytes/int64(len(large)) < 10 {
		t.Fatalf("memory report with 10 large objects alive: %+v, %v", st, err)
	}
	for _, r := range window {
		r.Release()
	}
	if got := c.Objects().Len(); got != memBefore {
		t.Errorf("memory store holds %d objects, %d before", got, memBefore)
	}
	if got, _ := c.Refs().Len(); got != objsBefore {
		t.Errorf("reference table holds %d objects, %d before", got, objsBefore)
	}
	stats := func() *pb.StoreStatsReply {
		res, err := n.System().Root.RequestFuture(n.Store(), &pb.StoreStats{}, 5*time.Second).Result()
		if err != nil {
			t.Fatal(err)
		}
		return res.(*pb.StoreStatsReply)
	}
	eventually.AfterGC(t, 10*time.Second, "an empty object store and spill directory", func() bool {
		files, _ := filepath.Glob(filepath.Join(n.Dir(), "spill", "*"))
		st := stats()
		return st.Objects == 0 && st.Bytes == 0 && len(files) == 0
	})
	if _, objects := gcsState(t, ctx, n); len(objects) != 0 {
		t.Errorf("etcd object table holds %d records", len(objects))
	}
}

// TestSpillFileOfAnotherObject: a spill file that is valid in itself but holds another
// object (copied over this one's) is a lost object too, never the other object's bytes:
// before, Get returned them with no error, for Put objects and task results alike. The
// Put object reads as ErrObjectLost naming it and saying its file holds another object;
// the task's result is recreated from lineage; the objects whose files were copied read
// right.
func TestSpillFileOfAnotherObject(t *testing.T) {
	ctx, err := Init(context.Background(), WithNumCPUs(2), WithObjectStoreMemory(4<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer Shutdown(ctx)
	const elems = 256 << 10 // 2 MiB
	filled := func(v int64) []int64 {
		xs := make([]int64, elems)
		for i := range xs {
			xs[i] = v
		}
		return xs
	}
	t1 := big.Remote(ctx, V(elems)) // 0, 1, 2, ...
	t2 := plusOne.Remote(ctx, t1)   // 1, 2, 3, ...: the same size, other bytes
	p1, err := Put(ctx, filled(7))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := Put(ctx, filled(9))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Get(ctx, t2); err != nil {
		t.Fatal(err)
	}
	// Two more objects push the four out to disk.
	var more []ObjectRef[[]int64]
	for range 2 {
		r, err := Put(ctx, make([]int64, elems))
		if err != nil {
			t.Fatal(err)
		}
		more = append(more, r)
	}
	eventually.True(t, 30*time.Second, "the four objects to be spilled", func() bool {
		rep, err := Memory(ctx, 100)
		if err != nil {
			return false
		}
		spilled := map[string]bool{}
		for _, n := range rep.Nodes {
			for _, o := range n.Largest {
				spilled[o.ID] = o.Spilled
			}
		}
		return spilled[t1.ID()] && spilled[t2.ID()] && spilled[p1.ID()] && spilled[p2.ID()]
	})
	spill := filepath.Join(nodeOf(ctx).Dir(), "spill")
	copyOver := func(from, to string) {
		t.Helper()
		b, err := os.ReadFile(spillFileOf(spill, from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(spillFileOf(spill, to), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	copyOver(p2.ID(), p1.ID())
	copyOver(t2.ID(), t1.ID())

	v, err := Get(ctx, p1)
	if !errors.Is(err, ErrObjectLost) || !strings.Contains(err.Error(), p1.ID()) || !strings.Contains(err.Error(), "holds another object") {
		t.Fatalf("a Put object whose spill file holds another object: %v (first value %v), want ErrObjectLost naming it", err, v[:min(1, len(v))])
	}
	if v, err := Get(ctx, p2); err != nil || len(v) != elems || v[0] != 9 || v[elems-1] != 9 {
		t.Fatalf("the Put object whose file was copied: %v", err)
	}
	before, err := Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := Get(ctx, t1); err != nil || len(v) != elems || v[0] != 0 || v[elems-1] != elems-1 {
		t.Fatalf("a task's object whose spill file holds another object: %v (first value %v), want it recreated", err, v[:min(1, len(v))])
	}
	after, err := Stats(ctx)
	if n := after.ObjectsReconstructed - before.ObjectsReconstructed; err != nil || n != 1 {
		t.Errorf("%d objects recreated, want 1", n)
	}
	if v, err := Get(ctx, t2); err != nil || len(v) != elems || v[0] != 1 || v[elems-1] != elems {
		t.Fatalf("the task's object whose file was copied: %v", err)
	}
	runtime.KeepAlive(more)
}

// TestCorruptSpillFile: a spill file altered on disk is detected by its checksum. An object
// a task made is then recreated from lineage (the task runs again, same ID, same value); an
// object made by Put has no task to run again and reads as ErrObjectLost naming it.
func TestCorruptSpillFile(t *testing.T) {
	ctx, err := Init(context.Background(), WithNumCPUs(2), WithObjectStoreMemory(4<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer Shutdown(ctx)
	const elems = 256 << 10 // 2 MiB
	made := big.Remote(ctx, V(elems))
	if _, err := Get(ctx, made); err != nil {
		t.Fatal(err)
	}
	put, err := Put(ctx, make([]int64, elems))
	if err != nil {
		t.Fatal(err)
	}
	// Two more objects push both out to disk.
	var more []ObjectRef[[]int64]
	for range 2 {
		r, err := Put(ctx, make([]int64, elems))
		if err != nil {
			t.Fatal(err)
		}
		more = append(more, r)
	}
	spill := filepath.Join(nodeOf(ctx).Dir(), "spill")
	corrupt := func(id string) {
		t.Helper()
		var path string
		deadline := time.Now().Add(30 * time.Second)
		for {
			if path = spillFileOf(spill, id); path != "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("object %s was not spilled", id)
			}
			time.Sleep(10 * time.Millisecond)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0xff
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	corrupt(made.ID())
	corrupt(put.ID())
	before, err := Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v, err := Get(ctx, made)
	if err != nil || len(v) != elems || v[elems-1] != elems-1 {
		t.Fatalf("a task's object with a corrupt spill file: %v (want it recreated)", err)
	}
	after, err := Stats(ctx)
	if n := after.ObjectsReconstructed - before.ObjectsReconstructed; err != nil || n != 1 {
		t.Errorf("%d objects recreated, want 1", n)
	}
	_, err = Get(ctx, put)
	if !errors.Is(err, ErrObjectLost) || !strings.Contains(err.Error(), put.ID()) {
		t.Fatalf("a Put object with a corrupt spill file: %v, want ErrObjectLost naming it", err)
	}
	runtime.KeepAlive(more)

	// A chain: b = plusOne(a), then a's handle is released (its value is freed, its lineage
	// kept for b). b's spill file is corrupted: recreating b first recreates a.
	a := big.Remote(ctx, V(elems))
	b := plusOne.Remote(ctx, a)
	if _, err := Get(ctx, b); err != nil {
		t.Fatal(err)
	}
	a.Release()
	for range 2 {
		r, err := Put(ctx, make([]int64, elems))
		if err != nil {
			t.Fatal(err)
		}
		more = append(more, r)
	}
	corrupt(b.ID())
	before, _ = Stats(ctx)
	v, err = Get(ctx, b)
	if err != nil || len(v) != elems || v[0] != 1 || v[elems-1] != elems {
		t.Fatalf("an object whose argument was freed and whose spill file is corrupt: %v (want it recreated)", err)
	}
	after, _ = Stats(ctx)
	if n := after.ObjectsReconstructed - before.ObjectsReconstructed; n != 2 {
		t.Errorf("%d objects recreated, want 2 (the freed argument, then the object)", n)
	}

	// The same with the argument's ref inside a value (Ray Data's reduce tasks read their
	// inputs so): the task's lineage keeps the nested object's lineage too, and recreating
	// d first recreates c.
	c := big.Remote(ctx, V(elems))
	d := plusOneBoxed.Remote(ctx, V(refBox{R: c}))
	if _, err := Get(ctx, d); err != nil {
		t.Fatal(err)
	}
	cid, err := ids.ParseObjectID(c.ID())
	if err != nil {
		t.Fatal(err)
	}
	c.Release()
	// The task's own handle to c (decoded from its argument) goes with a collection.
	eventually.AfterGC(t, 10*time.Second, "the nested argument's last reference to go", func() bool {
		l, _, _ := nodeOf(ctx).Core.Refs().Counts(cid)
		return l == 0
	})
	for range 2 {
		r, err := Put(ctx, make([]int64, elems))
		if err != nil {
			t.Fatal(err)
		}
		more = append(more, r)
	}
	corrupt(d.ID())
	before, _ = Stats(ctx)
	v, err = Get(ctx, d)
	if err != nil || len(v) != elems || v[0] != 1 || v[elems-1] != elems {
		t.Fatalf("an object whose nested argument was freed and whose spill file is corrupt: %v (want it recreated)", err)
	}
	after, _ = Stats(ctx)
	if n := after.ObjectsReconstructed - before.ObjectsReconstructed; n != 2 {
		t.Errorf("%d objects recreated, want 2 (the freed nested argument, then the object)", n)
	}
	runtime.KeepAlive(more)
}

// refBox carries a ref inside a value.
type refBox struct{ R ObjectRef[[]int64] }

var plusOneBoxed = Task1("test.plusOneBoxed", func(ctx context.Context, b refBox) ([]int64, error) {
	xs, err := Get(ctx, b.R)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(xs))
	for i, x := range xs {
		out[i] = x + 1
	}
	return out, nil
})

// TestReleaseWakesItsWaiters: a Get or Wait blocked on a pending ref that another
// goroutine releases returns (Get: ErrObjectLost; Wait: the ref counts as ready, as for a
// Wait that starts after the release). Both waited until their ctx ended, or for ever.
func TestReleaseWakesItsWaiters(t *testing.T) {
	ctx := timeout(t)
	for _, how := range []string{"Get", "Wait"} {
		r := sleepNoCPU.Remote(ctx, V(3000))
		done := make(chan error, 1)
		go func() {
			if how == "Get" {
				_, err := Get(ctx, r)
				done <- err
				return
			}
			ready, _, err := Wait(ctx, []ObjectRef[int]{r})
			if err == nil && len(ready) != 1 {
				err = errors.New("Wait returned no ready ref")
			}
			done <- err
		}()
		time.Sleep(100 * time.Millisecond) // the waiter blocks
		r.Release()
		select {
		case err := <-done:
			if how == "Get" && !errors.Is(err, ErrObjectLost) || how == "Wait" && err != nil {
				t.Fatalf("%s of a ref released while it waited: %v", how, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s of a ref released while it waited still waits 10 s later", how)
		}
	}
}

// goroutinesIn counts the goroutines whose stacks name fn.
func goroutinesIn(fn string) int {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			n++
		}
	}
	return n
}

// TestShutdownStopsTheGossipLoop: a runtime's Shutdown ends its cluster's gossip loop,
// which looked at the stopped system only at its next tick (an hour): each Init and
// Shutdown in a process left a goroutine and the cluster it held (~5 MiB).
func TestShutdownStopsTheGossipLoop(t *testing.T) {
	const loop = "(*Gossiper).gossipLoop"
	before := goroutinesIn(loop)
	ctx, err := Init(context.Background(), WithNumCPUs(1))
	if err != nil {
		t.Fatal(err)
	}
	if n := goroutinesIn(loop); n != before+1 {
		t.Fatalf("%d gossip loops with a runtime more, %d before: the test looks for the wrong function", n, before)
	}
	if err := Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 10*time.Second, "the runtime's gossip loop ended", func() bool { return goroutinesIn(loop) == before })
}

// spillFileOf is the spill file of object id in the spill directory dir ("" if there is
// none): a shard names each write <id>-<n>.zst, and keeps one file per object.
func spillFileOf(dir, id string) string {
	files, _ := filepath.Glob(filepath.Join(dir, id+"-*.zst"))
	if len(files) != 1 {
		return ""
	}
	return files[0]
}
