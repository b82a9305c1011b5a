package dashboard

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/gcstest"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/identity"
	"github.com/ray-go/ray/internal/base/pb"
)

// cluster is a GCS with a head agent, a running job and a named actor, and a token file.
func cluster(t *testing.T) (gcs.Store, string, identity.Token) {
	t.Helper()
	ctx := context.Background()
	s := memstore.New(memstore.Options{})
	t.Cleanup(func() { s.Close() })
	put := func(key string, m proto.Message) { gcstest.PutProto(t, s, key, m) }
	put(gcs.AgentKey("a1"), &pb.AgentInfo{AgentId: "a1", Hostname: "h1", Pid: 7, Head: true, ObjectStoreBytes: 1 << 30,
		Total: []*pb.ResourceQty{{Name: "CPU", Amount: 2 * 10000}}, StartedUnixMs: time.Now().UnixMilli()})
	if _, err := s.Put(ctx, gcs.AgentAliveKey("a1"), []byte("h1"), 0); err != nil {
		t.Fatal(err)
	}
	put(gcs.JobKey("01000000"), &pb.JobInfo{JobId: "01000000", State: pb.JobInfo_RUNNING, DriverHost: "h1", DriverPid: 9,
		StartUnixMs: time.Now().UnixMilli(), Entrypoint: "demo"})
	put(gcs.ActorKey("c1"), &pb.ActorInfo{ActorId: []byte{1, 2}, Class: "Counter", Name: "counter-1", Phase: int32(lifecycle.Alive), JobId: "01000000"})
	ca, err := identity.NewCA("test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := identity.NewToken(ca)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "token")
	if err := identity.SaveToken(path, tok); err != nil {
		t.Fatal(err)
	}
	return s, path, tok
}

func newServer(t *testing.T, cfg Config) (*Dashboard, *httptest.Server) {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	return d, srv
}

func get(t *testing.T, c *http.Client, u string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestToken: without the token every path answers 401 saying where the token is; a wrong
// one is refused; Bearer works; ?token= sets a cookie and redirects to the URL without
// it; the cookie then works alone, and stops working when the token is rotated.
func TestToken(t *testing.T) {
	s, path, tok := cluster(t)
	_, srv := newServer(t, Config{Store: s, TokenFile: path, Metrics: http.NotFoundHandler(), Address: "127.0.0.1:6379"})
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, p := range []string{"/", "/api/cluster", "/static/app.js", "/metrics", "/api/metrics"} {
		resp, body := get(t, plain, srv.URL+p)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "rayctl token show") || strings.Contains(body, tok.String()) {
			t.Fatalf("GET %s without a token: %d %q", p, resp.StatusCode, body)
		}
	}
	other := tok
	other.Secret[0] ^= 1
	if resp, body := get(t, plain, srv.URL+"/api/cluster", "Authorization", "Bearer "+other.String()); resp.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(body, "refused") {
		t.Fatalf("a wrong token: %d %q", resp.StatusCode, body)
	}
	if resp, _ := get(t, plain, srv.URL+"/?token="+url.QueryEscape(other.String())); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong ?token=: %d", resp.StatusCode)
	}
	if resp, body := get(t, plain, srv.URL+"/api/cluster", "Authorization", "Bearer "+tok.String()); resp.StatusCode != http.StatusOK ||
		!strings.Contains(body, `"alive_nodes":1`) || !strings.Contains(body, `"address":"127.0.0.1:6379"`) {
		t.Fatalf("Bearer: %d %q (want the cluster's address too)", resp.StatusCode, body)
	}
	if resp, body := get(t, plain, srv.URL+"/api/logs/nosuch", "Authorization", "Bearer "+tok.String()); resp.StatusCode != http.StatusNotFound || !strings.Contains(body, `no submission "nosuch"`) {
		t.Fatalf("the log of a submission that does not exist: %d %q, want 404", resp.StatusCode, body)
	}
	resp, _ := get(t, plain, srv.URL+"/?token="+url.QueryEscape(tok.String())+"#tasks")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("?token=: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// A path that would make the redirect go to another host goes home instead.
	if resp, _ := get(t, plain, srv.URL+"//evil.example/x?token="+url.QueryEscape(tok.String())); resp.StatusCode != http.StatusSeeOther ||
		resp.Header.Get("Location") != "/" {
		t.Fatalf("?token= on //evil.example/x: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == cookieName {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Secure || strings.Contains(cookie.Value, tok.String()[:64]) {
		t.Fatalf("cookie %+v", cookie)
	}
	// Over HTTPS (--dashboard-tls) the cookie is Secure: a browser never sends it in clear.
	d, _ := newServer(t, Config{Store: s, TokenFile: path, Metrics: http.NotFoundHandler()})
	tsrv := httptest.NewTLSServer(d)
	defer tsrv.Close()
	tc := tsrv.Client()
	tc.CheckRedirect = plain.CheckRedirect
	if resp, _ := get(t, tc, tsrv.URL+"/?token="+url.QueryEscape(tok.String())); resp.StatusCode != http.StatusSeeOther ||
		len(resp.Cookies()) != 1 || !resp.Cookies()[0].Secure {
		t.Fatalf("?token= over HTTPS: %d, cookies %+v", resp.StatusCode, resp.Cookies())
	}
	if resp, body := get(t, plain, srv.URL+"/", "Cookie", cookie.String()); resp.StatusCode != http.StatusOK || !strings.Contains(body, "/static/app.js") {
		t.Fatalf("with the cookie: %d %q", resp.StatusCode, body)
	}
	ca, err := identity.NewCA("test2", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := identity.NewToken(ca)
	if err == nil {
		err = identity.SaveToken(path, rotated)
	}
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := get(t, plain, srv.URL+"/", "Cookie", cookie.String()); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the cookie after a rotation: %d", resp.StatusCode)
	}
}

// TestReadOnly: methods other than GET and HEAD get 405, on every path.
func TestReadOnly(t *testing.T) {
	s, _, _ := cluster(t)
	_, srv := newServer(t, Config{Store: s})
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		req, _ := http.NewRequest(m, srv.URL+"/api/cluster", strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("%s: %d", m, resp.StatusCode)
		}
	}
}

// TestAPI: the JSON the pages read: the cluster (rayctl status), the actors (rayctl list
// actors), the tasks of a cluster without processes (none, none missing), the assets, and
// the headers that keep the pages to this origin.
func TestAPI(t *testing.T) {
	s, _, _ := cluster(t)
	_, srv := newServer(t, Config{Store: s})
	c := http.DefaultClient
	resp, body := get(t, c, srv.URL+"/api/cluster")
	var ov struct {
		Nodes []struct {
			AgentID string `json:"agent_id"`
			Alive   bool   `json:"alive"`
		} `json:"nodes"`
		Jobs []struct {
			State string `json:"state"`
		} `json:"jobs"`
		Cluster struct {
			Running int `json:"running_jobs"`
		} `json:"cluster"`
	}
	if err := json.Unmarshal([]byte(body), &ov); err != nil || len(ov.Nodes) != 1 || !ov.Nodes[0].Alive || len(ov.Jobs) != 1 ||
		ov.Jobs[0].State != "RUNNING" || ov.Cluster.Running != 1 {
		t.Fatalf("/api/cluster: %v %s", err, body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Fatalf("CSP %q", csp)
	}
	_, body = get(t, c, srv.URL+"/api/actors")
	if !strings.Contains(body, `"name":"counter-1"`) || !strings.Contains(body, `"state":"ALIVE"`) {
		t.Fatalf("/api/actors: %s", body)
	}
	_, body = get(t, c, srv.URL+"/api/tasks?state=FAILED&limit=10")
	if !strings.Contains(body, `"tasks":[]`) || !strings.Contains(body, `"missing":[]`) {
		t.Fatalf("/api/tasks: %s", body)
	}
	// limit=0 is all (up to the most one answer holds), as rayctl's --limit 0; it was a 400.
	for _, q := range []string{"limit=0", "limit=5000000"} {
		if resp, body := get(t, c, srv.URL+"/api/tasks?"+q); resp.StatusCode != http.StatusOK {
			t.Fatalf("/api/tasks?%s: %d %s", q, resp.StatusCode, body)
		}
		if resp, body := get(t, c, srv.URL+"/api/objects?"+q); resp.StatusCode != http.StatusOK {
			t.Fatalf("/api/objects?%s: %d %s", q, resp.StatusCode, body)
		}
	}
	for _, q := range []string{"limit=x", "limit=-1", "job=a/b", "node=" + strings.Repeat("n", 300)} {
		if resp, _ := get(t, c, srv.URL+"/api/tasks?"+q); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("/api/tasks?%s: %d", q, resp.StatusCode)
		}
	}
	// A job by a prefix of its ID, as rayctl takes it: one of two jobs is ambiguous, and
	// says which.
	gcstest.PutProto(t, s, gcs.JobKey("01000001"), &pb.JobInfo{JobId: "01000001", State: pb.JobInfo_RUNNING})
	if resp, body := get(t, c, srv.URL+"/api/tasks?job=010000"); resp.StatusCode != http.StatusBadRequest ||
		!strings.Contains(body, "01000000, 01000001") {
		t.Fatalf("/api/tasks?job=010000 of two jobs: %d %s", resp.StatusCode, body)
	}
	if resp, body := get(t, c, srv.URL+"/api/objects?job=010000"); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("/api/objects?job=010000 of two jobs: %d %s", resp.StatusCode, body)
	}
	gcstest.PutProto(t, s, gcs.SubmissionKey("5060c3d2a1b2c3d4"), &pb.Submission{SubmissionId: "5060c3d2a1b2c3d4", Argv: []string{"/bin/true"}})
	if resp, body := get(t, c, srv.URL+"/api/logs/5060c3"); resp.StatusCode != http.StatusOK {
		t.Fatalf("/api/logs/ of a submission's prefix: %d %s", resp.StatusCode, body)
	}
	for _, p := range []string{"/static/app.js", "/static/style.css", "/"} {
		if resp, body := get(t, c, srv.URL+p); resp.StatusCode != http.StatusOK || len(body) < 100 {
			t.Fatalf("%s: %d", p, resp.StatusCode)
		}
	}
	if resp, _ := get(t, c, srv.URL+"/metrics"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("/metrics without a handler: %d", resp.StatusCode)
	}
}

