package data

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/ray-go/ray"
)

// withGetAllHook makes IterBatches report the size of each GetAll it makes.
func withGetAllHook(f func(n int)) Option { return func(o *options) { o.getAllHook = f } }

func TestIterBatches(t *testing.T) {
	ctx := timeout(t)
	d := Range(1000, Parallelism(7)) // blocks of 142 or 143 rows
	var mu sync.Mutex
	var gets []int
	var got []int64
	var sizes []int64
	for b, err := range d.IterBatches(ctx, BatchSize(64), Prefetch(3), withGetAllHook(func(n int) {
		mu.Lock()
		gets = append(gets, n)
		mu.Unlock()
	})) {
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, b.NumRows())
		got = append(got, b.Column(0).(*array.Int64).Int64Values()...)
	}
	if !reflect.DeepEqual(got, seq(0, 1000)) {
		t.Fatalf("rows out of order or missing: %v", got)
	}
	for i, s := range sizes {
		if i < len(sizes)-1 && s != 64 || i == len(sizes)-1 && s != 1000%64 {
			t.Fatalf("batch sizes: %v (want 64 each, the last %d)", sizes, 1000%64)
		}
	}
	total := 0
	for _, n := range gets {
		if n < 1 || n > 3 {
			t.Fatalf("a GetAll of %d blocks with Prefetch(3): %v", n, gets)
		}
		total += n
	}
	if total != 7 {
		t.Fatalf("GetAll calls fetched %d blocks, want 7: %v", total, gets)
	}

	// Prefetch(1): one block at a time. Stopping early is fine too.
	gets = nil
	n := 0
	for _, err := range d.IterBatches(ctx, BatchSize(100), Prefetch(1), withGetAllHook(func(n int) { gets = append(gets, n) })) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 4 {
			break
		}
	}
	for _, g := range gets {
		if g != 1 {
			t.Fatalf("Prefetch(1) made a GetAll of %d", g)
		}
	}

	var rows int
	for r, err := range Range(10).IterRows(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if r["id"].(int64) != int64(rows) {
			t.Fatalf("row %d: %v", rows, r)
		}
		rows++
	}
	if rows != 10 {
		t.Fatalf("IterRows gave %d rows", rows)
	}
}

func TestCountFromMetadata(t *testing.T) {
	ctx := timeout(t)
	d := Range(1000, Parallelism(5)).Filter(isEven)
	n, err := d.Count(ctx)
	if err != nil || n != 500 {
		t.Fatalf("Count: %d, %v", n, err)
	}
	if !strings.Contains(d.Stats(), "5 tasks executed") {
		t.Errorf("Count should run the plan (Filter changes the count): %s", d.Stats())
	}
	// Row-preserving plans are counted without running.
	m := Range(77).Map(plus100).SelectColumns("id")
	if n, err := m.Count(ctx); err != nil || n != 77 {
		t.Fatalf("Count: %d, %v", n, err)
	}
	if !strings.Contains(m.Stats(), "not been executed") {
		t.Errorf("Count of a row-preserving plan ran it: %s", m.Stats())
	}
}

func TestMaterialize(t *testing.T) {
	ctx := timeout(t)
	slowCalls.Store(0)
	m, err := Range(100, Parallelism(4)).MapBatches(slowID).Materialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slowCalls.Load() != 4 {
		t.Fatalf("materialize ran %d tasks", slowCalls.Load())
	}
	for i := 0; i < 2; i++ {
		rows, err := m.Map(plus100).TakeAll(ctx)
		if err != nil || !reflect.DeepEqual(ids(t, rows), seq(100, 200)) {
			t.Fatalf("reading a materialized dataset: %v %v", err, rows)
		}
	}
	if slowCalls.Load() != 4 {
		t.Fatalf("consuming a materialized dataset re-ran upstream work (%d calls)", slowCalls.Load())
	}
	if n, err := m.Count(ctx); err != nil || n != 100 {
		t.Fatalf("Count: %d %v", n, err)
	}
	if ex := m.Map(plus100).Explain(); !strings.Contains(ex, "InputData[4 blocks] -> Map[test.plus100]") {
		t.Errorf("plan over materialized blocks: %s", ex)
	}
}

