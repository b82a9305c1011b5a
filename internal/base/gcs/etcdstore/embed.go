package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.etcd.io/etcd/server/v3/wal"
	"go.uber.org/zap/zapcore"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/identity"
)

// Defaults of EmbedConfig.
const (
	DefaultQuotaBytes          = 2 << 30 // etcd's own default backend quota
	DefaultCompactionRetention = 10_000  // revisions kept by auto-compaction
	DefaultSnapshotCount       = 1_000   // raft entries between snapshots
	DefaultStartTimeout        = 30 * time.Second
)

// The write-ahead log on disk (the GCS directory's bound, doc.go): etcd keeps maxWALFiles
// of its segment files and maxSnapFiles snapshots, and cannot remove a segment that holds
// entries after the newest snapshot (SnapshotCount entries at most), and it preallocates
// the next segment. A segment is WALSegmentBytes, set for every etcd server of this
// process when the package is initialized (etcd's wal.SegmentSizeBytes, 64 MB by default,
// is a package variable read when a segment is created).
const (
	WALSegmentBytes = 16 << 20
	maxWALFiles     = 2
	maxSnapFiles    = 2
)

func init() { wal.SegmentSizeBytes = WALSegmentBytes }

// EmbedConfig configures a single-member etcd server running inside this process (local
// mode, `rayctl start --head`, tests).
type EmbedConfig struct {
	// Dir holds the member's data (WAL, snapshots, bbolt database). Required. Starting
	// again on the same Dir recovers the data.
	Dir string
	// Name is the member name (default "gcs").
	Name string
	// Host is the address the server listens on and advertises (default 127.0.0.1; a
	// cluster spanning machines needs an address the others reach).
	Host string
	// ClientPort and PeerPort are the ports on Host; 0 picks a free one.
	ClientPort, PeerPort int
	// Namespace is the key prefix of the stores Client returns (see Config.Namespace).
	Namespace string
	// QuotaBytes is the backend size at which etcd refuses writes (default 2 GiB).
	QuotaBytes int64
	// CompactionRetention is how many revisions auto-compaction keeps (etcd's "revision"
	// mode; default 10 000). etcd runs it every 5 minutes, compacting to the current
	// revision minus the retention: a watcher may fall that many revisions behind and still
	// resume without a gap. Writers that produce many revisions per second should also
	// compact themselves (Store.Compact) to keep the database small.
	CompactionRetention int
	// SnapshotCount is how many raft entries are applied between snapshots (default
	// 1 000; etcd's is 100 000). The raft log in memory and the write-ahead log files etcd
	// must keep on disk are bounded by it, which matters because GCS transactions are large
	// (up to 1.5 MiB each).
	SnapshotCount uint64
	// InitialCluster, for a member of a multi-member cluster, names every member's peer URL
	// ("name=http://host:port,..."; this member's entry must use Name and PeerPort). Empty:
	// a single-member cluster.
	InitialCluster string
	// UnsafeNoFsync skips fsync (faster, loses recent writes on a machine crash). For
	// tests and benchmarks only.
	UnsafeNoFsync bool
	// StartTimeout bounds the wait for the server to become ready (default 30 s).
	StartTimeout time.Duration
	// DefragEvery is how often the server checks whether its database file is sparse
	// enough to rewrite (defrag.go; default DefaultDefragEvery, negative: never), and
	// DefragMinBytes the smallest file worth it (default DefaultDefragMinBytes).
	DefragEvery    time.Duration
	DefragMinBytes int64
	// AlarmDefragEvery is how often a file at its quota (NOSPACE alarm on) is rewritten in
	// the hope that deletes freed space (default DefaultAlarmDefragEvery; each rewrite
	// copies the whole live data and blocks the member meanwhile).
	AlarmDefragEvery time.Duration
	// Logger receives etcd's error-level messages (default: discard).
	Logger *slog.Logger
	// TLS, when set, names the member's credentials (identity.Files: the cluster CA, a
	// certificate for 127.0.0.1 and Host, its key): client and peer URLs are https and
	// both require a client certificate signed by that CA (etcd's ClientCertAuth). Zero:
	// plain http, for --insecure only.
	TLS identity.Files
	// CRL, with TLS, is the path of a certificate revocation list of the CA (PEM,
	// identity.CA.CRL): etcd reads it at every client and peer handshake and refuses the
	// certificates it lists, so replacing the file (atomically) takes effect at once for
	// new connections; connections already open stay until Embedded.CutClientConnections.
	// The file must exist: etcd refuses every connection while it cannot read it. With a
	// CRL the client port is a relay to etcd's own listener on 127.0.0.1 (frontdoor.go),
	// which can close the connections open. Empty: no revocation.
	CRL string
	// NoPeerListener makes a single-member cluster (InitialCluster empty) listen on no
	// peer port: such a member never talks to a peer, and etcd's peer gRPC server, started
	// in a goroutine nothing waits for, reads gRPC's global logger, which protoactor's
	// remote.Start writes (see internal/assembly/node's syncGRPCServer; the client port can
	// be synced with, the peer port cannot). The member's peer URL is still advertised, on
	// a port nobody listens on. Local mode sets it; a head that other members may join
	// must not.
	NoPeerListener bool
	// Auth, with TLS, prepares the server for etcd's authentication (auth.go): its
	// in-process clients (Client) act as etcd's root user, and Embedded.Auth manages users
	// and roles (Auth.Enable turns authentication on; once on, it stays on across restarts
	// on the same Dir, so a server whose Dir has it on must be started with Auth). Without
	// Auth the in-process clients carry no identity, as in local mode.
	Auth bool
}

