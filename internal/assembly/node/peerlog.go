package node

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// peerLog quiets what protoactor's endpoint writer logs when a peer goes away. It logs
// "EndpointWriter lost connection / failed to connect / failed to create receive stream"
// at ERROR, five times 2 s apart per peer: after one node death every process of the
// cluster wrote ten such lines, into users' job logs, about something the runtime handles
// (the node leaves the view, its tasks are retried, its objects reconstructed). peerLog
// turns the first of them per peer and minute into one WARN line that says what happened,
// and the rest into DEBUG. A refused TLS handshake (a peer of another cluster) stays a
// WARN per peer and minute, saying so. Once its node stops (stopping), a peer's departure
// is the shutdown's own (a driver's job ends, and its worker with it): DEBUG. So is the
// departure of a peer the node's concern function (setConcern) says this process does not
// depend on: in a cluster, a process of another job (every process connects to every
// other now and then, e.g. to ask it to collect, so a job that ends, however cleanly,
// used to put a WARN into every other running job's output). Every other record passes
// unchanged.
type peerLog struct {
	slog.Handler
	st *peerLogState
}

type peerLogState struct {
	stopping atomic.Bool // the node is stopping: no connection error is news
	// concern reports whether this process depends on the peer at an address (nil: on
	// every peer): a lost connection to one it does not is DEBUG.
	concern atomic.Pointer[func(addr string) bool]

	mu   sync.Mutex
	seen map[string]time.Time // peer address -> when its last WARN was written
	now  func() time.Time
}

// peerLogWindow is how long after a peer's WARN its further connection errors are DEBUG.
const peerLogWindow = time.Minute

// peerLogMax bounds the peers remembered (the map is cleared when it is reached).
const peerLogMax = 1024

func newPeerLog(h slog.Handler) *peerLog {
	return &peerLog{Handler: h, st: &peerLogState{seen: map[string]time.Time{}, now: time.Now}}
}

// peerLogger wraps a logger's handler in peerLog; stopping quiets it for good, and
// setConcern sets the function that says which peers this process depends on.
func peerLogger(l *slog.Logger) (logger *slog.Logger, stopping func(), setConcern func(func(addr string) bool)) {
	p := newPeerLog(l.Handler())
	return slog.New(p), func() { p.st.stopping.Store(true) }, func(f func(string) bool) { p.st.concern.Store(&f) }
}

// concerns reports whether a lost connection to the peer at addr is news to this process.
func (s *peerLogState) concerns(addr string) bool {
	f := s.concern.Load()
	return f == nil || (*f)(addr)
}

// connectionErrors are the endpoint writer's messages about a peer it cannot reach.
var connectionErrors = map[string]bool{
	"EndpointWriter lost connection":                 true,
	"EndpointWriter failed to connect":               true,
	"EndpointWriter failed to create receive stream": true,
}

func (p *peerLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Level != slog.LevelError || !connectionErrors[r.Message] {
		return p.Handler.Handle(ctx, r)
	}
	var addr, errText string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "address":
			addr = a.Value.String()
		case "error":
			errText = a.Value.String()
		}
		return true
	})
	level, msg := slog.LevelDebug, r.Message
	refused := strings.Contains(errText, "authentication handshake failed")
	if !p.st.stopping.Load() && (refused || p.st.concerns(addr)) && p.st.first(addr) {
		level = slog.LevelWarn
		if refused {
			msg = "node: a peer refused this node's certificate, or presented one of another cluster; no messages go to it"
		} else {
			msg = "node: lost the connection to a peer (its process stopped, or the network is cut); messages to it are dropped " +
				"while it is away, and the cluster handles a node that is gone (further connection errors to it for a minute are DEBUG)"
		}
	}
	if !p.Handler.Enabled(ctx, level) {
		return nil
	}
	out := slog.NewRecord(r.Time, level, msg, r.PC)
	r.Attrs(func(a slog.Attr) bool { out.AddAttrs(a); return true })
	return p.Handler.Handle(ctx, out)
}

// first reports whether addr's connection errors should be written as a WARN now: its
// first in peerLogWindow.
func (s *peerLogState) first(addr string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if last, ok := s.seen[addr]; ok && now.Sub(last) < peerLogWindow {
		return false
	}
	if len(s.seen) >= peerLogMax {
		clear(s.seen)
	}
	s.seen[addr] = now
	return true
}

func (p *peerLog) Enabled(ctx context.Context, l slog.Level) bool { return p.Handler.Enabled(ctx, l) }

func (p *peerLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &peerLog{Handler: p.Handler.WithAttrs(attrs), st: p.st}
}

func (p *peerLog) WithGroup(name string) slog.Handler {
	return &peerLog{Handler: p.Handler.WithGroup(name), st: p.st}
}
