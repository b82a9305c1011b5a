package etcdstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/namespace"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ray-go/ray/internal/base/gcs"
)

// DefaultDialTimeout bounds how long New waits for the cluster to answer.
const DefaultDialTimeout = 5 * time.Second

// reconnectBackoff paces a client's attempts to connect again to a member that went away
// (a head stopped or killed, then restarted on the same port). gRPC's default backoff grows
// to 120 s: after a minute or two down, the next attempt came up to a minute after the
// member was back, and an agent took that long to rejoin. Capped at 2 s (as Ray's GCS
// clients are: gcs_grpc_max_reconnect_backoff_ms), a client reconnects within about 2 s of
// the member answering again, and a member that stays down sees one connection attempt per
// client every ~2 s. Calls made meanwhile wait for the connection (etcd's client sends
// them wait-for-ready) without connecting themselves.
var reconnectBackoff = grpc.ConnectParams{
	Backoff: backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
	// gRPC's default; WithConnectParams would otherwise make it 0 (each attempt then gets
	// only the current backoff, as little as 100 ms, for its TCP and TLS handshakes).
	MinConnectTimeout: 20 * time.Second,
}

// Config configures a Store connected to an etcd cluster over gRPC.
type Config struct {
	// Endpoints are the client URLs of the etcd members, e.g. "http://10.0.0.1:2379".
	Endpoints []string
	// DialTimeout bounds New: if no member answers within it, New fails (default 5 s).
	DialTimeout time.Duration
	// Namespace is a key prefix under which the whole store lives (etcd's namespace
	// package): several clusters can share one etcd. Keys, watches and lists never see
	// anything outside it.
	Namespace string
	// Logger receives the etcd client's errors (default: discard).
	Logger *slog.Logger
	// TLS is the client's TLS configuration: the CA it trusts and the certificate it
	// presents (identity.Credentials.ClientTLS). Nil: plain text, which a GCS with TLS
	// refuses (ErrNeedsTLS).
	TLS *tls.Config
}

// Errors of New about credentials, to branch on (the CLI gives them their own exit code).
var (
	// ErrNeedsTLS: the GCS speaks TLS and this client was given no credentials.
	ErrNeedsTLS = errors.New("etcdstore: the GCS requires TLS with a client certificate, and this client has none")
	// ErrTLSRefused: the TLS handshake failed: the GCS refused this client's certificate,
	// or this client does not trust the GCS's.
	ErrTLSRefused = errors.New("etcdstore: TLS handshake with the GCS failed")
	// ErrNoAccess: the GCS took the certificate but refuses its requests (etcd auth: no
	// user for it, or its user was deleted when the certificate was revoked). It wraps
	// gcs.ErrPermissionDenied.
	ErrNoAccess = fmt.Errorf("etcdstore: the GCS grants this certificate no access: %w", gcs.ErrPermissionDenied)
)

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if len(c.Endpoints) == 0 {
		return errors.New("etcdstore: no endpoints")
	}
	for _, ep := range c.Endpoints {
		if ep == "" {
			return errors.New("etcdstore: empty endpoint")
		}
	}
	if c.DialTimeout < 0 {
		return errors.New("etcdstore: negative DialTimeout")
	}
	return nil
}

// Store implements gcs.Store over an etcd v3 client. Create it with New (gRPC) or
// Embedded.Client (in-process).
type Store struct {
	cli     *clientv3.Client
	kv      clientv3.KV
	watcher clientv3.Watcher
	lease   clientv3.Lease
	ns      string          // namespace; the watcher is not wrapped (see Watch)
	ctx     context.Context // canceled by Close
	cancel  context.CancelFunc
	onClose func(*Store)
	wg      sync.WaitGroup // watch and keep-alive goroutines

	mu     sync.Mutex
	closed bool

	// set by New (nil for Embedded.Client): what Refused dials
	endpoints []string
	tls       *tls.Config
}