// Validate reports a configuration that cannot work.
func (c EmbedConfig) Validate() error {
	switch {
	case c.Dir == "":
		return errors.New("etcdstore: embed: empty Dir")
	case c.ClientPort < 0 || c.ClientPort > 65535 || c.PeerPort < 0 || c.PeerPort > 65535:
		return errors.New("etcdstore: embed: port out of range")
	case c.ClientPort != 0 && c.ClientPort == c.PeerPort:
		return errors.New("etcdstore: embed: client and peer port are the same")
	case c.QuotaBytes < 0 || c.CompactionRetention < 0 || c.StartTimeout < 0 || c.DefragMinBytes < 0 || c.AlarmDefragEvery < 0:
		return errors.New("etcdstore: embed: negative value")
	case c.CRL != "" && c.TLS.IsZero():
		return errors.New("etcdstore: embed: a CRL without TLS")
	case c.Auth && c.TLS.IsZero():
		return errors.New("etcdstore: embed: Auth needs TLS (etcd takes a client's user from its certificate)")
	case c.NoPeerListener && c.InitialCluster != "":
		return errors.New("etcdstore: embed: NoPeerListener is for a single-member cluster, and InitialCluster names members")
	}
	return nil
}

// Embedded is a running single-member etcd server.
type Embedded struct {
	etcd      *embed.Etcd
	cfg       EmbedConfig
	endpoints []string
	door      *frontDoor // the client port, with a CRL (else nil: etcd's own listener)

	mu       sync.Mutex
	clients  map[*Store]struct{}
	closed   bool
	stop     chan struct{} // closed by Close: ends defragLoop
	loopDone chan struct{} // closed when defragLoop has ended (Close waits for it)
	// lastAlarmDefrag: when Defrag last rewrote the file under a NOSPACE alarm.
	lastAlarmDefrag time.Time
}

// maxStreamsPerConn bounds the gRPC streams of one client connection to the GCS.
const maxStreamsPerConn = 4096

