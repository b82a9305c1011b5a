package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ray-go/ray/objects/shard"
)

// TestJobsShareTheStoreBudget: `rayctl start --object-store-memory 48MiB` bounds the
// machine, not each job's worker process. Two jobs at once each hold eight task results of
// 4 MiB (32 MiB, 64 MiB in all) made on that machine: the worker processes' stores take
// grants of the machine's budget from its agent (package tasks/machine), so together they
// keep at most 48 MiB in memory (plus, while a spill is written, at most one grant chunk
// each) and spill the rest, and every result reads back whole. Before, each job's worker
// process had 48 MiB of its own: 64 MiB stayed in memory and nothing spilled.
func TestJobsShareTheStoreBudget(t *testing.T) {
	const budget = 48 << 20
	port, addr, sess := newSession(t)
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--num-cpus", "2", "--object-store-memory", "48MiB", "--dashboard-port", "-1", "--metrics-port", "-1")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	env := append(os.Environ(), "RAY_ADDRESS="+addr, "RAY_GO_TOKEN="+printedToken(t, out))
	jobs := []*piped{startPiped(t, "spill", env), startPiped(t, "spill", env)}
	for i, j := range jobs {
		if l := j.line(t, fmt.Sprintf("job %d", i), sess); l != "spill ready" {
			t.Fatalf("job %d printed %q, want spill ready\n%s", i, l, tail(j.stderr.String()))
		}
	}
	type row struct {
		Node, Role, Job string
		Budget          int64
		MemoryBytes     int64 `json:"memory_bytes"`
		Spilled         int64 `json:"spilled_bytes"`
		Objects         int64
	}
	var rep struct {
		Nodes  []row
		Budget int64
	}
	// Spills are written in the background: the stores get back within their grants
	// soon after the last put; wait for that, boundedly.
	slack := int64(2) * shard.GrantChunk(budget) // one chunk for each of the two worker processes
	var mem, spilled, objects int64
	var workers int
	for deadline := time.Now().Add(90 * time.Second); ; {
		out, errOut, code := run(t, time.Minute, env, rayctl, "memory", "-o", "json")
		if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
			t.Fatalf("rayctl memory -o json: exit %d, %v\n%s\n%s", code, err, out, errOut)
		}
		mem, spilled, objects, workers = 0, 0, 0, 0
		for _, r := range rep.Nodes {
			if r.Role == "worker" {
				mem, spilled, objects, workers = mem+r.MemoryBytes, spilled+r.Spilled, objects+r.Objects, workers+1
			}
		}
		if workers == 2 && objects == 16 && mem <= budget+slack {
			t.Logf("the two jobs' worker processes: %d bytes in memory, %d spilled, budget %d:\n%s", mem, spilled, budget, out)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 90 s the two jobs' worker processes (%d, %d objects) hold %d bytes in memory, over the machine's budget of %d (+%d: a chunk each), %d spilled:\n%s",
				workers, objects, mem, budget, slack, spilled, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if total := mem + spilled; total < 64<<20 || spilled < total-budget-slack {
		t.Fatalf("%d bytes in memory and %d spilled, for two jobs' 64 MiB", mem, spilled)
	}
	// rayctl memory's total budget counts the machine's once (the drivers' stores have
	// budgets of their own), not once for each worker process.
	want := int64(budget)
	for _, r := range rep.Nodes {
		if r.Role == "driver" {
			want += r.Budget
		}
	}
	if rep.Budget != want {
		t.Errorf("rayctl memory's total budget is %d, want the machine's %d once plus the drivers' (%d)", rep.Budget, budget, want)
	}
	for i, j := range jobs {
		if _, err := j.in.Write([]byte("check\n")); err != nil {
			t.Fatal(err)
		}
		if l := j.line(t, fmt.Sprintf("job %d's check", i), sess); l != "spill ok" {
			t.Fatalf("job %d: %s\n%s", i, l, tail(j.stderr.String()))
		}
	}
	for i, j := range jobs {
		j.in.Close()
		if err := j.cmd.Wait(); err != nil {
			t.Fatalf("job %d: %v\n%s", i, err, tail(j.stderr.String()))
		}
	}
}
