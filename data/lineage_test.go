package data

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/array"

	"github.com/ray-go/ray"
)

// TestLostBlocksRecreatedByLineage: a materialized dataset larger than the object store
// spills; every spill file is then corrupted. Reading the dataset again recreates the lost
// blocks by running the tasks that made them (the core's lineage reconstruction), and every
// row comes back right: nothing reruns the pipeline, and nothing reads wrong bytes.
func TestLostBlocksRecreatedByLineage(t *testing.T) {
	lostBlocksRecreated(t, func(ds *Dataset) *Dataset { return ds })
}

// TestLostExchangeOutputsRecreated: the same after an all-to-all exchange, whose reduce
// tasks read the map outputs through refs nested in their argument: the reduce's lineage
// record keeps the map tasks' records, so a reduce output lost after the exchange ended
// (its map outputs released by then) is recreated, maps first.
func TestLostExchangeOutputsRecreated(t *testing.T) {
	lostBlocksRecreated(t, func(ds *Dataset) *Dataset { return ds.RandomShuffle(Seed(7)) })
}

func lostBlocksRecreated(t *testing.T, op func(*Dataset) *Dataset) {
	ctx, cancel := context.WithTimeout(shared, 5*time.Minute) // an exchange spills: slow under -race (175 s at load 9-10)
	defer cancel()
	const blocks, rowsPerBlock = 24, 256 << 10 // 24 blocks of 2 MiB: 48 MiB through a 32 MiB store
	const n = blocks * rowsPerBlock
	ds, err := op(Range(n, Parallelism(blocks))).Materialize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	spill := filepath.Join(clusterDir, "spill")
	var corrupted int
	err = filepath.WalkDir(spill, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".zst") {
			return err
		}
		// The store deletes the spill files of objects freed meanwhile (the exchange's map
		// outputs, once the reduces have read them): a file listed may be gone.
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		b[len(b)/2] ^= 0xff
		f, err := os.OpenFile(path, os.O_WRONLY, 0) // not O_CREATE: a file deleted since stays deleted
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		corrupted++
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if corrupted == 0 {
		t.Fatalf("48 MiB of blocks through a %d MiB store left no spill file in %s", storeBytes>>20, spill)
	}
	before, err := ray.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var sum, rows int64
	for b, err := range ds.IterBatches(ctx, BatchSize(64<<10)) {
		if err != nil {
			t.Fatalf("reading a dataset whose spilled blocks were corrupted: %v", err)
		}
		ids := b.Column(0).(*array.Int64)
		for i := 0; i < ids.Len(); i++ {
			sum += ids.Value(i)
		}
		rows += b.NumRows()
		b.Release()
	}
	if rows != n || sum != int64(n)*(n-1)/2 {
		t.Fatalf("read %d rows summing to %d, want %d rows summing to %d", rows, sum, n, int64(n)*(n-1)/2)
	}
	after, err := ray.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := after.ObjectsReconstructed - before.ObjectsReconstructed; got < 1 {
		t.Fatalf("%d corrupted spill files, %d blocks recreated", corrupted, got)
	}
	t.Logf("%d spilled blocks corrupted, %d recreated by lineage", corrupted, after.ObjectsReconstructed-before.ObjectsReconstructed)
}