// StartEmbedded starts an etcd server and waits until it serves. The server listens on
// 127.0.0.1 only (or EmbedConfig.Host), with mutual TLS when EmbedConfig.TLS names
// credentials, elects itself within ~100 ms (TickMs 10, ElectionMs 100) and has
// auto-compaction and a quota on (see EmbedConfig).
func StartEmbedded(ctx context.Context, cfg EmbedConfig) (*Embedded, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Name == "" {
		cfg.Name = "gcs"
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.QuotaBytes == 0 {
		cfg.QuotaBytes = DefaultQuotaBytes
	}
	if cfg.CompactionRetention == 0 {
		cfg.CompactionRetention = DefaultCompactionRetention
	}
	if cfg.SnapshotCount == 0 {
		cfg.SnapshotCount = DefaultSnapshotCount
	}
	if cfg.DefragEvery == 0 {
		cfg.DefragEvery = DefaultDefragEvery
	}
	if cfg.DefragMinBytes == 0 {
		cfg.DefragMinBytes = DefaultDefragMinBytes
	}
	if cfg.AlarmDefragEvery == 0 {
		cfg.AlarmDefragEvery = DefaultAlarmDefragEvery
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	// A port we picked may be taken by someone else before etcd binds it: pick again.
	picked := cfg.ClientPort == 0 || cfg.PeerPort == 0
	for attempt := 1; ; attempt++ {
		e, err := start(ctx, cfg)
		if err == nil || !picked || !errors.Is(err, errPortInUse) || attempt == 5 {
			return e, err
		}
	}
}

var errPortInUse = errors.New("port in use")

func start(ctx context.Context, cfg EmbedConfig) (*Embedded, error) {
	clientPort, peerPort := cfg.ClientPort, cfg.PeerPort
	var err error
	if clientPort == 0 {
		if clientPort, err = freePort(peerPort); err != nil {
			return nil, err
		}
	}
	if peerPort == 0 {
		if peerPort, err = freePort(clientPort); err != nil {
			return nil, err
		}
	}
	scheme := "http"
	if !cfg.TLS.IsZero() {
		scheme = "https"
	}
	clientURL := url.URL{Scheme: scheme, Host: net.JoinHostPort(cfg.Host, strconv.Itoa(clientPort))}
	peerURL := url.URL{Scheme: scheme, Host: net.JoinHostPort(cfg.Host, strconv.Itoa(peerPort))}

	// With revocation, the client port is the front door's (frontdoor.go), and etcd listens
	// behind it on 127.0.0.1.
	listenURL := clientURL
	var door net.Listener
	if cfg.CRL != "" {
		if door, err = net.Listen("tcp", clientURL.Host); err != nil {
			if isAddrInUse(err) {
				return nil, fmt.Errorf("etcdstore: embed: client port %d on %s is in use: %w (%w)", clientPort, cfg.Host, errPortInUse, err)
			}
			return nil, fmt.Errorf("etcdstore: embed: listen on the client port: %w", err)
		}
		backPort, err := freePort(peerPort)
		if err != nil {
			_ = door.Close()
			return nil, err
		}
		listenURL.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(backPort))
	}

	ec := embed.NewConfig()
	ec.Name = cfg.Name
	ec.Dir = cfg.Dir
	ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{listenURL}, []url.URL{clientURL}
	ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	if cfg.NoPeerListener {
		ec.ListenPeerUrls = nil
	}
	ec.InitialCluster = cfg.Name + "=" + peerURL.String()
	if cfg.InitialCluster != "" {
		ec.InitialCluster = cfg.InitialCluster
	}
	ec.InitialClusterToken = "ray-gcs"
	ec.TickMs, ec.ElectionMs = 10, 100
	ec.AutoCompactionMode = embed.CompactorModeRevision
	ec.AutoCompactionRetention = strconv.Itoa(cfg.CompactionRetention)
	ec.QuotaBackendBytes = cfg.QuotaBytes
	ec.MaxTxnOps = gcs.MaxTxnOps
	ec.MaxRequestBytes = 3 << 19 // 1.5 MiB, etcd's default, above gcs.MaxRequestBytes
	// etcd's default is unlimited streams per connection; a client multiplexes its watches,
	// lease keep-alives and requests in flight over one connection, far fewer than this.
	ec.MaxConcurrentStreams = maxStreamsPerConn
	ec.SnapshotCount = cfg.SnapshotCount
	// etcd keeps the newest 5 WAL files (64 MB each) and 5 snapshots by default: with
	// exactly-once actors' method logs that is 320 MB of WAL on disk once written. Files
	// older than the newest snapshot are not needed to recover (SnapshotCount bounds what
	// is after it), so two of each are kept, of WALSegmentBytes each.
	ec.MaxWalFiles, ec.MaxSnapFiles = maxWALFiles, maxSnapFiles
	ec.UnsafeNoFsync = cfg.UnsafeNoFsync
	ec.EnableGRPCGateway = false
	ec.Logger, ec.LogLevel = "zap", "error"
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zapLogger(cfg.Logger, zapcore.ErrorLevel))
	if !cfg.TLS.IsZero() {
		// The same certificate serves clients and peers and is the member's client
		// certificate towards its peers; every connection must present one of the CA.
		info := transport.TLSInfo{CertFile: cfg.TLS.Cert, KeyFile: cfg.TLS.Key, TrustedCAFile: cfg.TLS.CA, ClientCertAuth: true,
			CRLFile: cfg.CRL}
		ec.ClientTLSInfo, ec.PeerTLSInfo = info, info
	}

	e, err := embed.StartEtcd(ec)
	if err != nil {
		if door != nil {
			_ = door.Close()
		}
		if isAddrInUse(err) {
			return nil, fmt.Errorf("etcdstore: embed: client port %d or peer port %d on %s is in use: %w (%w)",
				clientPort, peerPort, cfg.Host, errPortInUse, err)
		}
		return nil, fmt.Errorf("etcdstore: embed: start etcd in %s: %w", cfg.Dir, err)
	}
	timer := time.NewTimer(cfg.StartTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err = <-e.Err():
		err = fmt.Errorf("etcdstore: embed: etcd failed while starting: %w", err)
	case <-e.Server.StopNotify():
		err = errors.New("etcdstore: embed: etcd stopped while starting")
	case <-timer.C:
		err = fmt.Errorf("etcdstore: embed: etcd not ready within %v", cfg.StartTimeout)
	case <-ctx.Done():
		err = fmt.Errorf("etcdstore: embed: %w", ctx.Err())
	}
	if err != nil {
		e.Close()
		if door != nil {
			_ = door.Close()
		}
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	em := &Embedded{
		etcd:      e,
		cfg:       cfg,
		endpoints: []string{clientURL.String()},
		clients:   make(map[*Store]struct{}),
		stop:      make(chan struct{}),
		loopDone:  make(chan struct{}),
	}
	if door != nil {
		em.door = newFrontDoor(door, listenURL.Host)
	}
	if cfg.DefragEvery > 0 {
		go func() {
			defer close(em.loopDone)
			em.defragLoop(em.stop)
		}()
	} else {
		close(em.loopDone)
	}
	return em, nil
}

func isAddrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// freePort returns a port on 127.0.0.1 that nobody listens on right now, other than not.
func freePort(not int) (int, error) {
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("etcdstore: embed: pick a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if port != not {
			return port, nil
		}
	}
}

