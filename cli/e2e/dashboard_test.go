package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// screenshots: where TestDashboard also writes its screenshots (the README's comes from
// `go test ./cli/e2e -run TestDashboard -args -screenshots docs`); they always go to the
// test's temporary directory.
var screenshots = flag.String("screenshots", "", "also write the dashboard test's screenshots to this directory")

// TestDashboard drives Debian's chromium, headless, through the head's web dashboard
// against a real cluster (a head and an agent, started by rayctl) that runs a real job
// (the driver's dashboard check, submitted with rayctl job submit): without the token the
// dashboard answers 401 and says where the token is; with it, each page shows the live
// cluster: two nodes with their bars, the running job and its log, the named actor, the
// failed task with its error (also through the table's filter), the object the job put
// (size, node, owner, reference; also through the filter), the timeline's spans and the
// charts. A screenshot of each page is saved.
func TestDashboard(t *testing.T) {
	chromium, err := findChromium(t)
	if err != nil {
		t.Fatalf("chromium is not on PATH and could not be installed: the dashboard's browser test drives Debian's chromium headless. "+
			"Install it with `sudo apt-get install -y chromium` (CI's .ci/run does): %v", err)
	}
	port, addr, sess := newSession(t)
	startArgs := []string{"start", "--session-dir", sess, "--num-cpus", "2", "--object-store-memory", "512MiB", "--metrics-port", "0"}
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, append(startArgs, "--head", "--port", strconv.Itoa(port), "--dashboard-port", "0")...)
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	m := regexp.MustCompile(`Its dashboard: (http://127\.0\.0\.1:\d+/)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("rayctl start --head does not say where the dashboard is:\n%s", out)
	}
	dash := m[1]
	token := printedToken(t, out)
	tok := []string{"RAY_GO_TOKEN=" + token}
	if out, errOut, code = run(t, 90*time.Second, tok, rayctl, append(startArgs, "--address", addr)...); code != 0 {
		t.Fatalf("rayctl start --address: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = run(t, time.Minute, tok, rayctl, "status", "--address", addr)
	if code != 0 || !strings.Contains(out, "Dashboard: "+dash) {
		t.Fatalf("rayctl status does not print the dashboard's URL %s: exit %d\n%s\n%s", dash, code, out, errOut)
	}

	// Without the token: 401, saying where to find it.
	resp, err := http.Get(dash + "api/cluster")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "rayctl token show") {
		t.Fatalf("the dashboard without the token: %d\n%s", resp.StatusCode, body)
	}

	out, errOut, code = run(t, time.Minute, tok, rayctl, "job", "submit", "--no-wait", "--address", addr, "--", driver, "-check", "dashboard")
	subID := strings.TrimSpace(out)
	if code != 0 || subID == "" {
		t.Fatalf("rayctl job submit --no-wait: exit %d\nstdout: %s\nstderr: %s", code, out, tail(errOut))
	}
	deadline := time.Now().Add(90 * time.Second)
	var objID string // the object the driver put
	for {
		logs, _, _ := run(t, time.Minute, tok, rayctl, "job", "logs", "--address", addr, subID)
		if strings.Contains(logs, "dashboard ready") {
			if m := regexp.MustCompile(`dashboard object ([0-9a-f]+)`).FindStringSubmatch(logs); m != nil {
				objID = m[1]
			}
			if objID == "" {
				t.Fatalf("the driver did not print its object's ID:\n%s", logs)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the submitted driver was not ready after 90 s:\n%s", logs)
		}
		time.Sleep(300 * time.Millisecond)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1360, 860), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser() // ends the browser's process
	// The first run starts the browser, and lives as long as its context: no timeout on it.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancel := context.WithTimeout(bctx, 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		for _, d := range []string{dir, *screenshots} {
			if d == "" {
				continue
			}
			if err := os.WriteFile(filepath.Join(d, "dashboard-"+name+".png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// wait polls a JavaScript condition until it holds (at most 60 s); what says what
	// the page should show.
	wait := func(what, cond string) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
		defer wcancel()
		if _, err := chromedp.Run(wctx, chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingInterval(200*time.Millisecond),
			chromedp.WithPollingTimeout(0))); err != nil {
			text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("section.view.active")?.innerText ?? ""`))
			errText, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("error").innerText`))
			t.Fatalf("the dashboard does not show %s: %v\nerror line: %s\npage:\n%s", what, err, errText, text)
		}
	}
	open := func(view string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = %q`, view))); err != nil {
			t.Fatal(err)
		}
		wait("the "+view+" page", fmt.Sprintf(`document.body.dataset.loaded === %q`, view))
	}
	rows := func(table string) string {
		return `[...document.querySelectorAll("` + table + ` tbody tr")]`
	}

	// Sign in once with ?token=: the dashboard sets its cookie and drops the token from
	// the URL.
	if err := chromedp.Do(ctx, chromedp.Navigate(dash+"?token="+url.QueryEscape(token))); err != nil {
		t.Fatal(err)
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || strings.Contains(loc, "token") {
		t.Fatalf("after signing in the URL is %q (%v): the token should be gone from it", loc, err)
	}

	// Overview: two alive nodes with CPU, memory and object store bars.
	wait("two alive nodes", `document.getElementById("node-count")?.textContent === "2"`)
	wait("a bar of each kind on each node", rows("#nodes-table")+`.filter(r => r.querySelector(".bar.cpu") && r.querySelector(".bar.mem") && r.querySelector(".bar.store")).length === 2`)
	wait("a running job in the cards", `document.getElementById("running-jobs")?.textContent === "1"`)
	shot("overview")

	// Jobs: the submitted job RUNNING, and its log.
	open("jobs")
	wait("the running job", rows("#jobs-table")+`.some(r => r.textContent.includes("RUNNING") && r.textContent.includes("`+subID+`"))`)
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector("#jobs-table tr button.link").click()`)); err != nil {
		t.Fatal(err)
	}
	wait("the job's log", `document.getElementById("job-log").textContent.includes("dashboard ready")`)
	shot("jobs")

	// Actors: the named actor, alive.
	open("actors")
	wait("the named actor", rows("#actors-table")+`.some(r => r.textContent.includes("dash-counter") && r.textContent.includes("ALIVE") && r.textContent.includes("e2e.Accel"))`)
	// Its history is the row's tooltip: created, then alive.
	wait("the named actor's history", rows("#actors-table")+`.some(r => r.textContent.includes("dash-counter") && /PENDING_CREATION[^]*ALIVE/.test(r.title))`)
	shot("actors")

	// Tasks: the failed task with its error; then only failed tasks through the filter.
	open("tasks")
	wait("the failed task with its error", rows("#tasks-table")+`.some(r => r.dataset.state === "FAILED" && r.textContent.includes("e2e.Fail") && r.textContent.includes("this task fails on purpose"))`)
	wait("finished and running tasks", rows("#tasks-table")+`.some(r => r.dataset.state === "FINISHED") && `+rows("#tasks-table")+`.some(r => r.dataset.state === "RUNNING")`)
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`(() => { const f = document.getElementById("task-form");
		f.elements.state.value = "FAILED"; document.body.dataset.loaded = ""; f.requestSubmit(); })()`)); err != nil {
		t.Fatal(err)
	}
	wait("only the failed task after filtering", `document.body.dataset.loaded === "tasks" && `+rows("#tasks-table")+`.length === 1 && `+rows("#tasks-table")+`[0].dataset.state === "FAILED"`)
	shot("tasks")

	// Objects: the object the driver put, 3 MiB in its node's store, held by the driver
	// (a local reference), with the summary by state and reference; then only that one
	// through the filter.
	open("objects")
	objRow := rows("#objects-table") + `.find(r => r.dataset.object === "` + objID + `")`
	wait("the driver's object", `(r => r && r.textContent.includes("3.0 MiB") && r.textContent.includes("READY") && r.dataset.ref === "LOCAL_REFERENCE" &&
		r.children[4].textContent !== "inline" && r.children[4].textContent !== "-" && r.children[5].textContent !== "-")(`+objRow+`)`)
	wait("the summary of the objects", rows("#objects-sums")+`.some(r => r.textContent.includes("READY") && r.textContent.includes("LOCAL_REFERENCE"))`)
	shot("objects")
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`(() => { const f = document.getElementById("object-form");
		f.elements.object_id.value = "`+objID[:12]+`"; document.body.dataset.loaded = ""; f.requestSubmit(); })()`)); err != nil {
		t.Fatal(err)
	}
	wait("only the driver's object after filtering", `document.body.dataset.loaded === "objects" && `+rows("#objects-table")+`.length === 1 && `+
		rows("#objects-table")+`[0].dataset.object === "`+objID+`"`)

	// Timeline: a span per task attempt that ran, the failed one among them.
	open("timeline")
	wait("the timeline's spans", `document.querySelectorAll("#timeline-svg rect.span").length >= 10 && document.querySelector('#timeline-svg rect.span[data-state="FAILED"]') !== null`)
	shot("timeline")

	// Metrics: the charts, drawn from the samples of the last hour.
	open("metrics")
	wait("the charts with samples", `Number(document.getElementById("charts").dataset.samples) >= 1 && document.querySelectorAll("#charts polyline").length >= 10`)
	var samples struct {
		Samples []struct {
			Nodes float64 `json:"nodes_alive"`
		} `json:"samples"`
	}
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch("/api/metrics").then(r => r.text())`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(raw), &samples); err != nil || len(samples.Samples) == 0 || samples.Samples[len(samples.Samples)-1].Nodes != 2 {
		t.Fatalf("/api/metrics from the page: %v\n%s", err, raw)
	}
	shot("metrics")
	t.Logf("screenshots in %s", dir)
}

var chromiumMu sync.Mutex

// findChromium returns Debian's chromium, installing it with apt-get (as root, or through
// sudo without a password) when it is missing, as the README's test command on a fresh
// machine needs; .ci/run installs it beforehand.
func findChromium(t *testing.T) (string, error) {
	chromiumMu.Lock() // one apt-get at a time (tests run in parallel)
	defer chromiumMu.Unlock()
	if p, err := exec.LookPath("chromium"); err == nil {
		return p, nil
	}
	var prefix []string
	if os.Geteuid() != 0 {
		prefix = []string{"sudo", "-n"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, args := range [][]string{{"apt-get", "update", "-qq"}, {"apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium", "fonts-liberation"}} {
		argv := append(append([]string(nil), prefix...), args...)
		t.Logf("chromium is missing: %s", strings.Join(argv, " "))
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, tail(string(out)))
		}
	}
	return exec.LookPath("chromium")
}
