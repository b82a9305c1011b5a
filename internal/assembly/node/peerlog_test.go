package node

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestPeerLogQuietsAPeersDeparture(t *testing.T) {
	var buf bytes.Buffer
	h := newPeerLog(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	now := time.Unix(1000, 0)
	h.st.now = func() time.Time { return now }
	log := slog.New(h).With("component", "remote")
	lines := func() []string {
		s := strings.TrimSpace(buf.String())
		buf.Reset()
		if s == "" {
			return nil
		}
		return strings.Split(s, "\n")
	}
	refused := errors.New(`rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:7001: connect: connection refused"`)

	// What protoactor writes after a peer dies: lost, then five failed reconnects.
	log.Error("EndpointWriter lost connection", slog.String("address", "127.0.0.1:7001"), slog.Any("error", errors.New("EOF")))
	for i := range 5 {
		log.Error("EndpointWriter failed to create receive stream", slog.String("address", "127.0.0.1:7001"), slog.Any("error", refused))
		log.Error("EndpointWriter failed to connect", slog.String("address", "127.0.0.1:7001"), slog.Any("error", refused), slog.Int("retry", i))
	}
	got := lines()
	if len(got) != 1 || !strings.Contains(got[0], "level=WARN") || !strings.Contains(got[0], "lost the connection to a peer") ||
		!strings.Contains(got[0], "127.0.0.1:7001") || !strings.Contains(got[0], "component=remote") {
		t.Fatalf("one peer's departure wrote %d lines, want one WARN with its address:\n%s", len(got), strings.Join(got, "\n"))
	}
	// Another peer gets its own line; the first stays quiet until a minute has passed.
	log.Error("EndpointWriter failed to connect", slog.String("address", "127.0.0.1:7002"), slog.Any("error", refused))
	log.Error("EndpointWriter failed to connect", slog.String("address", "127.0.0.1:7001"), slog.Any("error", refused))
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], "7002") {
		t.Fatalf("a second peer: %q", got)
	}
	now = now.Add(peerLogWindow + time.Second)
	log.Error("EndpointWriter failed to connect", slog.String("address", "127.0.0.1:7001"), slog.Any("error", refused))
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], "7001") {
		t.Fatalf("the first peer a minute later: %q", got)
	}
	// A refused handshake says so.
	log.Error("EndpointWriter failed to create receive stream", slog.String("address", "127.0.0.1:7003"),
		slog.Any("error", errors.New(`connection error: desc = "transport: authentication handshake failed: identity: not a member of this cluster"`)))
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], "certificate") || !strings.Contains(got[0], "level=WARN") {
		t.Fatalf("a refused handshake: %q", got)
	}
	// Everything else passes unchanged.
	log.Error("EndpointWriter failed to serialize message", slog.String("address", "127.0.0.1:7001"))
	log.Warn("membership: something")
	log.Info("EndpointWriter connected", slog.String("address", "127.0.0.1:7001"))
	got = lines()
	if len(got) != 2 || !strings.Contains(got[0], "level=ERROR") || !strings.Contains(got[0], "failed to serialize") || !strings.Contains(got[1], "membership") {
		t.Fatalf("other records: %q", got)
	}
}

func TestPeerLogPassesDebugWhenEnabled(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(newPeerLog(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	for range 3 {
		log.Error("EndpointWriter failed to connect", slog.String("address", "a:1"), slog.Any("error", errors.New("refused")))
	}
	out := buf.String()
	if strings.Count(out, "level=WARN") != 1 || strings.Count(out, "level=DEBUG") != 2 || strings.Contains(out, "level=ERROR") {
		t.Fatalf("with DEBUG on: %s", out)
	}
}

// TestPeerLogQuietWhileStopping: once its node stops, a peer's departure (the node's own
// shutdown: a driver's job ends and its worker with it) is not a WARN; other records still
// pass.
func TestPeerLogQuietWhileStopping(t *testing.T) {
	var buf bytes.Buffer
	log, stopping, _ := peerLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})))
	lost := func(addr string) {
		log.Error("EndpointWriter lost connection", slog.String("address", addr), slog.Any("error", errors.New("EOF")))
	}
	lost("127.0.0.1:7001")
	if !strings.Contains(buf.String(), "level=WARN") {
		t.Fatalf("before the stop, a departure: %q, want a WARN", buf.String())
	}
	buf.Reset()
	stopping()
	lost("127.0.0.1:7002")
	log.Warn("membership: something")
	if got := strings.TrimSpace(buf.String()); strings.Contains(got, "7002") || !strings.Contains(got, "membership") {
		t.Fatalf("while stopping: %q, want only the other record", got)
	}
}

// TestPeerLogConcern: a departed peer this process does not depend on (the concern
// function says so: a process of another job) is DEBUG; one it does depend on is the one
// WARN; a refused handshake is a WARN whatever the peer.
func TestPeerLogConcern(t *testing.T) {
	var buf bytes.Buffer
	log, _, setConcern := peerLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	setConcern(func(addr string) bool { return addr == "127.0.0.1:7001" })
	lost := func(addr string, err error) {
		log.Error("EndpointWriter lost connection", slog.String("address", addr), slog.Any("error", err))
	}
	lost("127.0.0.1:7002", errors.New("EOF"))
	lost("127.0.0.1:7002", errors.New("EOF"))
	if got := buf.String(); strings.Contains(got, "level=WARN") || strings.Count(got, "level=DEBUG") != 2 {
		t.Fatalf("another job's peer: %q, want two DEBUG lines", got)
	}
	buf.Reset()
	lost("127.0.0.1:7001", errors.New("EOF"))
	if got := buf.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, "lost the connection to a peer") {
		t.Fatalf("a peer of this process: %q, want the WARN", got)
	}
	buf.Reset()
	lost("127.0.0.1:7003", errors.New(`connection error: desc = "transport: authentication handshake failed: x509"`))
	if got := buf.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, "certificate") {
		t.Fatalf("a refused handshake from a peer of no concern: %q, want the WARN", got)
	}
}
