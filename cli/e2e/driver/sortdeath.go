package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"syscall"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/ray-go/ray"
	"github.com/ray-go/ray/data"
)

// The sortdeath check: gensort-like records (a 10-byte key, a 90-byte value) made by map
// tasks on the cluster's nodes, sorted, and read back by the driver; one of the job's
// worker processes is killed with SIGKILL once the sorted output has begun to arrive (the
// map outputs live in the nodes' stores, the reduces still run), and the output must still
// be complete, in order, with the input's checksum.

const (
	sortKeyLen = 10
	sortValLen = 90
)

// sortRecord fills key and val with record i: a key from a 64-bit mix of i (random-like,
// with duplicates only by chance) and a value that holds i and filler.
func sortRecord(i int64, key, val []byte) {
	x := uint64(i)*0x9E3779B97F4A7C15 + 0x5047
	x ^= x >> 31
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 29
	binary.BigEndian.PutUint64(key, x)
	binary.BigEndian.PutUint16(key[8:], uint16(x>>13))
	binary.BigEndian.PutUint64(val, uint64(i))
	for k := 8; k < len(val); k++ {
		val[k] = byte('A' + (i+int64(k))%26)
	}
}

// sortSum is the order-independent checksum of one record (valsort's is a sum of CRCs too).
func sortSum(key, val []byte) uint64 {
	return uint64(crc32.ChecksumIEEE(key))<<32 | uint64(crc32.ChecksumIEEE(val))
}

var sortSchema = arrow.NewSchema([]arrow.Field{
	{Name: "key", Type: arrow.BinaryTypes.Binary},
	{Name: "value", Type: arrow.BinaryTypes.Binary},
}, nil)

// sortGen turns a block of Range ids into records.
var sortGen = data.BatchFunc("e2e.sortdeath.gen", func(_ context.Context, b arrow.Record) (arrow.Record, error) {
	ids, ok := b.Column(0).(*array.Int64)
	if !ok {
		return nil, fmt.Errorf("sortdeath: column 0 is %s, want int64", b.Column(0).DataType())
	}
	kb := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
	vb := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
	defer kb.Release()
	defer vb.Release()
	key, val := make([]byte, sortKeyLen), make([]byte, sortValLen)
	for i := 0; i < ids.Len(); i++ {
		sortRecord(ids.Value(i), key, val)
		kb.Append(key)
		vb.Append(val)
	}
	k, v := kb.NewArray(), vb.NewArray()
	defer k.Release()
	defer v.Release()
	return array.NewRecord(sortSchema, []arrow.Array{k, v}, int64(ids.Len())), nil
})

// sortDeath runs the check. n records in blocks sorted through the cluster; victim is the
// worker process killed.
func sortDeath(ctx context.Context, nodes []ray.Node, out map[string]any) error {
	const n, blocks = 400_000, 16 // 40 MB of records, blocks of 2.5 MB (in the stores)
	var want uint64
	key, val := make([]byte, sortKeyLen), make([]byte, sortValLen)
	for i := int64(0); i < n; i++ {
		sortRecord(i, key, val)
		want += sortSum(key, val)
	}
	victim := nodes[len(nodes)-1]
	ds := data.Range(n, data.Parallelism(blocks)).MapBatches(sortGen).Sort([]string{"key"})
	var rows, batches, afterKill int64
	var sum uint64
	var prev []byte
	killed := false
	for b, err := range ds.IterBatches(ctx, data.BatchSize(4096), data.Prefetch(1)) {
		if err != nil {
			return fmt.Errorf("sortdeath: reading the sorted output after %d rows (worker process of node %s killed: %v): %w", rows, victim.ID, killed, err)
		}
		keys, ok1 := b.Column(0).(*array.Binary)
		vals, ok2 := b.Column(1).(*array.Binary)
		if !ok1 || !ok2 {
			return fmt.Errorf("sortdeath: the output's columns are %s and %s, want binary", b.Column(0).DataType(), b.Column(1).DataType())
		}
		for i := 0; i < keys.Len(); i++ {
			k := keys.Value(i)
			if prev != nil && bytes.Compare(prev, k) > 0 {
				return fmt.Errorf("sortdeath: row %d is out of order (%x after %x)", rows, k, prev)
			}
			prev = append(prev[:0], k...)
			sum += sortSum(k, vals.Value(i))
			rows++
		}
		batches++
		if killed {
			afterKill++
		}
		if !killed {
			// The first sorted rows are here: the maps have ended, their outputs are in
			// the nodes' stores, and the reduces run. Kill one node's worker process now.
			if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
				return fmt.Errorf("sortdeath: kill worker process %d: %w", victim.PID, err)
			}
			killed = true
		}
	}
	out["sortdeath"] = map[string]any{"victim": victim.ID, "rows": rows, "want_rows": n,
		"sum": fmt.Sprintf("%x", sum), "want_sum": fmt.Sprintf("%x", want),
		"batches": batches, "batches_after_kill": afterKill, "killed": killed}
	return nil
}