var _ gcs.Store = (*Store)(nil)

// Refused says whether the GCS refuses this client's certificate, given err, a call's
// failure: an error wrapping ErrNoAccess (its requests are refused: the certificate's
// GCS user is gone, as when it is revoked) or ErrTLSRefused (the GCS refuses its
// handshakes, as after a revocation, when gRPC reports only a deadline), found by a
// handshake of its own, as New does. Nil: not refused (the GCS is unreachable, say, or
// the call failed otherwise), or a Store of Embedded.Client. For a long-running client
// whose calls fail (an agent's); New classifies its own failures the same way, and the
// CLI gives both the same exit code (ExitCredentials).
func (s *Store) Refused(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, gcs.ErrPermissionDenied) {
		if errors.Is(err, ErrNoAccess) {
			return err
		}
		return fmt.Errorf("%w: %v", ErrNoAccess, err)
	}
	if len(s.endpoints) == 0 || s.tls == nil {
		return nil
	}
	if derr := diagnoseTLS(s.endpoints[0], s.tls); errors.Is(derr, ErrTLSRefused) {
		return errorf("etcdstore: etcd at %s: %w", strings.Join(s.endpoints, ","), derr)
	}
	return nil
}

// New connects to an etcd cluster. It fails, naming the endpoints, if no member answers
// a read within cfg.DialTimeout (or before ctx ends).
func New(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	timeout := cfg.DialTimeout
	if timeout == 0 {
		timeout = DefaultDialTimeout
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            cfg.Endpoints,
		DialTimeout:          timeout,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		PermitWithoutStream:  true,
		MaxCallSendMsgSize:   2 << 20,
		Logger:               zapLogger(cfg.Logger, zapcore.ErrorLevel),
		TLS:                  cfg.TLS,
		DialOptions:          []grpc.DialOption{grpc.WithConnectParams(reconnectBackoff)},
	})
	if err != nil {
		return nil, fmt.Errorf("etcdstore: connect to %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The probe reads a key of the namespace: with auth on, a client may read nothing else.
	probe := clientv3.KV(cli.KV)
	if cfg.Namespace != "" {
		probe = namespace.NewKV(cli.KV, cfg.Namespace)
	}
	_, err = probe.Get(pctx, "gcs-probe", clientv3.WithCountOnly())
	if is(err, rpctypes.ErrPermissionDenied) || is(err, rpctypes.ErrUserEmpty) {
		_ = cli.Close()
		return nil, errorf("etcdstore: etcd at %s: %w: it accepts this client's certificate but grants it no access to the cluster's keys "+
			"(a certificate revoked since, or one the cluster made no user for): %v", strings.Join(cfg.Endpoints, ","), ErrNoAccess, err)
	}
	if err != nil {
		_ = cli.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("etcdstore: connect to %s: %w", strings.Join(cfg.Endpoints, ","), ctx.Err())
		}
		if derr := diagnoseTLS(cfg.Endpoints[0], cfg.TLS); derr != nil {
			return nil, errorf("etcdstore: etcd at %s: %w", strings.Join(cfg.Endpoints, ","), derr)
		}
		return nil, fmt.Errorf("etcdstore: etcd at %s did not answer within %v: %w",
			strings.Join(cfg.Endpoints, ","), timeout, err)
	}
	st := newStore(cli, cfg.Namespace, nil)
	st.endpoints, st.tls = cfg.Endpoints, cfg.TLS
	return st, nil
}

