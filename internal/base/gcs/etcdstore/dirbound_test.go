package etcdstore_test

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
)

// dirSizes adds up the files of an embedded etcd's directory: the write-ahead log's, the
// database file, everything.
func dirSizes(t *testing.T, dir string) (wal, db, all int64) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil // removed meanwhile (a purged WAL file)
		}
		all += info.Size()
		switch {
		case filepath.Base(filepath.Dir(path)) == "wal":
			wal += info.Size()
		case d.Name() == "db":
			db += info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return wal, db, all
}

// TestDirStaysBounded: ~100 MiB written through the write-ahead log (overwriting a few
// keys, history compacted) leave a directory of at most the database file plus three WAL
// segments (two kept, one preallocated; a segment is cut once an entry takes it past
// WALSegmentBytes, so it may run over by one entry) and two small snapshots (doc.go's
// bound) once etcd's purge (every 30 s) has run, when snapshots come often enough that
// the entries after the newest one fit in a segment.
func TestDirStaysBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	e, err := etcdstore.StartEmbedded(ctx, etcdstore.EmbedConfig{Dir: dir, SnapshotCount: 20, DefragEvery: -1, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s := e.Client()
	v := make([]byte, 256<<10)
	var rev int64
	for i := range 400 {
		v[0] = byte(i)
		if rev, err = s.Put(ctx, fmt.Sprintf("k/%d", i%8), v, 0); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			if err := s.Compact(ctx, rev); err != nil {
				t.Fatal(err)
			}
		}
	}
	const walBound = 3 * (etcdstore.WALSegmentBytes + gcs.MaxRequestBytes)
	if wal, _, _ := dirSizes(t, dir); wal <= walBound {
		t.Fatalf("100 MiB written left %d MiB of WAL: the test writes too little to show a bound", wal>>20)
	}
	const snapSlack = 1 << 20 // the snapshot files (no v2 data: a few KiB each)
	var wal, db, all int64
	eventually.True(t, 2*time.Minute, "the WAL purged to its bound", func() bool {
		// A write now and then, as a running cluster makes: etcd purges on a timer.
		if _, err := s.Put(ctx, "tick", []byte("x"), 0); err != nil && ctx.Err() == nil {
			t.Error(err)
		}
		wal, db, all = dirSizes(t, dir)
		return wal <= walBound
	})
	if all > db+walBound+snapSlack {
		t.Fatalf("the directory holds %d MiB (database %d MiB, WAL %d MiB): over the bound", all>>20, db>>20, wal>>20)
	}
}
