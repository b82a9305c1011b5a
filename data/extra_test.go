package data

import (
	"bytes"
	"strings"
	"testing"
)

func TestStatsFormat(t *testing.T) {
	ctx := timeout(t)
	d := Range(100, Parallelism(4)).MapBatches(double).Limit(50)
	if _, err := d.TakeAll(ctx, Progress(true)); err != nil {
		t.Fatal(err)
	}
	st := d.Stats()
	for _, want := range []string{
		"Operator 1 ReadRange->MapBatches(test.double): ",
		" tasks executed, ",
		" blocks produced in ",
		"* Remote wall time: ", " min, ", " max, ", " mean, ", " total\n",
		"* Remote cpu time: ",
		"* Output num rows per block: ",
		"* Output size bytes per block: ",
		"* Total time overall: ",
	} {
		if !strings.Contains(st, want) {
			t.Errorf("stats lack %q:\n%s", want, st)
		}
	}
}

func TestTargetBlockSize(t *testing.T) {
	ctx := timeout(t)
	// 1000 ids are 8000 bytes: with 800-byte blocks the read makes 10 tasks, not 1.
	d := Range(1000, Parallelism(1), TargetMaxBlockSize(800))
	if _, err := d.Materialize(ctx); err != nil {
		t.Fatal(err)
	}
	if st := d.Stats(); !strings.Contains(st, "ReadRange: 10 tasks executed, 10 blocks produced") {
		t.Fatalf("stats:\n%s", st)
	}
}

func TestShow(t *testing.T) {
	ctx := timeout(t)
	var buf bytes.Buffer
	if err := Range(10).Map(withName).Fprint(ctx, &buf, 2); err != nil {
		t.Fatal(err)
	}
	want := "{id: 0, name: \"n0\", score: 0}\n{id: 1, name: \"n1\", score: 0.5}\n"
	if buf.String() != want {
		t.Fatalf("Fprint:\n%s\nwant\n%s", buf.String(), want)
	}
}

func TestInfeasibleResources(t *testing.T) {
	ctx := timeout(t)
	_, err := Range(3).Map(plus100, Resources(map[string]float64{"no-such-thing": 1})).TakeAll(ctx)
	if err == nil || !strings.Contains(err.Error(), "Map(test.plus100)") {
		t.Fatalf("a map asking for resources no node has: %v", err)
	}
	t.Log(err)
}

// TestTinyBudget: a budget smaller than one block still makes progress (one task at a time),
// through Union, Limit and a chain of unfused operators.
func TestTinyBudget(t *testing.T) {
	ctx := timeout(t)
	d := Range(50, Parallelism(10)).Map(plus100).MapBatches(double, NumCPUs(0.5)).Union(Range(30, Parallelism(5)).Map(plus100)).Filter(isEven, NumCPUs(2))
	rows, err := d.TakeAll(ctx, ObjectStoreBudget(1), MaxTasksInFlight(3))
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for i := int64(100); i < 150; i++ {
		want = append(want, 2*i)
	}
	for i := int64(100); i < 130; i += 2 {
		want = append(want, i)
	}
	got := ids(t, rows)
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("row %d: %d, want %d", i, got[i], want[i])
		}
	}
}
