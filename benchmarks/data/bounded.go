package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/ray-go/ray"
	"github.com/ray-go/ray/data"
)

// payloadBytes is the size of the "blob" column's value in each row of part (c).
const payloadBytes = 1024

// addPayload adds a 1 KiB binary column (the id, then a fixed pattern) to each row.
var payloadFn = data.BatchFunc("databench.payload", func(_ context.Context, b arrow.Record) (arrow.Record, error) {
	ids := b.Column(0).(*array.Int64)
	bld := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
	defer bld.Release()
	bld.Reserve(ids.Len())
	bld.ReserveData(ids.Len() * payloadBytes)
	v := make([]byte, payloadBytes)
	for i := range v {
		v[i] = byte(i * 7)
	}
	for i := 0; i < ids.Len(); i++ {
		binary.LittleEndian.PutUint64(v, uint64(ids.Value(i)))
		bld.Append(v)
	}
	blob := bld.NewArray()
	defer blob.Release()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "blob", Type: arrow.BinaryTypes.Binary},
	}, nil)
	return array.NewRecord(schema, []arrow.Array{ids, blob}, int64(ids.Len())), nil
})

// boundedResult is part (c).
type boundedResult struct {
	StoreBytes     int64     `json:"object_store_bytes"`
	DataBytes      int64     `json:"data_bytes"`
	Rows           int       `json:"rows"`
	Blocks         int       `json:"blocks"`
	WallS          float64   `json:"wall_s"`
	RowsPerS       float64   `json:"rows_per_s"`
	MBPerS         float64   `json:"mb_per_s"`
	Mem            memResult `json:"mem"`
	PeakHeld       int64     `json:"peak_bytes_held"` // from Stats
	Budget         int64     `json:"budget_bytes"`    // from Stats
	MaxStoreBytes  int64     `json:"max_store_memory_bytes"`
	MaxStoreObjs   int64     `json:"max_store_objects"`
	SpilledObjects int64     `json:"spilled_objects"`
	SpilledBytes   int64     `json:"spilled_bytes"`
	Samples        int       `json:"memory_samples"`
	Stats          string    `json:"ray_stats"`
}

var peakRe = regexp.MustCompile(`Peak object store bytes held: (\d+) \(budget (\d+)\)`)

// partC streams a dataset several times the object store through a fresh local runtime
// whose store is storeBytes: Range -> MapBatches(addPayload) -> IterBatches, sampling
// ray.Memory while it runs.
func partC(cfg config) (*boundedResult, error) {
	res := &boundedResult{StoreBytes: cfg.boundedStore, Rows: int(cfg.boundedData / (payloadBytes + 8))}
	res.Blocks = max(1, int(cfg.boundedData/(4<<20))) // blocks of about 4 MiB
	rctx, err := ray.Init(context.Background(), ray.WithObjectStoreMemory(cfg.boundedStore))
	if err != nil {
		return nil, fmt.Errorf("init (store %s): %w", mib(cfg.boundedStore), err)
	}
	defer func() {
		if err := ray.Shutdown(rctx); err != nil {
			logf("c: shutdown: %v", err)
		}
	}()
	ctx, cancel := context.WithTimeout(rctx, cfg.timeout)
	defer cancel()
	sample := func() error {
		rep, err := ray.Memory(ctx, 0)
		if err != nil {
			return err
		}
		res.Samples++
		for _, n := range rep.Nodes {
			res.MaxStoreBytes = max(res.MaxStoreBytes, n.MemoryBytes)
			res.MaxStoreObjs = max(res.MaxStoreObjs, n.Objects)
			res.SpilledObjects = max(res.SpilledObjects, n.SpilledObjects)
			res.SpilledBytes = max(res.SpilledBytes, n.SpilledBytes)
		}
		return nil
	}
	ds := data.Range(res.Rows, data.Parallelism(res.Blocks)).MapBatches(payloadFn)
	p := startProbe()
	start := time.Now()
	var rows, bytes int64
	batches := 0
	for b, err := range ds.IterBatches(ctx, data.BatchSize(4096), data.Progress(cfg.progress)) {
		if err != nil {
			p.finish()
			return nil, err
		}
		rows += b.NumRows()
		blob := b.Column(1).(*array.Binary)
		bytes += int64(len(blob.ValueBytes())) + 8*b.NumRows()
		if batches++; batches%8 == 0 {
			if err := sample(); err != nil {
				p.finish()
				return nil, err
			}
		}
	}
	wall := time.Since(start)
	res.Mem = p.finish()
	if err := sample(); err != nil {
		return nil, err
	}
	if rows != int64(res.Rows) {
		return nil, fmt.Errorf("c: %d rows, want %d", rows, res.Rows)
	}
	res.DataBytes = bytes
	res.WallS = wall.Seconds()
	res.RowsPerS = float64(rows) / wall.Seconds()
	res.MBPerS = float64(bytes) / wall.Seconds() / 1e6
	res.Stats = ds.Stats()
	if m := peakRe.FindStringSubmatch(res.Stats); m != nil {
		res.PeakHeld, _ = strconv.ParseInt(m[1], 10, 64)
		res.Budget, _ = strconv.ParseInt(m[2], 10, 64)
	}
	logf("c: %s through a %s store in %.2f s, peak RSS %s, spilled %d objects", mib(bytes), mib(cfg.boundedStore), wall.Seconds(), mib(res.Mem.Peak), res.SpilledObjects)
	return res, nil
}
