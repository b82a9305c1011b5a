package ray

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/identity"
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
	bad, files, err := identity.NotPrivate(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
	if files < 3 {
		t.Fatalf("only %d files under %s", files, dir)
	}
}
