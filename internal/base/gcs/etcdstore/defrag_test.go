package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
)

// fill writes n values of size bytes under prefix until n are written or the store
// refuses one (its error is returned).
func fill(ctx context.Context, s gcs.Store, prefix string, n, size int) (int, error) {
	v := make([]byte, size)
	for i := range n {
		v[0] = byte(i)
		if _, err := s.Put(ctx, fmt.Sprintf("%s%06d", prefix, i), v, 0); err != nil {
			return i, err
		}
	}
	return n, nil
}

// emptyAndCompact deletes prefix and compacts the history to now, so the pages are free.
func emptyAndCompact(t *testing.T, ctx context.Context, s gcs.Store, prefix string) {
	t.Helper()
	ok, rev, err := s.Txn(ctx, nil, []gcs.Op{{Kind: gcs.OpDeletePrefix, Key: prefix}})
	if err != nil || !ok {
		t.Fatalf("delete %s: %v %v", prefix, ok, err)
	}
	if err := s.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
}

// defragOnceFree calls Defrag until it runs (the test fails if it has not within 30 s).
// etcd removes compacted revisions in the background, and bbolt counts the pages they held
// as free only from a later write on (until then older readers may see them): a running
// cluster writes all the time; here a small key is written each round (refused at the
// quota, which is no matter).
func defragOnceFree(t *testing.T, ctx context.Context, e *etcdstore.Embedded, s gcs.Store) etcdstore.DefragResult {
	t.Helper()
	var r etcdstore.DefragResult
	eventually.True(t, 30*time.Second, "a defragmentation to run once the deleted data's pages are free", func() bool {
		if _, err := s.Put(ctx, "tick", []byte("x"), 0); err != nil && !errors.Is(err, gcs.ErrNoSpace) {
			t.Fatal(err)
		}
		var err error
		if r, err = e.Defrag(ctx, false); err != nil {
			t.Fatal(err)
		}
		return r.Ran
	})
	return r
}

// TestDefragShrinksASparseFile: 24 MiB written and deleted leave a file of that size,
// mostly free; a check rewrites it small. A file in use is left alone.
func TestDefragShrinksASparseFile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := etcdstore.StartEmbedded(ctx, etcdstore.EmbedConfig{Dir: t.TempDir(), DefragEvery: -1, DefragMinBytes: 8 << 20, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s := e.Client()
	if _, err := fill(ctx, s, "burst/", 240, 100<<10); err != nil {
		t.Fatal(err)
	}
	if r, err := e.Defrag(ctx, false); err != nil || r.Ran {
		t.Fatalf("a file in use: %+v, %v; want it left alone", r, err)
	}
	emptyAndCompact(t, ctx, s, "burst/")
	r := defragOnceFree(t, ctx, e, s)
	if !r.Ran || r.Before < 20<<20 || r.After > r.Before/4 {
		t.Fatalf("after the burst went: %+v; want a file of >= 20 MiB rewritten to under a quarter", r)
	}
	if _, err := s.Put(ctx, "after", []byte("x"), 0); err != nil {
		t.Fatalf("a write after the defragmentation: %v", err)
	}
}

// TestSpaceAlarmClearsOnceSpaceIsFree: a GCS at its quota refuses writes with ErrNoSpace
// (etcd's NOSPACE alarm, which etcd keeps until someone disarms it); once the data is
// deleted and compacted, the check defragments the file and disarms the alarm, and writes
// succeed again without an operator.
func TestSpaceAlarmClearsOnceSpaceIsFree(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := etcdstore.StartEmbedded(ctx, etcdstore.EmbedConfig{Dir: t.TempDir(), QuotaBytes: 16 << 20, DefragEvery: -1, DefragMinBytes: 4 << 20, AlarmDefragEvery: 100 * time.Millisecond, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s := e.Client()
	n, err := fill(ctx, s, "big/", 1000, 100<<10)
	if !errors.Is(err, gcs.ErrNoSpace) {
		t.Fatalf("wrote %d x 100 KiB into a 16 MiB quota: %v; want gcs.ErrNoSpace", n, err)
	}
	if _, err := s.Put(ctx, "small", []byte("x"), 0); !errors.Is(err, gcs.ErrNoSpace) {
		t.Fatalf("a small write at the quota: %v; want gcs.ErrNoSpace (the alarm holds)", err)
	}
	emptyAndCompact(t, ctx, s, "big/")
	// A rewrite under the alarm may come before etcd has removed the compacted revisions
	// (it does so in the background) and gain too little to disarm; the next one, an
	// AlarmDefragEvery later, gains the rest.
	eventually.True(t, 30*time.Second, "a defragmentation after the data went to disarm the alarm", func() bool {
		return defragOnceFree(t, ctx, e, s).Disarmed
	})
	if _, err := s.Put(ctx, "small", []byte("x"), 0); err != nil {
		t.Fatalf("a write after the alarm was disarmed: %v", err)
	}
}
