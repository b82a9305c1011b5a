package gcs

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ShardedPacker is a set of Packers that share an Owner, each holding the records whose ID
// hashes to it: the pages of a high-volume table (lineage) written by many goroutines at
// once, without one mutex that every Append and Remove meets. A record ID always goes to
// the same shard, so a re-appended ID replaces its earlier copy as in one Packer, and the
// shards' pages are numbered in disjoint ranges under the one owner (FirstSeq), so
// ReadAll of the owner's prefix reads them all.
type ShardedPacker struct {
	shards []*Packer
	mask   uint32
}

// maxPackerShards bounds the shards of a ShardedPacker (page numbers are shard<<48 + n).
const maxPackerShards = 1 << 15

// NewShardedPacker returns n Packers (a power of two) configured as cfg, writing through w.
func NewShardedPacker(w *Writer, cfg PackerConfig, n int) (*ShardedPacker, error) {
	if n < 1 || n > maxPackerShards || n&(n-1) != 0 {
		return nil, fmt.Errorf("gcs: sharded packer: %d shards (want a power of two from 1 to %d)", n, maxPackerShards)
	}
	if cfg.FirstSeq != 0 {
		return nil, errors.New("gcs: sharded packer: FirstSeq is set per shard")
	}
	if cfg.Owner == "" {
		cfg = cfg.withDefaults() // one random owner for every shard
	}
	sp := &ShardedPacker{shards: make([]*Packer, n), mask: uint32(n - 1)}
	for i := range sp.shards {
		c := cfg
		c.FirstSeq = uint64(i) << 48
		p, err := NewPacker(w, c)
		if err != nil {
			return nil, err
		}
		sp.shards[i] = p
	}
	return sp, nil
}

// shard picks the Packer of id by FNV-1a of its first 8 bytes (record IDs such as task
// IDs are random bytes already).
func (sp *ShardedPacker) shard(id string) *Packer {
	h := uint32(2166136261)
	for i := 0; i < len(id) && i < 8; i++ {
		h = (h ^ uint32(id[i])) * 16777619
	}
	return sp.shards[h&sp.mask]
}

// Append records rec under id in id's shard (see Packer.Append).
func (sp *ShardedPacker) Append(id string, rec []byte) error { return sp.shard(id).Append(id, rec) }

// Remove drops id's record (see Packer.Remove).
func (sp *ShardedPacker) Remove(id string) bool { return sp.shard(id).Remove(id) }

// Flush flushes every shard (see Packer.Flush), all at once: their pages share the
// Writer's transactions.
func (sp *ShardedPacker) Flush(ctx context.Context) error { return sp.each(ctx, (*Packer).Flush) }

// Close closes every shard (see Packer.Close).
func (sp *ShardedPacker) Close(ctx context.Context) error { return sp.each(ctx, (*Packer).Close) }

func (sp *ShardedPacker) each(ctx context.Context, f func(*Packer, context.Context) error) error {
	errs := make([]error, len(sp.shards))
	var wg sync.WaitGroup
	for i, p := range sp.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(p, ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Stats sums the shards' counters.
func (sp *ShardedPacker) Stats() PackerStats {
	var s PackerStats
	for _, p := range sp.shards {
		t := p.Stats()
		s.Appended += t.Appended
		s.Removed += t.Removed
		s.Live += t.Live
		s.PagesWritten += t.PagesWritten
		s.PagesDeleted += t.PagesDeleted
		s.PagesDropped += t.PagesDropped
		s.Rewrites += t.Rewrites
		s.Moved += t.Moved
		s.Compacted += t.Compacted
		s.Records += t.Records
		s.RawBytes += t.RawBytes
		s.PackedBytes += t.PackedBytes
	}
	return s
}