// TestSamples: each sample reads the cluster and the metrics; the ring keeps the newest
// Window/SampleEvery samples, oldest first.
func TestSamples(t *testing.T) {
	s, _, _ := cluster(t)
	reg := prometheus.NewRegistry()
	tasks := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ray_tasks"}, []string{"Name", "State"})
	reg.MustRegister(tasks)
	tasks.WithLabelValues("f", "RUNNING").Set(3)
	tasks.WithLabelValues("g", "RUNNING").Set(2)
	tasks.WithLabelValues("g", "FAILED").Set(1)
	d, srv := newServer(t, Config{Store: s, Gatherer: reg, SampleEvery: time.Second, Window: 3 * time.Second})
	for range 5 {
		d.sample(context.Background())
	}
	_, body := get(t, http.DefaultClient, srv.URL+"/api/metrics")
	var got Samples
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Samples) != 3 || got.IntervalMs != 1000 {
		t.Fatalf("%d samples every %d ms, want 3 every 1000: %s", len(got.Samples), got.IntervalMs, body)
	}
	last := got.Samples[2]
	if last.TasksRunning != 5 || last.TasksFailed != 1 || last.NodesAlive != 1 || last.CPUTotal != 2 || last.JobsRunning != 1 {
		t.Fatalf("sample %+v", last)
	}
	for i := 1; i < len(got.Samples); i++ {
		if got.Samples[i].UnixMs < got.Samples[i-1].UnixMs {
			t.Fatalf("not oldest first: %+v", got.Samples)
		}
	}
}

