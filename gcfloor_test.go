package ray

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

// gogcNow reads the process's GOGC (-1: off).
func gogcNow() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if v := s[0].Value.Uint64(); v <= 1<<31 {
		return int(v)
	}
	return -1
}

// gcFloorChildEnv makes the test binary a child of TestGCHeapFloorInInit (TestMain): the
// heap-goal floor is process-wide, and the tests' shared runtime holds it in this process.
const gcFloorChildEnv = "RAY_GO_TEST_GCFLOOR_CHILD"

// gcFloorChild runs Init with the environment it was given, collects twice (the tuner
// runs after each cycle), prints GOGC then and after Shutdown, and exits.
func gcFloorChild() {
	before := gogcNow()
	ctx, err := Init(context.Background(), WithNumCPUs(1), WithObjectStoreMemory(256<<20))
	if err != nil {
		fmt.Println("Init:", err)
		os.Exit(1)
	}
	runtime.GC()
	runtime.GC()
	during := gogcNow()
	if err := Shutdown(ctx); err != nil {
		fmt.Println("Shutdown:", err)
		os.Exit(1)
	}
	fmt.Printf("gogc before=%d during=%d after=%d\n", before, during, gogcNow())
	os.Exit(0)
}

// TestGCHeapFloorInInit: a local-mode Init raises GOGC so that the heap goal is the floor
// (a test's live heap is far below it) and Shutdown gives 100 back; with the GOGC variable
// set (to any value) or the floor off the runtime leaves GOGC alone; a bad floor is a clear
// error. Each Init runs in a child process of its own.
func TestGCHeapFloorInInit(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want string // "raised": during > 100, after 100
	}{
		{nil, "raised"},
		{[]string{"RAY_GO_GC_HEAP_FLOOR=134217728"}, "raised"},
		{[]string{"GOGC=100"}, "gogc before=100 during=100 after=100"},
		{[]string{"GOGC=300"}, "gogc before=300 during=300 after=300"},
		{[]string{"RAY_GO_GC_HEAP_FLOOR=0"}, "gogc before=100 during=100 after=100"},
		{[]string{"RAY_GO_GC_HEAP_FLOOR=lots"}, `Init: ray: Init: workerenv: RAY_GO_GC_HEAP_FLOOR="lots"`},
	} {
		// The children are processes of their own (nothing of this process is shared):
		// they run at once, each mostly waiting for its Init and Shutdown.
		name := strings.Join(c.env, " ")
		if name == "" {
			name = "no variables"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			cmd.Env = append(withoutGCEnv(os.Environ()), append(c.env, gcFloorChildEnv+"=1")...)
			out, err := cmd.CombinedOutput()
			cancel()
			got := strings.TrimSpace(string(out))
			if c.want == "raised" {
				var before, during, after int
				if _, serr := fmt.Sscanf(got, "gogc before=%d during=%d after=%d", &before, &during, &after); serr != nil || err != nil {
					t.Errorf("env %v: %v, %q", c.env, err, got)
				} else if before != 100 || during <= 100 || after != 100 {
					t.Errorf("env %v: GOGC before Init %d, during %d, after Shutdown %d; want 100, more than 100, 100", c.env, before, during, after)
				}
				return
			}
			if !strings.Contains(got, c.want) {
				t.Errorf("env %v: %v, %q; want %q", c.env, err, got, c.want)
			}
		})
	}
	if _, err := Init(context.Background(), WithGCHeapFloor(-1)); err == nil || !strings.Contains(err.Error(), "WithGCHeapFloor(-1)") {
		t.Errorf("Init with WithGCHeapFloor(-1): %v, want an error naming it", err)
	}
}

// withoutGCEnv drops the variables that set GOGC, the floor and the memory limit.
func withoutGCEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k != "GOGC" && k != "GOMEMLIMIT" && k != "RAY_GO_GC_HEAP_FLOOR" && k != gcFloorChildEnv {
			out = append(out, kv)
		}
	}
	return out
}
