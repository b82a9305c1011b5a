package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/assembly/agent"
	"github.com/ray-go/ray/internal/assembly/dashboard"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/gcstest"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestDashboardDrivers drives chromium through the dashboard of a GCS that holds the
// records of three drivers joined to the cluster, as the head writes them: one alive
// (its node record and object store report), one UNREACHABLE (its lease lapsed) and one
// DEAD (its job failed). The overview lists them with their state, job and store (the
// pages showed no driver at all, though rayctl status and list nodes do), and the jobs
// page says each job's driver state and namespace. The actors page shows a named actor's
// namespace (named actors live in their job's namespace: the pages did not say which).
func TestDashboardDrivers(t *testing.T) {
	chromium, err := findChromium(t)
	if err != nil {
		t.Fatalf("chromium is not on PATH and could not be installed: the dashboard's browser tests drive Debian's chromium headless. "+
			"Install it with `sudo apt-get install -y chromium` (CI's .ci/run does): %v", err)
	}
	ctx := context.Background()
	s := memstore.New(memstore.Options{})
	defer s.Close()
	now := time.Now()
	gcstest.PutProto(t, s, gcs.AgentKey("a1"), &pb.AgentInfo{AgentId: "a1", Hostname: "h1", Pid: 7, Head: true, ObjectStoreBytes: 1 << 30,
		Total: []*pb.ResourceQty{{Name: "CPU", Amount: 2 * 10000}}, StartedUnixMs: now.UnixMilli()})
	if _, err := s.Put(ctx, gcs.AgentAliveKey("a1"), []byte("h1"), 0); err != nil {
		t.Fatal(err)
	}
	// The alive driver of job 0a000001: its node record, its store's report, its job.
	gcstest.PutProto(t, s, gcs.NodeKey("d0a11ve000000001"), &pb.NodeInfo{NodeId: "d0a11ve000000001", Role: "driver", JobId: "0a000001",
		Hostname: "laptop", Pid: 4242, ObjectStoreBytes: 64 << 20, StartedUnixMs: now.UnixMilli()})
	gcstest.PutProto(t, s, gcs.DriverLoadKey("d0a11ve000000001"), &pb.NodeLoad{NodeId: "d0a11ve000000001", StoreInMemory: 8 << 20, StoreBudget: 64 << 20})
	gcstest.PutProto(t, s, gcs.JobKey("0a000001"), &pb.JobInfo{JobId: "0a000001", State: pb.JobInfo_RUNNING, DriverHost: "laptop",
		DriverPid: 4242, DriverNode: "d0a11ve000000001", StartUnixMs: now.UnixMilli(), RayNamespace: "team-a"})
	// Job 0a000001's named actor, in its namespace.
	gcstest.PutProto(t, s, gcs.ActorKey("ac7015000001"), &pb.ActorInfo{ActorId: []byte{0xac, 0x70, 0x15, 0, 0, 1}, Class: "e2e.Counter",
		Name: "counter", Namespace: "team-a", JobId: "0a000001", Phase: int32(lifecycle.Alive)})
	if _, err := s.Put(ctx, gcs.JobAliveKey("0a000001"), []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	// The unreachable driver of job 0b000002 (its lease lapsed 20 s ago), and the dead
	// one of job 0c000003 (failed a minute ago).
	gcstest.PutProto(t, s, gcs.JobKey("0b000002"), &pb.JobInfo{JobId: "0b000002", State: pb.JobInfo_RUNNING, DriverHost: "box",
		DriverPid: 5151, DriverNode: "d0b5110000000002", StartUnixMs: now.Add(-time.Minute).UnixMilli()})
	gcstest.PutProto(t, s, gcs.JobKey("0c000003"), &pb.JobInfo{JobId: "0c000003", State: pb.JobInfo_FAILED, DriverHost: "box",
		DriverPid: 6161, DriverNode: "d0cdead000000003", StartUnixMs: now.Add(-5 * time.Minute).UnixMilli(),
		EndUnixMs: now.Add(-time.Minute).UnixMilli(), Message: "job driver lost"})
	for _, d := range []agent.DriverLost{
		{Job: "0b000002", Node: "d0b5110000000002", Host: "box", Pid: 5151, LapsedUnixMs: now.Add(-20 * time.Second).UnixMilli()},
		{Job: "0c000003", Node: "d0cdead000000003", Host: "box", Pid: 6161, LapsedUnixMs: now.Add(-2 * time.Minute).UnixMilli(),
			DeadUnixMs: now.Add(-time.Minute).UnixMilli(), Reason: "job driver lost: no heartbeat"},
	} {
		b, _ := json.Marshal(d)
		if _, err := s.Put(ctx, gcs.DriverLostKey(d.Job), b, 0); err != nil {
			t.Fatal(err)
		}
	}
	d, err := dashboard.New(dashboard.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d)
	defer srv.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1360, 860), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	bc, cancel := context.WithTimeout(bctx, 2*time.Minute)
	defer cancel()
	wait := func(what, cond string) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(bc, 60*time.Second)
		defer wcancel()
		if _, err := chromedp.Run(wctx, chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingInterval(200*time.Millisecond),
			chromedp.WithPollingTimeout(0))); err != nil {
			text, _ := chromedp.Run(bc, chromedp.Evaluate[string](`document.querySelector("section.view.active")?.innerText ?? ""`))
			t.Fatalf("the dashboard does not show %s: %v\npage:\n%s", what, err, text)
		}
	}
	row := func(table, attr, id string) string {
		return fmt.Sprintf(`[...document.querySelectorAll("%s tbody tr")].find(r => r.getAttribute(%q) === %q)`, table, attr, id)
	}
	if err := chromedp.Do(bc, chromedp.Navigate(srv.URL+"/#overview")); err != nil {
		t.Fatal(err)
	}
	wait("the overview", `document.body.dataset.loaded === "overview"`)
	wait("the alive driver with its job and store", `(r => r && r.dataset.state === "ALIVE" && r.textContent.includes("0a000001") &&
		r.textContent.includes("laptop") && r.textContent.includes("4242") && r.textContent.includes("8.0 MiB / 64.0 MiB"))(`+
		row("#drivers-table", "data-driver", "d0a11ve000000001")+`)`)
	wait("the unreachable driver, silent for a while", `(r => r && r.dataset.state === "UNREACHABLE" && r.textContent.includes("0b000002") &&
		/silent \d+ s/.test(r.textContent))(`+row("#drivers-table", "data-driver", "d0b5110000000002")+`)`)
	wait("the dead driver and why", `(r => r && r.dataset.state === "DEAD" && r.textContent.includes("0c000003") &&
		r.textContent.includes("job driver lost: no heartbeat"))(`+row("#drivers-table", "data-driver", "d0cdead000000003")+`)`)

	if err := chromedp.Do(bc, chromedp.Evaluate[chromedp.Void](`location.hash = "jobs"`)); err != nil {
		t.Fatal(err)
	}
	wait("the jobs page", `document.body.dataset.loaded === "jobs"`)
	wait("each job's driver state", `(rs => rs.every(Boolean) && rs[0].textContent.includes("ALIVE") && rs[1].textContent.includes("UNREACHABLE") &&
		rs[2].textContent.includes("DEAD"))([`+row("#jobs-table", "data-job", "0a000001")+`, `+row("#jobs-table", "data-job", "0b000002")+`, `+
		row("#jobs-table", "data-job", "0c000003")+`])`)
	wait("the job's namespace", `(r => r && r.textContent.includes("team-a"))(`+row("#jobs-table", "data-job", "0a000001")+`)`)

	if err := chromedp.Do(bc, chromedp.Evaluate[chromedp.Void](`location.hash = "actors"`)); err != nil {
		t.Fatal(err)
	}
	wait("the actors page", `document.body.dataset.loaded === "actors"`)
	// The namespace has its own column, under the header "Namespace".
	wait("the named actor's namespace", `(r => r && r.textContent.includes("counter") && r.textContent.includes("ALIVE") &&
		r.children[[...document.querySelectorAll("#actors-table thead th")].findIndex(th => th.textContent === "Namespace")]?.textContent === "team-a")(`+
		row("#actors-table", "data-actor", "ac7015000001")+`)`)
	// The table's filter finds it by its namespace, and hides it for another.
	if err := chromedp.Do(bc, chromedp.Evaluate[chromedp.Void](`(() => { const f = document.getElementById("actor-filter");
		f.value = "team-a"; f.dispatchEvent(new Event("input")); })()`)); err != nil {
		t.Fatal(err)
	}
	wait("the actor through the filter by namespace", `document.querySelectorAll("#actors-table tbody tr[data-actor]").length === 1`)
	if err := chromedp.Do(bc, chromedp.Evaluate[chromedp.Void](`(() => { const f = document.getElementById("actor-filter");
		f.value = "team-b"; f.dispatchEvent(new Event("input")); })()`)); err != nil {
		t.Fatal(err)
	}
	wait("no actor for another namespace", `document.querySelectorAll("#actors-table tbody tr[data-actor]").length === 0`)
}
