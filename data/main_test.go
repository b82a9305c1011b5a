package data

import (
	"context"
	"fmt"
	"os"
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