// IsLeader reports whether this member is its cluster's raft leader now.
func (e *Embedded) IsLeader() bool { return e.etcd.Server.Leader() == e.etcd.Server.ID() }

// Endpoints returns the client URLs, for New and for other processes.
func (e *Embedded) Endpoints() []string { return append([]string(nil), e.endpoints...) }

// Client returns a Store that talks to the server in-process (etcd's v3client: no gRPC,
// no sockets), under EmbedConfig.Namespace. Each call returns a new Store; close each, or
// let Close close them.
func (e *Embedded) Client() gcs.Store {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return closedStore{}
	}
	var cli *clientv3.Client
	if e.cfg.Auth {
		cli = newInProcessClient(e.etcd.Server, RootUser)
	} else {
		cli = v3client.New(e.etcd.Server)
	}
	s := newStore(cli, e.cfg.Namespace, e.forget)
	e.clients[s] = struct{}{}
	return s
}

func (e *Embedded) forget(s *Store) {
	e.mu.Lock()
	delete(e.clients, s)
	e.mu.Unlock()
}

// Close closes the stores Client returned, stops the server and waits for it.
func (e *Embedded) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return fmt.Errorf("etcdstore: embed: %w", gcs.ErrClosed)
	}
	e.closed = true
	close(e.stop)
	clients := make([]*Store, 0, len(e.clients))
	for s := range e.clients {
		clients = append(clients, s)
	}
	e.mu.Unlock()
	for _, s := range clients {
		_ = s.Close()
	}
	<-e.loopDone // a defragmentation in progress ends before the server does
	if e.door != nil {
		e.door.close()
	}
	e.etcd.Close()
	return nil
}

// CutClientConnections closes every client connection open now (not the in-process
// clients), and returns how many, so that each must make its TLS handshake again, against
// the CRL as it is now: call it after the CRL file gained a certificate. etcd checks the
// CRL at handshakes only, and a watch's permission only when the watch is created, so a
// connection opened before a revocation keeps its watches' events until it is cut.
// Clients of valid certificates reconnect by themselves (etcd's client redials and resumes
// its watches from their revision; a request in flight at the cut may fail as it does
// when a member dies). Without a CRL (EmbedConfig.CRL empty) it does nothing and returns
// 0.
func (e *Embedded) CutClientConnections() int {
	if e.door == nil {
		return 0
	}
	return e.door.cut()
}

// closedStore is what Client returns after Close: every call fails with ErrClosed.
type closedStore struct{}

var errStoreClosed = fmt.Errorf("etcdstore: embedded server closed: %w", gcs.ErrClosed)

func (closedStore) Get(context.Context, string) (gcs.KV, bool, error) {
	return gcs.KV{}, false, errStoreClosed
}
func (closedStore) List(context.Context, string) ([]gcs.KV, int64, error) {
	return nil, 0, errStoreClosed
}
func (closedStore) Count(context.Context, string) (int64, error) { return 0, errStoreClosed }
func (closedStore) Put(context.Context, string, []byte, gcs.LeaseID) (int64, error) {
	return 0, errStoreClosed
}
func (closedStore) Delete(context.Context, string) (int64, error) { return 0, errStoreClosed }
func (closedStore) Txn(context.Context, []gcs.Cmp, []gcs.Op) (bool, int64, error) {
	return false, 0, errStoreClosed
}
func (closedStore) Watch(context.Context, string, int64) <-chan gcs.WatchResponse {
	ch := make(chan gcs.WatchResponse, 1)
	ch <- gcs.WatchResponse{Err: errStoreClosed}
	close(ch)
	return ch
}
func (closedStore) Grant(context.Context, time.Duration) (gcs.LeaseID, error) {
	return 0, errStoreClosed
}
func (closedStore) KeepAlive(context.Context, gcs.LeaseID) (<-chan struct{}, error) {
	return nil, errStoreClosed
}
func (closedStore) Revoke(context.Context, gcs.LeaseID) error { return errStoreClosed }
func (closedStore) Compact(context.Context, int64) error      { return errStoreClosed }
func (closedStore) Revision(context.Context) (int64, error)   { return 0, errStoreClosed }
func (closedStore) Close() error                              { return errStoreClosed }
