package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/assembly/agent"
	"github.com/ray-go/ray/internal/assembly/node"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
	"github.com/ray-go/ray/internal/base/gcs/gcstest"
	"github.com/ray-go/ray/internal/base/identity"
)

// peerRefusal dials a node-to-node port with cfg (and ALPN protos: gRPC wants "h2"): nil
// when the server accepted the certificate (it then waits for the client, or speaks
// first), else its refusal. In TLS 1.3 the server checks the client's certificate after
// the client's handshake is done, so the refusal comes as an alert on the first read.
func peerRefusal(addr string, cfg *tls.Config, protos ...string) error {
	cfg = cfg.Clone()
	cfg.NextProtos = protos
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	_, err = c.Read(make([]byte, 1))
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		return nil
	}
	return err
}

// openHTTP2 completes a TLS handshake (ALPN h2) with a node's gRPC remote and the HTTP/2
// connection preface, and reads the server's SETTINGS: a connection gRPC keeps open while
// the client is silent.
func openHTTP2(addr string, cfg *tls.Config) (net.Conn, error) {
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"h2"}
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	const preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + "\x00\x00\x00\x04\x00\x00\x00\x00\x00"
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(preface)); err != nil {
		c.Close()
		return nil, err
	}
	if _, err := c.Read(make([]byte, 9)); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// closedWithin reports whether the server closes c within d (what it sends meanwhile is
// read and dropped).
func closedWithin(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 4096)
	for {
		if _, err := c.Read(buf); err != nil {
			var ne net.Error
			return !(errors.As(err, &ne) && ne.Timeout())
		}
	}
}

// gcsRefusal opens the cluster's GCS with creds and writes a key: nil when it could.
func gcsRefusal(addr string, creds *identity.Credentials) error {
	ctx := context.Background()
	s, err := etcdstore.New(ctx, etcdstore.Config{Endpoints: []string{addr}, TLS: creds.ClientTLS(), DialTimeout: 3 * time.Second})
	if err != nil {
		return err
	}
	defer s.Close()
	_, err = s.Put(ctx, "certtest/"+creds.Name(), []byte("x"), 0)
	return err
}