// TestRing: a ring of 3 keeps the newest 3 in order.
func TestRing(t *testing.T) {
	r := newRing(3)
	for i := range 7 {
		r.add(Sample{UnixMs: int64(i)})
		got := r.samples()
		if want := min(i+1, 3); len(got) != want || got[len(got)-1].UnixMs != int64(i) || got[0].UnixMs != int64(i+1-want) {
			t.Fatalf("after %d: %+v", i, got)
		}
	}
}

// TestBounded: at most MaxInFlight requests read the cluster at once; the others wait
// (or, after 5 s, get 503).
func TestBounded(t *testing.T) {
	s, _, _ := cluster(t)
	release := make(chan struct{})
	var mu sync.Mutex
	inside, most := 0, 0
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inside++
		most = max(most, inside)
		mu.Unlock()
		<-release
		mu.Lock()
		inside--
		mu.Unlock()
	})
	_, srv := newServer(t, Config{Store: s, Metrics: slow, MaxInFlight: 2})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(srv.URL + "/metrics")
			if err == nil {
				resp.Body.Close()
			}
		}()
	}
	// Wait until two are inside (bounded), then let them all through.
	for i := 0; i < 500; i++ {
		mu.Lock()
		n := inside
		mu.Unlock()
		if n == 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	wg.Wait()
	if most > 2 {
		t.Fatalf("%d requests at once, want at most 2", most)
	}
}

// TestLogTail: the end of a long log is kept.
func TestLogTail(t *testing.T) {
	w := &tailWriter{n: 10}
	for i := range 100 {
		_, _ = w.Write([]byte{byte('a' + i%26)})
	}
	if got := string(w.bytes()); len(got) != 10 || !w.cut || got != "mnopqrstuv" {
		t.Fatalf("%q cut=%v", got, w.cut)
	}
}
