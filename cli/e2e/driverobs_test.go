package e2e

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/assembly/metrics"
)

// startHead starts a head agent (2 CPUs, a 256 MiB store) in the session and returns a
// driver's whole environment for it (this process's, the address and the token).
func startHead(t *testing.T, port int, addr, sess string) []string {
	t.Helper()
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--num-cpus", "2", "--object-store-memory", "256MiB")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	return append(os.Environ(), "RAY_ADDRESS="+addr, "RAY_GO_TOKEN="+printedToken(t, out))
}

// startStoreDriver starts the driverstore check and returns it with its node and job IDs.
func startStoreDriver(t *testing.T, env []string, sess string) (p *piped, node, job string) {
	t.Helper()
	p = startPiped(t, "driverstore", env)
	f := strings.Fields(p.line(t, "driverstore", sess))
	if len(f) != 4 || f[0] != "store" || f[1] != "ready" {
		t.Fatalf("driverstore printed %q, want store ready NODE JOB", f)
	}
	return p, f[2], f[3]
}

// TestDriverObjectStore: a driver joined to the cluster holds an 8 MiB object it put in
// its own object store. `rayctl memory` lists that store (role driver, the driver's job)
// and counts it in the totals; the head's /metrics counts it in its object store bytes
// and the driver in ray_go_processes{Role="driver"}.
func TestDriverObjectStore(t *testing.T) {
	port, addr, sess := newSession(t)
	env := startHead(t, port, addr, sess)
	p, node, job := startStoreDriver(t, env, sess)

	type row struct {
		Node, Role, Job string
		MemoryBytes     int64 `json:"memory_bytes"`
		Objects         int64
	}
	var rep struct {
		Nodes       []row
		MemoryBytes int64 `json:"memory_bytes"`
		Objects     int64
	}
	var mine row
	for deadline := time.Now().Add(30 * time.Second); ; {
		out, errOut, code := run(t, time.Minute, env, rayctl, "memory", "-o", "json")
		if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
			t.Fatalf("rayctl memory -o json: exit %d, %v\n%s\n%s", code, err, out, errOut)
		}
		for _, r := range rep.Nodes {
			if r.Node == node {
				mine = r
			}
		}
		if mine.MemoryBytes >= 8<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rayctl memory does not show the driver's 8 MiB object after 30 s (driver node %s):\n%s", node, out)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if mine.Role != "driver" || mine.Job != job || mine.Objects < 1 {
		t.Errorf("rayctl memory: the driver's store is %+v, want role driver, job %s, an object", mine, job)
	}
	if rep.MemoryBytes < mine.MemoryBytes || rep.Objects < mine.Objects {
		t.Errorf("rayctl memory: totals %d bytes, %d objects leave out the driver's %d bytes, %d objects", rep.MemoryBytes, rep.Objects, mine.MemoryBytes, mine.Objects)
	}
	out, errOut, code := run(t, time.Minute, env, rayctl, "memory")
	if code != 0 || !strings.Contains(out, "ROLE") || !strings.Contains(out, node+"  driver") || !strings.Contains(out, "1 of them drivers") {
		t.Errorf("rayctl memory: exit %d, want the driver's row\n%s\n%s", code, out, errOut)
	}
	t.Logf("rayctl memory:\n%s", out)

	out, errOut, code = run(t, time.Minute, env, rayctl, "metrics", "-o", "json")
	var eps []struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal([]byte(out), &eps); err != nil || code != 0 || len(eps) != 1 {
		t.Fatalf("rayctl metrics -o json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for deadline := time.Now().Add(30 * time.Second); ; {
		head, err := metrics.Scrape(ctx, eps[0].URL)
		if err != nil {
			t.Fatal(err)
		}
		used, _ := head.Value("ray_object_store_used_memory")
		drivers, _ := head.Value("ray_go_processes", "Role", "driver")
		objects, _ := head.Value("ray_object_store_num_local_objects")
		if used >= 8<<20 && drivers == 1 && objects >= 1 {
			t.Logf("head: ray_object_store_used_memory %v, ray_go_processes{Role=driver} %v", used, drivers)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("head /metrics after 30 s: ray_object_store_used_memory %v, ray_go_processes{Role=driver} %v, objects %v: the driver's store is left out", used, drivers, objects)
		}
		time.Sleep(300 * time.Millisecond)
	}

	p.in.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("the driver: %v\n%s", err, tail(p.stderr.String()))
	}
}