// diagnoseTLS explains a GCS that did not answer, when TLS is why (gRPC only reports a
// deadline): without credentials, it checks whether the server speaks TLS; with them, it
// runs a handshake of its own to get the error. Nil means: not a TLS problem (or the
// endpoint cannot be reached at all).
func diagnoseTLS(endpoint string, cfg *tls.Config) error {
	addr := strings.TrimPrefix(strings.TrimPrefix(endpoint, "https://"), "http://")
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	d := &net.Dialer{Timeout: 2 * time.Second}
	probe := &tls.Config{InsecureSkipVerify: true} // only: does it speak TLS?
	if cfg != nil {
		probe = cfg.Clone()
		if probe.ServerName == "" {
			probe.ServerName = host
		}
	}
	conn, err := tls.DialWithDialer(d, "tcp", addr, probe)
	if err != nil {
		var op *net.OpError
		var rec tls.RecordHeaderError
		switch {
		case errors.As(err, &op) && op.Op == "dial":
			return nil // nothing there: not a TLS problem
		case errors.As(err, &rec):
			if cfg == nil {
				return nil // plain text on both sides
			}
			return fmt.Errorf("%w: the GCS speaks plain text (a cluster started with --insecure: pass --insecure here too)", ErrTLSRefused)
		case cfg == nil:
			return ErrNeedsTLS
		}
		return fmt.Errorf("%w: %v (the GCS and this client must hold certificates of the same cluster CA, and this one must not be revoked)", ErrTLSRefused, err)
	}
	defer conn.Close()
	if cfg == nil {
		return ErrNeedsTLS
	}
	// TLS 1.3 servers report a refused client certificate after the handshake: read.
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := conn.Read(make([]byte, 1)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			return fmt.Errorf("%w: %v (the GCS and this client must hold certificates of the same cluster CA, and this one must not be revoked)", ErrTLSRefused, err)
		}
	}
	return nil
}

