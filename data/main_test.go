package data

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/ray-go/ray"
)

// shared is the one local cluster of the package's tests: 4 CPUs and a 32 MiB object
// store (small, so that the backpressure test streams 10x the store through it).
var shared context.Context

// clusterDir is the local cluster's directory (its spill files are in clusterDir/spill).
var clusterDir string

const storeBytes = 32 << 20

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ray-go-data-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	clusterDir = dir
	ctx, err := ray.Init(context.Background(), ray.WithNumCPUs(4), ray.WithObjectStoreMemory(storeBytes), ray.WithDir(dir))
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
	os.RemoveAll(dir)
	os.Exit(code)
}

func timeout(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(shared, 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// emptyStore waits (at most two minutes) until the object store of the shared cluster
// holds nothing, for a test whose assertions are about the whole store (what spilled):
// the blocks of the tests before are freed after they end, not at once (their refs when
// the garbage collector finds them, the blocks of an execution that failed once its
// cancelled tasks end: 48 MB, 18 MB of it spilled, for a second after
// TestSortSkewTooLarge, and long enough on a loaded machine to fill the store, spilled,
// through the next test).
func emptyStore(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(shared, 2*time.Minute)
	defer cancel()
	for {
		runtime.GC() // refs no test holds any more are released by their finalizers
		rep, err := ray.Memory(ctx, 3)
		if err != nil {
			t.Fatalf("waiting for the tests before to free their objects: %v", err)
		}
		var held ray.NodeMemory
		for _, n := range rep.Nodes {
			if n.Objects > 0 || n.SpilledBytes > 0 {
				held = n
			}
		}
		if held.Node == "" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the tests before left %d objects (%d bytes, %d spilled) in the store of node %s for two minutes: %v",
				held.Objects, held.Bytes, held.SpilledBytes, held.Node, held.Largest)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