func TestSplit(t *testing.T) {
	ctx := timeout(t)
	d := Range(1000, Parallelism(8)).Map(plus100)
	parts, err := d.Split(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	// Disjoint and covering, each part run in a task (Datasets travel as values).
	var all []int64
	for i, p := range parts {
		got, err := ray.Get(ctx, sumDataset.Remote(ctx, ray.V(p)))
		if err != nil {
			t.Fatalf("part %d in a task: %v", i, err)
		}
		if len(got) == 0 {
			t.Errorf("part %d is empty", i)
		}
		all = append(all, got...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	if !reflect.DeepEqual(all, seq(100, 1100)) {
		t.Fatalf("parts do not cover the dataset exactly once: %d rows", len(all))
	}
	// Equal: 1000/3 = 333 rows each, blocks cut by tasks.
	parts, err = Range(1000, Parallelism(8)).Split(ctx, 3, Equal())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for i, p := range parts {
		rows, err := p.TakeAll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 333 {
			t.Errorf("Equal part %d has %d rows", i, len(rows))
		}
		if n, _ := p.Count(ctx); n != 333 {
			t.Errorf("Equal part %d counts %d rows", i, n)
		}
		for _, id := range ids(t, rows) {
			if seen[id] {
				t.Fatalf("row %d in two parts", id)
			}
			seen[id] = true
		}
	}
	// A lazy (not materialized) dataset also runs inside a task.
	got, err := ray.Get(ctx, sumDataset.Remote(ctx, ray.V(Range(10).Filter(isEven))))
	if err != nil || !reflect.DeepEqual(got, []int64{0, 2, 4, 6, 8}) {
		t.Fatalf("lazy dataset in a task: %v %v", got, err)
	}
}

// A Map that returns a nil Row fails and says why (the rows became all-null rows, or
// vanished while Count still counted them); a Row without columns is still a row.
func TestMapNilAndEmptyRows(t *testing.T) {
	ctx := timeout(t)
	_, err := Range(6, Parallelism(2)).Map(nilEvens).TakeAll(ctx)
	if err == nil || !strings.Contains(err.Error(), "test.nilEvens") || !strings.Contains(err.Error(), "returned a nil Row") || !strings.Contains(err.Error(), "Filter") {
		t.Fatalf("a nil Row: %v", err)
	}
	d := Range(5, Parallelism(2)).Map(noColumns)
	rows, err := d.TakeAll(ctx)
	n, err2 := d.Count(ctx)
	if err != nil || err2 != nil || len(rows) != 5 || n != 5 || len(rows[0]) != 0 {
		t.Fatalf("rows without columns: %v (%v), Count %d (%v)", rows, err, n, err2)
	}
}

// Split without Equal balances whole blocks by rows when they differ by a row or more: it
// left the last part empty (1000, 1000 and 1001 rows gave 2000, 1001 and 0).
func TestSplitBalancesUnevenBlocks(t *testing.T) {
	ctx := timeout(t)
	for _, c := range []struct {
		rows, blocks, n int
		want            []int64
	}{
		{3000, 3, 3, []int64{1000, 1000, 1000}},
		{3001, 3, 3, []int64{1000, 1000, 1001}},
		{20000, 3, 3, []int64{6666, 6667, 6667}},
		{20000, 7, 7, []int64{2857, 2857, 2857, 2857, 2857, 2857, 2858}},
		{10, 3, 3, []int64{3, 3, 4}},
		{1000, 8, 3, []int64{375, 250, 375}},
	} {
		parts, err := Range(c.rows, Parallelism(c.blocks)).Split(ctx, c.n)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]int64, len(parts))
		for i, p := range parts {
			if got[i], err = p.Count(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Range(%d, Parallelism(%d)).Split(%d): parts of %v rows, want %v", c.rows, c.blocks, c.n, got, c.want)
		}
	}
	// Blocks of very different sizes: every part still gets one.
	d := FromItems([]Row{{"id": int64(1)}, {"id": int64(2)}}).Union(Range(100))
	parts, err := d.Split(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range parts {
		if n, err := p.Count(ctx); err != nil || n == 0 {
			t.Errorf("part %d of a small block and a large one: %d rows, %v", i, n, err)
		}
	}
}

func TestActorPool(t *testing.T) {
	ctx := timeout(t)
	setups.Store(0)
	d := Range(40, Parallelism(20)).MapBatches(tagByActor, ActorPool(1, 3))
	rows, err := d.TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ids(t, rows), seq(0, 40)) {
		t.Fatalf("rows: %v", rows)
	}
	actors := map[int64]bool{}
	for _, r := range rows {
		actors[r["actor"].(int64)] = true
	}
	if len(actors) < 2 {
		t.Fatalf("the pool did not grow under load: %d actor(s) used", len(actors))
	}
	// Setup runs once per actor: as many times as the pool had actors, and each actor
	// that tagged rows ran it.
	created := 0
	for _, op := range d.stats.Load().ops {
		created = max(created, op.actors)
	}
	if created > 3 || int(setups.Load()) != created || len(actors) > created {
		t.Fatalf("setup ran %d times; the pool had %d actors, %d of them tagged rows", setups.Load(), created, len(actors))
	}
	if st := d.Stats(); !strings.Contains(st, "MapBatches(test.tagByActor): 20 tasks executed") || !strings.Contains(st, "* Actors used: ") {
		t.Errorf("stats:\n%s", st)
	}
}

// TestBackpressure streams 320 MiB (160 blocks of 2 MiB) through a 32 MiB object store: the
// executor keeps the bytes it holds within its budget (25% of the store) and nothing spills.
// It starts on an empty store: what the tests before left (and spilled) is not its own.
func TestBackpressure(t *testing.T) {
	emptyStore(t)
	// A bound for a hang, not a speed check: 160 tasks writing 2 MiB each, CPU-bound (0.8 s
	// unloaded, 17 s under -race on a shared CPU at load 9, past 30 s at load 17).
	ctx, cancel := context.WithTimeout(shared, 3*time.Minute)
	defer cancel()
	const blocks = 160
	d := Range(blocks, Parallelism(blocks)).MapBatches(grow)
	start := time.Now()
	var rows int64
	for b, err := range d.IterBatches(ctx, BatchSize(blockFloats), Prefetch(2)) {
		if err != nil {
			t.Fatal(err)
		}
		rows += b.NumRows()
	}
	if rows != blocks*blockFloats {
		t.Fatalf("rows: %d", rows)
	}
	st := d.stats.Load()
	budget := int64(storeBytes / 4)
	if st.budget != budget {
		t.Fatalf("budget %d, want 25%% of the store (%d)", st.budget, budget)
	}
	if st.peakBytes > budget || st.peakBytes < 2<<20 {
		t.Fatalf("peak bytes held %d, budget %d", st.peakBytes, budget)
	}
	rep, err := ray.Memory(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range rep.Nodes {
		if n.SpilledBytes != 0 {
			t.Errorf("node %s spilled %d bytes", n.Node, n.SpilledBytes)
		}
	}
	t.Logf("320 MiB in %v, peak held %.1f MiB of a %.0f MiB budget", time.Since(start), float64(st.peakBytes)/(1<<20), float64(budget)/(1<<20))
}

// TestSlowConsumerBoundsTheQueue: with a consumer slower than the tasks, the executor keeps
// at most one block more than it runs tasks ahead of the consumer (streaming output
// backpressure), far below what the byte budget alone would allow.
func TestSlowConsumerBoundsTheQueue(t *testing.T) {
	ctx := timeout(t)
	const blocks, tasks = 24, 2
	const budget = 24 << 20 // room for 12 blocks of 2 MiB
	d := Range(blocks, Parallelism(blocks)).MapBatches(grow)
	var rows int64
	for b, err := range d.IterBatches(ctx, BatchSize(blockFloats), Prefetch(1), MaxTasksInFlight(tasks), ObjectStoreBudget(budget)) {
		if err != nil {
			t.Fatal(err)
		}
		rows += b.NumRows()
		time.Sleep(15 * time.Millisecond)
	}
	if rows != blocks*blockFloats {
		t.Fatalf("rows: %d", rows)
	}
	st := d.stats.Load()
	// Held: the block being consumed, the next one, and the running tasks' estimates (each
	// at most a block once the first output is known).
	const block = blockFloats * 8
	if st.peakBytes > (tasks+2)*block+block/2 {
		t.Fatalf("peak bytes held %.1f MiB: more than %d blocks of 2 MiB ahead of a slow consumer", float64(st.peakBytes)/(1<<20), tasks+2)
	}
	t.Logf("peak held %.1f MiB (budget %d MiB)", float64(st.peakBytes)/(1<<20), budget>>20)
}

func TestStreamingSplit(t *testing.T) {
	ctx := timeout(t)
	its, err := Range(200, Parallelism(10)).Map(plus100).StreamingSplit(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	a := idsOfSplit.Remote(ctx, ray.V(its[0]))
	b := idsOfSplit.Remote(ctx, ray.V(its[1]))
	ga, err := ray.Get(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	gb, err := ray.Get(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	all := append(append([]int64(nil), ga...), gb...)
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	if !reflect.DeepEqual(all, seq(100, 300)) {
		t.Fatalf("the consumers did not see every row once: %d and %d rows", len(ga), len(gb))
	}
	for _, g := range [][]int64{ga, gb} {
		if !sort.SliceIsSorted(g, func(i, j int) bool { return g[i] < g[j] }) {
			t.Fatalf("a consumer's rows are out of order: %v", g)
		}
	}
}

// TestActorPoolLeavesCPUsForUpstream: a pool whose min actors would take every CPU of the
// cluster (4 actors of 1 CPU on the 4-CPU test cluster) while read tasks are still to run.
// Actors hold their CPUs while alive, so without the executor's reservation the read tasks
// may never get a CPU and the pipeline hangs (the second case hung in both runs tried
// without it; the first did not hang in those runs); the pool reserves CPUs only while one
// stays free for each
// unfinished task operator (the other actors reserve none, their calls counted in the
// executor's task limit).
func TestActorPoolLeavesCPUsForUpstream(t *testing.T) {
	for _, tc := range []struct {
		name     string
		min, max int
		ds       func(pool Option) *Dataset
	}{
		{"pool takes every CPU", 4, 4, func(pool Option) *Dataset {
			return Range(200, Parallelism(40)).MapBatches(tagByActor, pool)
		}},
		{"two pools and a task map", 2, 3, func(pool Option) *Dataset {
			return Range(120, Parallelism(24)).MapBatches(tagByActor, pool).MapBatches(double).MapBatches(tagByActor, ActorPool(2, 2), BatchSize(1000))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(shared, 20*time.Second)
			defer cancel()
			d := tc.ds(ActorPool(tc.min, tc.max))
			n, err := d.Count(ctx)
			if err != nil {
				t.Fatalf("%v (a hang here means the pool's actors hold every CPU)", err)
			}
			if want := map[string]int64{"pool takes every CPU": 200, "two pools and a task map": 120}[tc.name]; n != want {
				t.Fatalf("%d rows, want %d", n, want)
			}
			if st := d.Stats(); !strings.Contains(st, "* Actors used: ") {
				t.Errorf("stats:\n%s", st)
			}
		})
	}
}
