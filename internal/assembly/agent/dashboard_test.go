package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
)

// stubDashboard records what the agent gave it and serves its /metrics.
type stubDashboard struct {
	cfg  DashboardConfig
	runs atomic.Int32
	done chan struct{}
}

func (d *stubDashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/metrics" {
		d.cfg.Metrics.ServeHTTP(w, r)
		return
	}
	_, _ = io.WriteString(w, "stub")
}

func (d *stubDashboard) Run(ctx context.Context) {
	d.runs.Add(1)
	<-ctx.Done()
	close(d.done)
}

func newStub(stubs *[]*stubDashboard) func(DashboardConfig) (Dashboard, error) {
	return func(c DashboardConfig) (Dashboard, error) {
		d := &stubDashboard{cfg: c, done: make(chan struct{})}
		*stubs = append(*stubs, d)
		return d, nil
	}
}

// A head with NewDashboard serves it on DashboardPort, records where, gives it the join
// token's file (none on an insecure cluster) and the /metrics handler, runs its sampling
// until Stop; a taken port fails Start unless the fallback is on; DashboardOff and a
// non-head serve none.
func TestDashboardServed(t *testing.T) {
	var stubs []*stubDashboard
	head := startAgent(t, Config{Head: true, NewDashboard: newStub(&stubs)})
	if len(stubs) != 1 || head.DashboardAddress() == "" || !strings.HasPrefix(head.DashboardAddress(), "127.0.0.1:") {
		t.Fatalf("dashboard at %q, %d made", head.DashboardAddress(), len(stubs))
	}
	d := stubs[0]
	if d.cfg.TokenFile != TokenPath(head.cfg.SessionDir) || d.cfg.Store == nil || d.cfg.Gatherer == nil || d.cfg.Metrics == nil {
		t.Fatalf("config %+v", d.cfg)
	}
	info, ok := get(t, head.Store(), gcs.AgentKey(head.ID()), &pb.AgentInfo{})
	if !ok || info.GetDashboardAddress() != head.DashboardAddress() {
		t.Fatalf("record says %q, agent %q", info.GetDashboardAddress(), head.DashboardAddress())
	}
	resp, err := http.Get("http://" + head.DashboardAddress() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "ray_node_cpu_count") {
		t.Fatalf("/metrics on the dashboard's port: %s", b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	addr := head.DashboardAddress()
	if err := head.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	<-d.done // Stop waited for Run
	if d.runs.Load() != 1 {
		t.Fatalf("Run ran %d times", d.runs.Load())
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still listens after Stop", addr)
	}

	insecure := startAgent(t, Config{Head: true, Insecure: true, NewDashboard: newStub(&stubs)})
	if len(stubs) != 2 || stubs[1].cfg.TokenFile != "" || insecure.DashboardAddress() == "" {
		t.Fatalf("insecure head: dashboard at %q, token file %q", insecure.DashboardAddress(), stubs[len(stubs)-1].cfg.TokenFile)
	}
	port, _ := strconv.Atoi(insecure.DashboardAddress()[strings.LastIndex(insecure.DashboardAddress(), ":")+1:])
	_, err = Start(ctx, Config{Head: true, SessionDir: t.TempDir(), ObjectStoreBytes: 1 << 30, Logger: quiet(), Insecure: true,
		DashboardPort: port, NewDashboard: newStub(&stubs)})
	if !errors.Is(err, ErrPortInUse) || !errors.Is(err, ErrDashboardPortInUse) || !strings.Contains(err.Error(), "dashboard port "+strconv.Itoa(port)) {
		t.Fatalf("taken dashboard port: %v", err)
	}
	fallback := startAgent(t, Config{Head: true, Insecure: true, DashboardPort: port, DashboardPortFallback: true, NewDashboard: newStub(&stubs)})
	if fallback.DashboardAddress() == "" || fallback.DashboardAddress() == insecure.DashboardAddress() {
		t.Errorf("fallback: dashboard at %q", fallback.DashboardAddress())
	}
	off := startAgent(t, Config{Head: true, Insecure: true, DashboardPort: DashboardOff, NewDashboard: newStub(&stubs)})
	joined := startAgent(t, Config{GCSEndpoints: strings.Split(insecure.Address(), ","), Insecure: true, NewDashboard: newStub(&stubs)})
	if off.DashboardAddress() != "" || joined.DashboardAddress() != "" {
		t.Errorf("DashboardOff: %q; a joined agent: %q", off.DashboardAddress(), joined.DashboardAddress())
	}
}

// TestDashboardTLS: with DashboardTLS the head serves its dashboard over HTTPS with its own
// certificate, which a client trusting the cluster CA verifies for 127.0.0.1; plain HTTP
// gets no page; the record says so; an insecure head refuses the option.
func TestDashboardTLS(t *testing.T) {
	var stubs []*stubDashboard
	head := startAgent(t, Config{Head: true, DashboardTLS: true, NewDashboard: newStub(&stubs)})
	info, ok := get(t, head.Store(), gcs.AgentKey(head.ID()), &pb.AgentInfo{})
	if !ok || !info.GetDashboardTls() || info.GetDashboardAddress() != head.DashboardAddress() {
		t.Fatalf("record: %v", info)
	}
	caPEM, err := os.ReadFile(head.CredentialFiles().CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("the cluster CA file holds no certificate")
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := c.Get("https://" + head.DashboardAddress() + "/metrics")
	if err != nil {
		t.Fatalf("HTTPS with the cluster CA: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "ray_node_cpu_count") {
		t.Fatalf("/metrics over HTTPS: %s", b)
	}
	// A client that does not trust the cluster CA is told the certificate is unknown.
	if _, err := (&http.Client{Timeout: 10 * time.Second}).Get("https://" + head.DashboardAddress() + "/"); err == nil ||
		!strings.Contains(err.Error(), "certificate") {
		t.Errorf("HTTPS without the cluster CA: %v", err)
	}
	if resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + head.DashboardAddress() + "/metrics"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), "ray_node_cpu_count") {
			t.Fatal("the TLS dashboard served a page over plain HTTP")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = Start(ctx, Config{Head: true, SessionDir: t.TempDir(), ObjectStoreBytes: 1 << 30, Logger: quiet(), Insecure: true,
		DashboardTLS: true, NewDashboard: newStub(&stubs)})
	if err == nil || !strings.Contains(err.Error(), "--dashboard-tls") {
		t.Fatalf("an insecure head with DashboardTLS: %v", err)
	}
}