func newStore(cli *clientv3.Client, ns string, onClose func(*Store)) *Store {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Store{cli: cli, kv: cli.KV, watcher: cli.Watcher, lease: cli.Lease, ns: ns, ctx: ctx, cancel: cancel, onClose: onClose}
	if ns != "" {
		// Not namespace.NewWatcher: it strips the prefix from event keys in place, and the
		// in-process client hands the same event objects to every watcher (a data race).
		s.kv = namespace.NewKV(cli.KV, ns)
		s.lease = namespace.NewLease(cli.Lease, ns)
	}
	return s
}

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// begin returns the error a call must fail with before it is sent. Checking ctx first
// matters: etcd may apply a write proposed with an already canceled context.
func (s *Store) begin(ctx context.Context, op string) error {
	if s.isClosed() {
		return fmt.Errorf("etcdstore: %s: %w", op, gcs.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	return nil
}

// wrap turns an etcd client error into one that satisfies errors.Is with the gcs
// sentinels, context errors, or ErrClosed.
func (s *Store) wrap(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if s.isClosed() {
		return fmt.Errorf("etcdstore: %s: %w", op, gcs.ErrClosed)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("etcdstore: %s: %w", op, ctx.Err())
	}
	if sentinel := translate(err); sentinel != nil {
		return fmt.Errorf("etcdstore: %s: %w (%w)", op, sentinel, err)
	}
	return fmt.Errorf("etcdstore: %s: %w", op, err)
}

func is(err error, target error) bool {
	return errors.Is(err, target) || rpctypes.ErrorDesc(err) == target.Error()
}

// authOldRevision reports a request refused because the auth store changed while it was in
// flight. A watch's refusal carries the gRPC error's whole text as its cancel reason
// ("rpc error: code = InvalidArgument desc = etcdserver: revision of auth store is old"),
// which etcd's client does not map back to rpctypes.ErrAuthOldRevision.
func authOldRevision(err error) bool {
	return is(err, rpctypes.ErrAuthOldRevision) || strings.Contains(err.Error(), rpctypes.ErrAuthOldRevision.Error())
}

func translate(err error) error {
	switch {
	case is(err, rpctypes.ErrLeaseNotFound):
		return gcs.ErrLeaseNotFound
	case is(err, rpctypes.ErrCompacted):
		return gcs.ErrCompacted
	case is(err, rpctypes.ErrFutureRev):
		return gcs.ErrFutureRev
	case is(err, rpctypes.ErrTooManyOps), is(err, rpctypes.ErrRequestTooLarge):
		return gcs.ErrTooLarge
	case is(err, rpctypes.ErrDuplicateKey):
		return gcs.ErrDuplicateKey
	case is(err, rpctypes.ErrEmptyKey):
		return gcs.ErrEmptyKey
	case is(err, rpctypes.ErrNoSpace):
		return gcs.ErrNoSpace
	case is(err, rpctypes.ErrPermissionDenied), is(err, rpctypes.ErrUserEmpty), is(err, rpctypes.ErrUserNotFound):
		return gcs.ErrPermissionDenied
	case status.Code(err) == codes.ResourceExhausted: // gRPC message size limits
		return gcs.ErrTooLarge
	}
	return nil
}

func toKV(kv *mvccpb.KeyValue) gcs.KV {
	return gcs.KV{
		Key:       string(kv.Key),
		Value:     kv.Value,
		CreateRev: kv.CreateRevision,
		ModRev:    kv.ModRevision,
		Lease:     gcs.LeaseID(kv.Lease),
	}
}

// Get implements gcs.Store.
func (s *Store) Get(ctx context.Context, key string) (gcs.KV, bool, error) {
	if err := s.begin(ctx, "get"); err != nil {
		return gcs.KV{}, false, err
	}
	if key == "" {
		return gcs.KV{}, false, fmt.Errorf("etcdstore: get: %w", gcs.ErrEmptyKey)
	}
	resp, err := s.kv.Get(ctx, key)
	if err != nil {
		return gcs.KV{}, false, s.wrap(ctx, "get "+key, err)
	}
	if len(resp.Kvs) == 0 {
		return gcs.KV{}, false, nil
	}
	return toKV(resp.Kvs[0]), true, nil
}

// listPageBytes is the response size List aims for per page.
const listPageBytes = 4 << 20

// List implements gcs.Store. It reads in pages at one revision, so the result is a
// consistent snapshot however large it is.
func (s *Store) List(ctx context.Context, prefix string) ([]gcs.KV, int64, error) {
	if err := s.begin(ctx, "list"); err != nil {
		return nil, 0, err
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var (
			kvs []gcs.KV
			rev int64
		)
		kvs, rev, err = s.list(ctx, prefix)
		if err == nil {
			return kvs, rev, nil
		}
		if !errors.Is(err, gcs.ErrCompacted) { // compacted between pages: start again
			break
		}
	}
	return nil, 0, err
}

func (s *Store) list(ctx context.Context, prefix string) ([]gcs.KV, int64, error) {
	end := clientv3.GetPrefixRangeEnd(prefix)
	key, limit := prefix, int64(256)
	var (
		out []gcs.KV
		rev int64
	)
	for {
		opts := []clientv3.OpOption{clientv3.WithLimit(limit)}
		if key == "" {
			opts = append(opts, clientv3.WithPrefix())
		} else {
			opts = append(opts, clientv3.WithRange(end))
		}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := s.kv.Get(ctx, key, opts...)
		if err != nil {
			return nil, 0, s.wrap(ctx, "list "+prefix, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		size := 0
		for _, kv := range resp.Kvs {
			out = append(out, toKV(kv))
			size += len(kv.Key) + len(kv.Value)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return out, rev, nil
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		per := max(1, size/len(resp.Kvs))
		limit = int64(min(4096, max(16, listPageBytes/per)))
	}
}

// Count implements gcs.Store.
func (s *Store) Count(ctx context.Context, prefix string) (int64, error) {
	if err := s.begin(ctx, "count"); err != nil {
		return 0, err
	}
	resp, err := s.kv.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, s.wrap(ctx, "count "+prefix, err)
	}
	return resp.Count, nil
}

// Put implements gcs.Store.
func (s *Store) Put(ctx context.Context, key string, value []byte, id gcs.LeaseID) (int64, error) {
	if err := s.begin(ctx, "put"); err != nil {
		return 0, err
	}
	if err := gcs.CheckTxn(nil, []gcs.Op{{Kind: gcs.OpPut, Key: key, Value: value}}); err != nil {
		return 0, fmt.Errorf("etcdstore: put: %w", err)
	}
	var opts []clientv3.OpOption
	if id != 0 {
		opts = append(opts, clientv3.WithLease(clientv3.LeaseID(id)))
	}
	resp, err := s.kv.Put(ctx, key, string(value), opts...)
	if err != nil {
		return 0, s.wrap(ctx, "put "+key, err)
	}
	return resp.Header.Revision, nil
}

// Delete implements gcs.Store.
func (s *Store) Delete(ctx context.Context, key string) (int64, error) {
	if err := s.begin(ctx, "delete"); err != nil {
		return 0, err
	}
	if key == "" {
		return 0, fmt.Errorf("etcdstore: delete: %w", gcs.ErrEmptyKey)
	}
	resp, err := s.kv.Delete(ctx, key)
	if err != nil {
		return 0, s.wrap(ctx, "delete "+key, err)
	}
	return resp.Header.Revision, nil
}

// Txn implements gcs.Store.
func (s *Store) Txn(ctx context.Context, cmps []gcs.Cmp, ops []gcs.Op) (bool, int64, error) {
	if err := s.begin(ctx, "txn"); err != nil {
		return false, 0, err
	}
	if err := gcs.CheckTxn(cmps, ops); err != nil {
		return false, 0, fmt.Errorf("etcdstore: txn: %w", err)
	}
	cs := make([]clientv3.Cmp, len(cmps))
	for i, c := range cmps {
		cs[i] = clientv3.Compare(clientv3.ModRevision(c.Key), "=", c.ModRev)
	}
	eops := make([]clientv3.Op, len(ops))
	for i, op := range ops {
		switch op.Kind {
		case gcs.OpPut:
			if op.Lease != 0 {
				eops[i] = clientv3.OpPut(op.Key, string(op.Value), clientv3.WithLease(clientv3.LeaseID(op.Lease)))
			} else {
				eops[i] = clientv3.OpPut(op.Key, string(op.Value))
			}
		case gcs.OpDelete:
			eops[i] = clientv3.OpDelete(op.Key)
		case gcs.OpDeletePrefix:
			eops[i] = clientv3.OpDelete(op.Key, clientv3.WithPrefix())
		}
	}
	resp, err := s.kv.Txn(ctx).If(cs...).Then(eops...).Commit()
	if err != nil {
		return false, 0, s.wrap(ctx, fmt.Sprintf("txn of %d ops", len(ops)), err)
	}
	return resp.Succeeded, resp.Header.Revision, nil
}

// Watch implements gcs.Store.
func (s *Store) Watch(ctx context.Context, prefix string, fromRev int64) <-chan gcs.WatchResponse {
	out := make(chan gcs.WatchResponse, 1)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		out <- gcs.WatchResponse{Err: fmt.Errorf("etcdstore: watch: %w", gcs.ErrClosed)}
		close(out)
		return out
	}
	s.wg.Add(1)
	s.mu.Unlock()
	wctx, cancel := context.WithCancel(ctx)
	open := func(fromRev int64) clientv3.WatchChan {
		opts := []clientv3.OpOption{clientv3.WithPrefix()}
		if fromRev > 0 {
			opts = append(opts, clientv3.WithRev(fromRev))
		}
		return s.watcher.Watch(wctx, s.ns+prefix, opts...)
	}
	// Created here, not in the goroutine: etcd's client has sent the creation request when
	// Watch returns, so a watch of "now" sees what the caller writes after.
	go s.watch(ctx, cancel, open, open(fromRev), fromRev, out)
	return out
}

// watch relays the events of wch, the watch open(fromRev) created, to out. etcd refuses to
// create a watch when the auth store changed while the request was in flight (a user
// added by a join, deleted when a driver's certificate is released: "revision of auth
// store is old"), and etcd's client does not retry that for a watch as it does for a
// unary request; so watch creates it again (from the revision after the last event it
// relayed, or after the refusal's for a watch of "now"), backing off as retryAuth does.
func (s *Store) watch(ctx context.Context, cancel context.CancelFunc, open func(int64) clientv3.WatchChan, wch clientv3.WatchChan, fromRev int64, out chan<- gcs.WatchResponse) {
	defer s.wg.Done()
	defer close(out)
	defer cancel()
	next := fromRev // the revision to watch from if the watch must be created again
	var (
		refusedSince time.Time
		wait         = authRetryFirst
	)
	closedResp := func() {
		select {
		case out <- gcs.WatchResponse{Err: fmt.Errorf("etcdstore: watch: %w", gcs.ErrClosed)}:
		default:
		}
	}
	for {
		var (
			wr clientv3.WatchResponse
			ok bool
		)
		select {
		case wr, ok = <-wch:
		case <-ctx.Done():
			return
		case <-s.ctx.Done():
			closedResp()
			return
		}
		var resp gcs.WatchResponse
		switch {
		case !ok && ctx.Err() != nil:
			return
		case !ok && s.ctx.Err() != nil:
			closedResp()
			return
		case !ok:
			resp.Err = errors.New("etcdstore: watch ended by the client")
		case wr.Err() != nil && authOldRevision(wr.Err()) && (refusedSince.IsZero() || time.Since(refusedSince) < authRetryFor):
			if refusedSince.IsZero() {
				refusedSince = time.Now()
			}
			if next <= 0 && wr.Header.Revision > 0 {
				next = wr.Header.Revision + 1
			}
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			case <-s.ctx.Done():
				t.Stop()
				closedResp()
				return
			}
			wait = min(2*wait, authRetryMax)
			wch = open(next)
			continue
		case wr.Err() != nil:
			resp.Err = s.wrap(ctx, "watch", wr.Err())
			if wr.CompactRevision != 0 {
				resp.Err = fmt.Errorf("etcdstore: watch (compacted at %d): %w", wr.CompactRevision, gcs.ErrCompacted)
			}
		case len(wr.Events) == 0:
			continue
		default:
			refusedSince, wait = time.Time{}, authRetryFirst
			next = wr.Events[len(wr.Events)-1].Kv.ModRevision + 1
			resp.Events = make([]gcs.Event, len(wr.Events))
			for i, ev := range wr.Events { // shared with other watchers: read only
				key := string(ev.Kv.Key[len(s.ns):])
				e := gcs.Event{Type: gcs.EventPut, KV: gcs.KV{Key: key, ModRev: ev.Kv.ModRevision}}
				if ev.Type == mvccpb.DELETE {
					e.Type = gcs.EventDelete
				} else {
					e.KV.Value, e.KV.CreateRev, e.KV.Lease = ev.Kv.Value, ev.Kv.CreateRevision, gcs.LeaseID(ev.Kv.Lease)
				}
				resp.Events[i] = e
			}
		}
		select {
		case out <- resp:
		case <-ctx.Done():
			return
		case <-s.ctx.Done():
			closedResp()
			return
		}
		if resp.Err != nil {
			return
		}
	}
}

// Grant implements gcs.Store. TTLs are whole seconds, at least 1.
func (s *Store) Grant(ctx context.Context, ttl time.Duration) (gcs.LeaseID, error) {
	if err := s.begin(ctx, "grant"); err != nil {
		return 0, err
	}
	secs := max(1, int64(math.Ceil(ttl.Seconds())))
	resp, err := s.lease.Grant(ctx, secs)
	if err != nil {
		return 0, s.wrap(ctx, "grant", err)
	}
	return gcs.LeaseID(resp.ID), nil
}

// KeepAlive implements gcs.Store with the client's keep-alive loop (a renewal every
// TTL/3); lost is closed when etcd reports the lease gone, when no renewal succeeded for a
// TTL, when ctx ends or when the Store is closed.
func (s *Store) KeepAlive(ctx context.Context, id gcs.LeaseID) (<-chan struct{}, error) {
	if err := s.begin(ctx, "keepalive"); err != nil {
		return nil, err
	}
	// The client's KeepAlive does not report a missing lease; one renewal does.
	if _, err := s.lease.KeepAliveOnce(ctx, clientv3.LeaseID(id)); err != nil {
		return nil, s.wrap(ctx, fmt.Sprintf("keepalive %x", int64(id)), err)
	}
	kctx, cancel := context.WithCancel(ctx)
	ch, err := s.lease.KeepAlive(kctx, clientv3.LeaseID(id))
	if err != nil {
		cancel()
		return nil, s.wrap(ctx, fmt.Sprintf("keepalive %x", int64(id)), err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		return nil, fmt.Errorf("etcdstore: keepalive: %w", gcs.ErrClosed)
	}
	s.wg.Add(1)
	s.mu.Unlock()
	lost := make(chan struct{})
	go func() {
		defer s.wg.Done()
		defer close(lost)
		defer cancel()
		for {
			select {
			case _, ok := <-ch:
				if !ok {
					return
				}
			case <-s.ctx.Done():
				return
			}
		}
	}()
	return lost, nil
}

// Revoke implements gcs.Store.
func (s *Store) Revoke(ctx context.Context, id gcs.LeaseID) error {
	if err := s.begin(ctx, "revoke"); err != nil {
		return err
	}
	if _, err := s.lease.Revoke(ctx, clientv3.LeaseID(id)); err != nil {
		return s.wrap(ctx, fmt.Sprintf("revoke %x", int64(id)), err)
	}
	return nil
}

// Compact implements gcs.Store. It returns once the compaction revision is set (watches
// from before it fail from then on); etcd frees the space in the background.
func (s *Store) Compact(ctx context.Context, rev int64) error {
	if err := s.begin(ctx, "compact"); err != nil {
		return err
	}
	if _, err := s.kv.Compact(ctx, rev); err != nil {
		return s.wrap(ctx, fmt.Sprintf("compact %d", rev), err)
	}
	return nil
}

// Revision implements gcs.Store (a linearizable read).
func (s *Store) Revision(ctx context.Context) (int64, error) {
	if err := s.begin(ctx, "revision"); err != nil {
		return 0, err
	}
	resp, err := s.kv.Get(ctx, "gcs-revision-probe", clientv3.WithCountOnly())
	if err != nil {
		return 0, s.wrap(ctx, "revision", err)
	}
	return resp.Header.Revision, nil
}

// Close implements gcs.Store: it ends watches and keep-alives, waits for their goroutines
// and closes the client.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("etcdstore: close: %w", gcs.ErrClosed)
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	err := s.cli.Close()
	s.wg.Wait()
	if s.onClose != nil {
		s.onClose(s)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("etcdstore: close: %w", err)
	}
	return nil
}

// errorf is fmt.Errorf for this package's errors, which start "etcdstore: ", wrapping one
// of its sentinels (ErrTLSRefused, ErrNoAccess), which start so too: the message says the
// prefix once ("etcdstore: etcd at X: TLS handshake ...", not "...: etcdstore: TLS
// handshake ..."). errors.Is and errors.As see the wrapped errors as fmt.Errorf's.
func errorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	msg := err.Error()
	if !strings.Contains(msg, ": etcdstore: ") {
		return err
	}
	return &onePrefixError{msg: strings.ReplaceAll(msg, ": etcdstore: ", ": "), err: err}
}

// onePrefixError is err with its message msg.
type onePrefixError struct {
	msg string
	err error
}

func (e *onePrefixError) Error() string { return e.msg }
func (e *onePrefixError) Unwrap() error { return e.err }
