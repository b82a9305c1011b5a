package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/ray-go/ray"
	"github.com/ray-go/ray/data"
)

var shared context.Context

func TestMain(m *testing.M) {
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(2))
	if err != nil {
		fmt.Fprintln(os.Stderr, "Init:", err)
		os.Exit(1)
	}
	shared = ctx
	code := m.Run()
	if err := ray.Shutdown(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "Shutdown:", err)
		code = 1
	}
	os.Exit(code)
}

// TestPipeline runs the example's pipeline on a small generated input and checks every
// output row against the generator.
func TestPipeline(t *testing.T) {
	ctx, cancel := context.WithTimeout(shared, time.Minute)
	defer cancel()
	const rows = 3000
	in, out := t.TempDir(), t.TempDir()
	written, err := writeInput(ctx, in, rows, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 3 {
		t.Fatalf("writeInput wrote %d files, want 3: %v", len(written), written)
	}

	res, err := pipeline(ctx, []string{in}, out, data.Progress(false))
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for id := int64(0); id < rows; id++ {
		if orderOf(id).Amount >= minAmount {
			want = append(want, id)
		}
	}
	if len(want) == 0 || len(want) == rows {
		t.Fatalf("the generator keeps %d of %d rows: the test would check nothing", len(want), rows)
	}
	if res.InputRows != rows || res.OutputRows != int64(len(want)) {
		t.Fatalf("counts: input %d (want %d), output %d (want %d)", res.InputRows, rows, res.OutputRows, len(want))
	}
	if len(res.Files) == 0 {
		t.Fatal("no files written")
	}
	for _, f := range res.Files {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("a written file: %v", err)
		}
	}

	got, err := data.ReadParquet([]string{out}).TakeAll(ctx, data.Progress(false))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("read back %d rows, want %d", len(got), len(want))
	}
	sort.Slice(got, func(i, j int) bool { return got[i]["order_id"].(int64) < got[j]["order_id"].(int64) })
	for i, r := range got {
		if len(r) != 4 {
			t.Fatalf("row %d has columns %v, want order_id, customer, amount, tax", i, r)
		}
		o := orderOf(want[i])
		if r["order_id"] != o.ID || r["customer"] != o.Customer || r["amount"] != o.Amount || r["tax"] != tax(o.Amount) {
			t.Fatalf("row %d: %v, want order %+v with tax %v", i, r, o, tax(o.Amount))
		}
	}
	if res.Stats == "" || res.Stats[0] == '(' {
		t.Fatalf("Stats: %q", res.Stats)
	}
}