// TestCertRevocation: a head and a second agent (real processes); `rayctl cert list`
// shows the certificates the head issued; the agent's node certificate may not write
// revoked/, certs/, submissions/ or jobs/ (nor submit or revoke through rayctl); after
// `rayctl cert revoke` of the agent's, a node of the cluster (a driver's node, in this
// process) refuses it on its object data stream and its gRPC remote, the GCS refuses the
// next request of a connection it opened before and new connections that present it,
// while other certificates keep working.
func TestCertRevocation(t *testing.T) {
	t.Parallel() // its own agents and node (processes), ports and session dirs; it mostly waits for them
	sess, sess2 := filepath.Join(t.TempDir(), "head"), filepath.Join(t.TempDir(), "agent")
	t.Cleanup(func() {
		run(t, nil, "stop", "--force", "--session-dir", sess2)
		run(t, nil, "stop", "--force", "--session-dir", sess)
	})
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	r := run(t, nil, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess, "--num-cpus", "1")
	token := PrintedToken(r.stdout)
	if r.code != 0 || token == "" {
		t.Fatalf("start --head: %+v", r)
	}
	if r := run(t, []string{"RAY_GO_TOKEN=" + token}, "start", "--address", addr, "--session-dir", sess2, "--num-cpus", "1"); r.code != 0 {
		t.Fatalf("start --address: %+v", r)
	}
	load := func(dir string) *identity.Credentials {
		t.Helper()
		files, _ := filepath.Glob(filepath.Join(dir, agentDirPref+"*"))
		if len(files) != 1 {
			t.Fatalf("agent directories under %s: %v", dir, files)
		}
		c, err := identity.Load(identity.FilesIn(agent.TLSDir(files[0])))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	head, gone := load(sess), load(sess2)
	serial := identity.SerialText(gone.Leaf().SerialNumber)

	type cert struct{ Serial, State, Name, Role, AgentID string }
	list := func() map[string]cert {
		t.Helper()
		r := run(t, nil, "cert", "list", "--session-dir", sess, "-o", "json")
		var raw []map[string]any
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &raw) != nil {
			t.Fatalf("cert list: %+v", r)
		}
		out := map[string]cert{}
		for _, m := range raw {
			s := func(k string) string { v, _ := m[k].(string); return v }
			out[s("serial")] = cert{s("serial"), s("state"), s("name"), s("role"), s("agent_id")}
		}
		return out
	}
	certs := list()
	if c := certs[serial]; c.State != "VALID" || c.Role != identity.RoleNode || c.AgentID == "" || c.Name != gone.Name() {
		t.Fatalf("the agent's certificate in cert list: %+v (all: %+v)", c, certs)
	}
	if c := certs[identity.SerialText(head.Leaf().SerialNumber)]; c.Role != identity.RoleHead {
		t.Fatalf("the head's certificate in cert list: %+v", c)
	}
	if r := run(t, nil, "cert", "list", "--session-dir", sess); r.code != 0 || !strings.Contains(r.stdout, "SERIAL") || !strings.Contains(r.stdout, serial) {
		t.Fatalf("cert list as a table: %+v", r)
	}

	// A node of the cluster: a driver's node, in a process of this test binary.
	nodeDir := t.TempDir()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), peerNodeEnv+"="+nodeDir, "PEER_NODE_GCS="+addr, "PEER_NODE_TOKEN="+token)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	// Its log, shown if the test fails. (Built with -race, it also reports protoactor's
	// known race on gRPC's logger, as any driver that joins a cluster does: see
	// internal/assembly/node's syncGRPCServer.)
	var log bytes.Buffer
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close() // the node stops when its standard input ends
		cmd.Wait()
		if t.Failed() {
			t.Logf("the node process's log:\n%s", log.String())
		}
	}()
	var started struct{ Data, GRPC, Error string }
	if err := json.NewDecoder(stdout).Decode(&started); err != nil || started.Error != "" {
		t.Fatalf("the node process: %v %s", err, started.Error)
	}
	drv, err := identity.Load(identity.FilesIn(filepath.Join(nodeDir, "tls")))
	if err != nil {
		t.Fatal(err)
	}
	type peerPort struct {
		addr   string
		protos []string
	}
	ports := map[string]peerPort{"object data stream": {started.Data, nil}, "gRPC remote": {started.GRPC, []string{"h2"}}}
	for what, p := range ports {
		if err := peerRefusal(p.addr, gone.PeerClientTLS(), p.protos...); err != nil {
			t.Fatalf("%s before the revocation: %v", what, err)
		}
	}
	if err := gcsRefusal(addr, gone); err != nil {
		t.Fatalf("the GCS before the revocation: %v", err)
	}

	// The GCS's authorization: the agent's node certificate does what a node does, and may
	// not write revoked/ (un-revoke itself), certs/, or submissions/ and jobs/ (make the
	// head run a command), through its own client or through rayctl on its machine.
	gcsOpen, err := etcdstore.New(context.Background(), etcdstore.Config{Endpoints: []string{addr}, TLS: gone.ClientTLS(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("a GCS client with the agent's certificate: %v", err)
	}
	defer gcsOpen.Close()
	ctx := context.Background()
	if _, err := gcsOpen.Put(ctx, gcs.NodeKey("certtest"), []byte("x"), 0); err != nil {
		t.Fatalf("the agent's certificate writes nodes/: %v", err)
	}
	for _, key := range []string{gcs.RevokedKey("1f"), gcs.CertKey("1f"), gcs.SubmissionKey("certtest"), gcs.JobKey("certtest")} {
		if _, err := gcsOpen.Put(ctx, key, []byte("x"), 0); !errors.Is(err, gcs.ErrPermissionDenied) {
			t.Errorf("the agent's certificate writes %s: %v, want gcs.ErrPermissionDenied", key, err)
		}
	}
	if _, err := gcsOpen.Delete(ctx, gcs.RevokedKey("1f")); !errors.Is(err, gcs.ErrPermissionDenied) {
		t.Errorf("the agent's certificate deletes under revoked/: %v, want gcs.ErrPermissionDenied", err)
	}
	if r := run(t, nil, "job", "submit", "--no-wait", "--session-dir", sess2, "--", "/bin/sh", "-c", "id"); r.code != ExitCredentials || !strings.Contains(r.stderr, "join token") {
		t.Errorf("job submit with the agent's node credentials: %+v", r)
	} else {
		t.Logf("job submit with a node's credentials: %s", strings.TrimSpace(r.stderr))
	}
	if r := run(t, nil, "cert", "revoke", "--session-dir", sess2, identity.SerialText(head.Leaf().SerialNumber), "--force"); r.code != ExitCredentials || !strings.Contains(r.stderr, "head's machine") {
		t.Errorf("cert revoke with the agent's node credentials: %+v", r)
	}
	if kvs, _, err := gcsOpen.List(ctx, gcs.SubmissionsPrefix); err != nil || len(kvs) != 0 {
		t.Errorf("submissions after the refused ones: %v %v", len(kvs), err)
	}

	// A GCS watch the agent's certificate opened before the revocation.
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	watch := gcsOpen.Watch(wctx, gcs.NodesPrefix, 0)
	if _, err := gcsOpen.Put(ctx, gcs.NodeKey("certtest-watched"), []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if key, err := gcstest.NextPut(watch, gcs.NodeKey("certtest-watched"), 10*time.Second); err != nil {
		t.Fatalf("the watch before the revocation: %q %v", key, err)
	}

	// A connection the agent's certificate opened before the revocation.
	open, err := openHTTP2(started.GRPC, gone.PeerClientTLS())
	if err != nil {
		t.Fatalf("an HTTP/2 connection to the gRPC remote before the revocation: %v", err)
	}
	defer open.Close()
	if closedWithin(open, 500*time.Millisecond) {
		t.Fatal("the gRPC remote closed an open connection of a valid certificate")
	}

	if r := run(t, nil, "cert", "revoke", "--session-dir", sess, identity.SerialText(head.Leaf().SerialNumber)); r.code != ExitError || !strings.Contains(r.stderr, "--force") {
		t.Errorf("revoke of the head's certificate without --force: %+v", r)
	}
	if r := run(t, nil, "cert", "revoke", serial, "--session-dir", sess); r.code != 0 || !strings.Contains(r.stdout, "revoked "+serial) {
		t.Fatalf("cert revoke: %+v", r)
	}
	deadline := time.Now().Add(15 * time.Second)
	if !closedWithin(open, 15*time.Second) {
		t.Fatal("the gRPC remote kept a connection of the revoked certificate open")
	}
	t.Log("the gRPC remote closed the connection the revoked certificate had open")
	for what, p := range ports {
		for {
			err := peerRefusal(p.addr, gone.PeerClientTLS(), p.protos...)
			if err != nil {
				t.Logf("%s refuses the revoked certificate: %v", what, err)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still accepts the revoked certificate", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err := peerRefusal(p.addr, head.PeerClientTLS(), p.protos...); err != nil {
			t.Errorf("%s refuses an unrevoked certificate: %v", what, err)
		}
	}
	// The GCS client the certificate opened before its revocation: its requests are refused
	// (the head deletes the certificate's GCS user, then cuts the GCS's open connections,
	// and the client's new handshakes fail), and its watch gets no event of after the
	// revocation.
	for {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := gcsOpen.Put(pctx, gcs.NodeKey("certtest"), []byte("y"), 0)
		pcancel()
		if err != nil {
			t.Logf("the GCS client opened before the revocation is refused: %v", err)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a put on the GCS client opened before the revocation succeeded")
		}
		time.Sleep(50 * time.Millisecond)
	}
	gctx, gcancel := context.WithTimeout(ctx, 2*time.Second)
	if _, _, err := gcsOpen.Get(gctx, gcs.NodeKey("certtest")); err == nil {
		t.Errorf("a get on the GCS client opened before the revocation succeeded")
	}
	gcancel()
	headStore, err := etcdstore.New(ctx, etcdstore.Config{Endpoints: []string{addr}, TLS: head.ClientTLS(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("a GCS client with the head's certificate: %v", err)
	}
	defer headStore.Close()
	for i := 0; ; i++ {
		// The cut follows the revocation by the head's reaction; a put after it must not
		// reach the revoked watch. Puts before it may: they are made until one is not
		// seen for a second.
		key := gcs.NodeKey("certtest-after-" + strconv.Itoa(i))
		if _, err := headStore.Put(ctx, key, []byte("x"), 0); err != nil {
			t.Fatal(err)
		}
		got, err := gcstest.NextPut(watch, key, time.Second)
		if got == "" && err == nil {
			t.Logf("the watch opened before the revocation got no event of the put %d after it", i)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watch opened before the revocation still delivers events (%q %v)", got, err)
		}
	}
	for {
		err := gcsRefusal(addr, gone)
		if errors.Is(err, etcdstore.ErrTLSRefused) {
			t.Logf("the GCS refuses the revoked certificate: %v", err)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the GCS after the revocation: %v, want ErrTLSRefused", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, c := range []*identity.Credentials{head, drv} {
		if err := gcsRefusal(addr, c); err != nil {
			t.Errorf("the GCS refuses the unrevoked certificate of %s: %v", c.Name(), err)
		}
	}
	if c := list()[serial]; c.State != "REVOKED" {
		t.Errorf("cert list after the revocation: %+v", c)
	}
}

// peerNodeEnv, set to a directory, makes the test binary TestCertRevocation's node process:
// it joins the cluster at PEER_NODE_GCS with the token PEER_NODE_TOKEN as a driver (saving
// its credentials in <dir>/tls), starts a driver's node (its gRPC remote and object data
// stream), prints their addresses as JSON and stops when its standard input ends.
const peerNodeEnv = "CLI_TEST_PEER_NODE"

func peerNodeMain() int {
	dir := os.Getenv(peerNodeEnv)
	fail := func(err error) int {
		b, _ := json.Marshal(map[string]string{"Error": err.Error()})
		fmt.Println(string(b))
		return 1
	}
	tok, err := identity.ParseToken(os.Getenv("PEER_NODE_TOKEN"))
	if err != nil {
		return fail(err)
	}
	gcsAddr := os.Getenv("PEER_NODE_GCS")
	joinAddr, err := identity.JoinAddress(gcsAddr)
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	creds, err := identity.Join(ctx, identity.JoinRequest{Address: joinAddr, Token: tok, Role: identity.RoleDriver, Name: "cert-test-driver"})
	if err != nil {
		return fail(err)
	}
	if _, err := creds.Save(filepath.Join(dir, "tls")); err != nil {
		return fail(err)
	}
	store, err := etcdstore.New(ctx, etcdstore.Config{Endpoints: []string{gcsAddr}, TLS: creds.ClientTLS()})
	if err != nil {
		return fail(err)
	}
	defer store.Close()
	n, err := node.Start(ctx, node.Config{Role: node.RoleDriver, GCS: store, Credentials: creds, Dir: filepath.Join(dir, "node"),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return fail(err)
	}
	defer n.Stop(context.Background())
	b, _ := json.Marshal(map[string]string{"Data": n.DataAddress(), "GRPC": n.System().Address()})
	fmt.Println(string(b))
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// TestDashboardTLSFlag: `rayctl start --head --dashboard-tls` prints the dashboard's https
// URL and where the CA to import is, `rayctl status` shows the https URL, and the page
// answers over TLS to a client trusting that CA; --insecure with it is refused.
func TestDashboardTLSFlag(t *testing.T) {
	t.Parallel() // its own head (a process), port and session dir; it mostly waits for it
	sess := filepath.Join(t.TempDir(), "head")
	t.Cleanup(func() { run(t, nil, "stop", "--force", "--session-dir", sess) })
	port := freePort(t)
	r := run(t, nil, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess, "--num-cpus", "1",
		"--dashboard-port", "0", "--dashboard-tls")
	if r.code != 0 || !strings.Contains(r.stdout, "Its dashboard: https://") || !strings.Contains(r.stdout, "ca.crt") {
		t.Fatalf("start --head --dashboard-tls: %+v", r)
	}
	st := run(t, nil, "status", "--session-dir", sess, "-o", "json")
	var status struct{ Dashboard string }
	if st.code != 0 || json.Unmarshal([]byte(st.stdout), &status) != nil || !strings.HasPrefix(status.Dashboard, "https://127.0.0.1:") {
		t.Fatalf("status: %+v (dashboard %q)", st, status.Dashboard)
	}
	files, _ := filepath.Glob(filepath.Join(sess, agentDirPref+"*", "tls", "ca.crt"))
	if len(files) != 1 {
		t.Fatalf("the cluster CA under %s: %v", sess, files)
	}
	caPEM, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := c.Get(status.Dashboard)
	if err != nil {
		t.Fatalf("GET %s: %v", status.Dashboard, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized { // no token given: the page asks for it
		t.Fatalf("GET %s without the token: %d", status.Dashboard, resp.StatusCode)
	}
	insecure := filepath.Join(t.TempDir(), "insecure")
	if r := run(t, nil, "start", "--head", "--insecure", "--session-dir", insecure, "--dashboard-port", "0", "--dashboard-tls"); r.code == 0 ||
		!strings.Contains(r.stderr, "--dashboard-tls") {
		run(t, nil, "stop", "--force", "--session-dir", insecure)
		t.Fatalf("start --insecure --dashboard-tls: %+v", r)
	}
}
