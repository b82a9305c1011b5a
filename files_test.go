package ray

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFilesPrivate: what a local cluster writes (its session directory, the embedded
// GCS's data, spill files) is for its user only: directories 0700, files 0600.
func TestFilesPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "session")
	ctx, err := Init(context.Background(), WithNumCPUs(1), WithDir(dir), WithObjectStoreMemory(2<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer Shutdown(ctx)
	for range 4 { // 4 MiB into a 2 MiB store: some of it is spilled
		if _, err := Put(ctx, make([]byte, 1<<20)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		spilled, _ := filepath.Glob(filepath.Join(dir, "spill", "*.zst"))
		if len(spilled) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing was spilled")
		}
		time.Sleep(20 * time.Millisecond)
	}
	files := 0
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) { // a temporary file renamed meanwhile
				return nil
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		want := os.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		} else {
			files++
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, info.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 3 {
		t.Fatalf("only %d files under %s", files, dir)
	}
}
