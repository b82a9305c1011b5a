package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/assembly/metrics"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
	"github.com/ray-go/ray/internal/base/identity"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/objects/shard"
	"github.com/ray-go/ray/tasks/machine"
)

// Errors to branch on (the CLI maps them to exit codes).
var (
	// ErrPortInUse: the embedded GCS's client port is taken by another process.
	ErrPortInUse = errors.New("agent: port in use")
	// ErrGCSUnreachable: no GCS endpoint answered.
	ErrGCSUnreachable = errors.New("agent: GCS unreachable")
)

// AliveTTL is the lease TTL of agentalive/<id>: an agent that dies without Stop is shown
// dead this long after its last renewal.
const AliveTTL = 6 * time.Second

// opTimeout bounds every single GCS call the agent makes.
const opTimeout = 5 * time.Second

// Agent is a running node agent. Create it with Start; stop it with Stop.
type Agent struct {
	cfg      Config
	id       string
	hostname string
	address  []string // host:port GCS endpoints
	log      *slog.Logger

	embedded *etcdstore.Embedded
	// restartedGCS: the embedded GCS started over data of an earlier start.
	restartedGCS bool
	join         *identity.JoinServer // secure head with an embedded GCS
	tokenDir     *identity.TokenDir   // secure head: its CA directory, where the join token is read
	ca           *identity.CA         // secure head with an embedded GCS: signs the CRL
	creds        identity.Files       // the agent's GCS credentials (zero: Insecure)
	// procCreds are the credentials of the processes the agent starts (worker processes,
	// submitted drivers): creds, except on a secure head with an embedded GCS, whose own
	// certificate is the GCS's administrator (a driver certificate of their own instead).
	procCreds identity.Files
	auth      *etcdstore.Auth // secure head with an embedded GCS: its users and roles
	// certsMu orders the head's changes of the certificates' records and users
	// (syncUsersOnce, collectCertsOnce, releaseDriver): a sync that read a record a
	// release deletes must not make its user again after the release deleted it.
	certsMu   sync.Mutex
	compactor *gcs.Compactor
	store     gcs.Store        // timed: its writes go into latency
	gcsClient *etcdstore.Store // the client behind store when it is a remote GCS's (nil: embedded), for Refused
	failErr   error            // why the agent stopped by itself (refused); written by keepAlive, read after it returned
	latency   *metrics.Latency // ray_gcs_storage_operation_latency_ms of the agent's writes

	metricsSrv      *http.Server // GET /metrics (metrics.go); nil: none
	metricsAddr     string
	metricsGatherer prometheus.Gatherer // built once by metricsHandler
	metricsHTTP     http.Handler
	taskCountsCache taskCountsCache

	dashboard     Dashboard    // the head's web dashboard (dashboard.go); nil: none
	dashboardSrv  *http.Server // serves it
	dashboardAddr string
	// headCreds: a secure head's own credentials (its certificate serves the dashboard
	// with DashboardTLS); nil elsewhere.
	headCreds *identity.Credentials

	// machine is the machine's resource ledger, served to the worker processes
	// (machine.go); machineDir is a directory made for its socket when the session
	// directory's path is too long for one (removed by Stop).
	machine    *machine.Server
	machineDir string
	// spill is the agent's own directory in Config.SpillDir (nil without one).
	spill *shard.SpillDir
	// workerPIDs: job -> the pid of this agent's newest worker process of it (workers.go
	// sets it, workerout.go names it).
	workerPIDs sync.Map
	// subs is the head's submission runner (nil on other agents).
	subs *submissionRunner

	ctx    context.Context // canceled by Stop
	cancel context.CancelFunc
	wg     sync.WaitGroup // run loops

	leaseMu sync.Mutex
	lease   gcs.LeaseID

	stopOnce sync.Once
	stopErr  error
	done     chan struct{}
}

// Start starts an agent: the GCS (head without endpoints) or a connection to it, the
// agent's records, the worker-process manager and (head) the submission runner. It returns
// once the agent's records are in the GCS.
func Start(ctx context.Context, cfg Config) (_ *Agent, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.ID == "" {
		cfg.ID = NewID()
	}
	// The session holds what is for this user only (job output and environments in the
	// logs, the GCS's data): directories 0700, files 0600 (DESIGN §9).
	for _, d := range []string{cfg.SessionDir, filepath.Join(cfg.SessionDir, "logs"), filepath.Join(cfg.SessionDir, "workers")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("agent: session directory: %w", err)
		}
	}
	var spill *shard.SpillDir
	if cfg.SpillDir != "" {
		if spill, err = shard.OpenSpillDir(cfg.SpillDir, shard.AgentSpillPrefix+cfg.ID); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
	}
	host, _ := os.Hostname()
	a := &Agent{
		spill:    spill,
		cfg:      cfg,
		id:       cfg.ID,
		hostname: host,
		log:      cfg.Logger.With("agent", cfg.ID),
		latency:  metrics.NewLatency(),
		done:     make(chan struct{}),
	}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			a.cancel()
			a.stopMetrics()
			a.wg.Wait()
			a.stopMachine()
			a.closeSpill()
			a.closeGCS()
		}
	}()
	if err := a.openGCS(ctx); err != nil {
		return nil, err
	}
	a.store = a.latency.TimedStore(a.store)
	if err := a.serveMetrics(); err != nil {
		return nil, err
	}
	if err := a.serveDashboard(); err != nil {
		return nil, err
	}
	if err := a.register(ctx); err != nil {
		return nil, err
	}
	a.wg.Add(1)
	go a.keepAlive()
	a.runDashboard()
	if err := a.serveMachine(); err != nil {
		return nil, err
	}
	m := newWorkerManager(a)
	a.wg.Add(1)
	go m.run(a.ctx)
	a.wg.Add(1)
	go a.serveLogs() // logserve.go
	a.wg.Add(1)
	go a.forwardWorkerOutput() // workerout.go
	if cfg.Head {
		s := newSubmissionRunner(a)
		a.subs = s
		a.wg.Add(1)
		go s.run(a.ctx)
		a.wg.Add(1)
		go newGoneSweeper(a, cfg.SweepEvery, cfg.SweepGrace).run(a.ctx) // gcssweep.go
	}
	if a.ca != nil {
		a.wg.Add(2)
		go a.writeCRLs()
		go a.syncUsersLoop()
	}
	a.log.Info("agent started", "head", cfg.Head, "address", a.Address(), "dir", cfg.SessionDir, "spill_dir", a.SpillDir(),
		"resources", cfg.Resources, "object_store_bytes", cfg.ObjectStoreBytes, "metrics", a.metricsAddr, "dashboard", a.dashboardAddr)
	return a, nil
}

// NewID returns a new random agent ID (16 lowercase hex digits).
func NewID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (a *Agent) openGCS(ctx context.Context) error {
	cfg := a.cfg
	if cfg.Head && len(cfg.GCSEndpoints) == 0 {
		if cfg.GCSPort != 0 {
			if err := checkPortFree(cfg.host(), cfg.GCSPort); err != nil {
				return err
			}
		}
		var ca *identity.CA
		var head *identity.Credentials
		if !cfg.Insecure {
			var err error
			if ca, head, err = a.headIdentity(); err != nil {
				return err
			}
			if a.creds, err = head.Save(TLSDir(cfg.SessionDir)); err != nil {
				return fmt.Errorf("agent: save the head's credentials: %w", err)
			}
			a.headCreds = head
		}
		var crl string
		if ca != nil {
			var err error
			if crl, err = a.initCRL(ca); err != nil {
				return err
			}
		}
		a.restartedGCS = hasGCSData(filepath.Join(cfg.SessionDir, "gcs"))
		e, err := etcdstore.StartEmbedded(ctx, etcdstore.EmbedConfig{
			Dir:        filepath.Join(cfg.SessionDir, "gcs"),
			Host:       cfg.host(),
			ClientPort: cfg.GCSPort,
			Namespace:  cfg.Namespace,
			Logger:     a.log,
			TLS:        a.creds,
			CRL:        crl,
			Auth:       ca != nil,
		})
		if err != nil {
			if cfg.GCSPort != 0 && isAddrInUse(err) {
				return portInUse(cfg.host(), cfg.GCSPort, err)
			}
			if gcsDir := filepath.Join(cfg.SessionDir, "gcs"); hasGCSData(gcsDir) {
				// A restart over data etcd cannot open (a truncated or corrupt log or
				// database): say what the data is and what to do, not only etcd's words.
				return fmt.Errorf("agent: start the embedded GCS: %w: the GCS data in %s cannot be opened (damaged or incomplete); "+
					"restore that directory from a backup, or remove %s to start a new cluster (its jobs, detached actors and "+
					"issued certificates are then gone)", err, gcsDir, cfg.SessionDir)
			}
			return fmt.Errorf("agent: start the embedded GCS: %w", err)
		}
		a.embedded = e
		for _, ep := range e.Endpoints() {
			a.address = append(a.address, trimScheme(ep))
		}
		a.store = e.Client()
		a.compactor = gcs.NewCompactor(a.store, gcs.CompactorConfig{Logger: a.log})
		if ca != nil {
			a.ca = ca
			if err := a.enableAuth(ctx); err != nil {
				return err
			}
			if err := a.recordCert(ctx, head.Leaf()); err != nil {
				return err
			}
			jobs, err := a.issueProcCreds(ctx, ca)
			if err != nil {
				return err
			}
			if err := a.retireReplacedHeadCerts(ctx, head.Leaf(), jobs); err != nil {
				return err
			}
			return a.serveJoin(ca, head)
		}
		a.procCreds = a.creds
		return nil
	}
	a.address = append([]string(nil), cfg.GCSEndpoints...)
	var creds *identity.Credentials
	if !cfg.Insecure {
		var err error
		if cfg.Head && cfg.GCSFiles.IsZero() {
			return fmt.Errorf("%w: an external etcd as the GCS needs credentials: the CA that signed its certificates and a client certificate it accepts (--gcs-ca, --gcs-cert, --gcs-key), or --insecure for one without TLS", ErrNoCredentials)
		}
		if creds, err = a.joinCredentials(ctx); err != nil {
			return err
		}
	}
	s, err := etcdstore.New(ctx, etcdstore.Config{
		Endpoints:   a.address,
		DialTimeout: cfg.GCSDialTimeout,
		Namespace:   cfg.Namespace,
		Logger:      a.log,
		TLS:         clientTLS(creds),
	})
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("agent: connect to the GCS at %s: %w", strings.Join(a.address, ","), ctx.Err())
		}
		if errors.Is(err, etcdstore.ErrNeedsTLS) {
			return fmt.Errorf("%w: the GCS at %s speaks TLS; this agent was started with --insecure: %w", ErrCredentials, strings.Join(a.address, ","), err)
		}
		if errors.Is(err, etcdstore.ErrTLSRefused) {
			return fmt.Errorf("%w: %w", ErrCredentials, err)
		}
		return fmt.Errorf("%w: nothing answered at %s (is the head agent running and reachable from this machine?): %w",
			ErrGCSUnreachable, strings.Join(a.address, ","), err)
	}
	a.store, a.gcsClient = s, s
	a.procCreds = a.creds
	return nil
}

// trimScheme turns a URL into host:port.
func trimScheme(ep string) string {
	return strings.TrimPrefix(strings.TrimPrefix(ep, "https://"), "http://")
}

func (c *Config) host() string {
	if c.Host == "" {
		return "127.0.0.1"
	}
	return c.Host
}

// checkPortFree fails with ErrPortInUse when something listens on host:port (etcd's own
// error for that is obscure).
func checkPortFree(host string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		if isAddrInUse(err) {
			return portInUse(host, port, err)
		}
		return fmt.Errorf("agent: cannot listen on %s:%d: %w", host, port, err)
	}
	_ = l.Close()
	return nil
}

func portInUse(host string, port int, cause error) error {
	return fmt.Errorf("%w: port %d on %s is already in use (another head agent, or another program, listens there; %v)",
		ErrPortInUse, port, host, cause)
}

func isAddrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use") ||
		strings.Contains(err.Error(), "is in use")
}

// register writes agents/<id> and agentalive/<id> (with a fresh lease).
func (a *Agent) register(ctx context.Context) error {
	info := &pb.AgentInfo{
		AgentId:          a.id,
		Hostname:         a.hostname,
		Pid:              int32(os.Getpid()),
		Total:            ResourcesToPB(a.cfg.Resources),
		ObjectStoreBytes: a.cfg.ObjectStoreBytes,
		SessionDir:       a.cfg.SessionDir,
		Goos:             runtime.GOOS,
		Goarch:           runtime.GOARCH,
		Head:             a.cfg.Head,
		GcsEndpoints:     a.address,
		StartedUnixMs:    time.Now().UnixMilli(),
		MetricsAddress:   a.metricsAddr,
		DashboardAddress: a.dashboardAddr,
		DashboardTls:     a.dashboardAddr != "" && a.cfg.DashboardTLS,
	}
	b, err := proto.Marshal(info)
	if err != nil {
		return fmt.Errorf("agent: encode AgentInfo: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if _, err := a.store.Put(cctx, gcs.AgentKey(a.id), b, 0); err != nil {
		return fmt.Errorf("agent: register %s: %w", gcs.AgentKey(a.id), err)
	}
	return a.putAlive(cctx)
}

// putAlive grants a lease and puts agentalive/<id> with it.
func (a *Agent) putAlive(ctx context.Context) error {
	lease, err := a.store.Grant(ctx, AliveTTL)
	if err != nil {
		return fmt.Errorf("agent: grant the liveness lease: %w", err)
	}
	if _, err := a.store.Put(ctx, gcs.AgentAliveKey(a.id), []byte(a.hostname), lease); err != nil {
		return fmt.Errorf("agent: put %s: %w", gcs.AgentAliveKey(a.id), err)
	}
	a.leaseMu.Lock()
	a.lease = lease
	a.leaseMu.Unlock()
	return nil
}

// keepAlive keeps the liveness lease and registers again after it is lost (expired while
// the GCS was unreachable, or the GCS restarted).
func (a *Agent) keepAlive() {
	defer a.wg.Done()
	backoff := 200 * time.Millisecond
	var refusedSince time.Time // the first of the failures in a row that were refusals (refused)
	for a.ctx.Err() == nil {
		a.leaseMu.Lock()
		lease := a.lease
		a.leaseMu.Unlock()
		lost, err := a.store.KeepAlive(a.ctx, lease)
		if err == nil {
			backoff = 200 * time.Millisecond
			select {
			case <-a.ctx.Done():
				return
			case <-lost:
			}
			if a.ctx.Err() != nil {
				return
			}
			a.log.Warn("agent: liveness lease lost; registering again")
		}
		for a.ctx.Err() == nil {
			cctx, cancel := context.WithTimeout(a.ctx, opTimeout)
			err := a.register(cctx)
			cancel()
			if err == nil {
				break
			}
			switch a.refused(err, &refusedSince) {
			case refusedNo:
				a.log.Warn("agent: register again failed; retrying", "err", err, "in", backoff)
			case refusedStop:
				return
			}
			select {
			case <-a.ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, registerBackoffMax)
		}
	}
}

// registerBackoffMax caps the pause between attempts to register again. An attempt waits
// up to opTimeout for the GCS connection (etcd's client reconnects by itself, every ~2 s at
// most: etcdstore), so a GCS back during an attempt is answered at once and one back during
// a pause at most this long after; a GCS still down costs no traffic for the attempts.
const registerBackoffMax = 2 * time.Second

// refusedFor is how long the GCS must have refused this agent's certificate, in every
// attempt, before the agent takes it for revoked: a refused handshake looks like a
// connection the GCS's relay closed at once (a head starting or stopping), which passes.
const refusedFor = 10 * time.Second

// What refused found.
const (
	refusedNo      = iota // not a refusal: retry
	refusedPending        // a refusal, not yet for refusedFor: retry (logged once)
	refusedStop           // a refusal for refusedFor: the agent stops
)

// refused tells whether err, a failed GCS call, is the GCS refusing this agent's
// certificate (etcdstore's Refused: revoked on the head, by `rayctl cert revoke`), as it
// did in every attempt since *since (set and reset here). Only after refusedFor of that is
// retrying pointless: then it logs once what happened and what to do, and stops the agent
// (Err says why; `rayctl start` exits with it).
func (a *Agent) refused(err error, since *time.Time) int {
	if a.gcsClient == nil {
		return refusedNo
	}
	rerr := a.gcsClient.Refused(err)
	if rerr == nil {
		*since = time.Time{}
		return refusedNo
	}
	if since.IsZero() {
		*since = time.Now()
		a.log.Warn("agent: the head refuses this node's certificate (revoked?); stopping unless that changes", "in", refusedFor, "err", rerr)
	}
	if time.Since(*since) < refusedFor {
		return refusedPending
	}
	serial := "?"
	if c, lerr := identity.Load(a.creds); lerr == nil {
		serial = identity.SerialText(c.Leaf().SerialNumber)
	}
	addr := strings.Join(a.address, ",")
	rejoin := a.cfg.Rejoin
	if rejoin == "" {
		rejoin = "start it again with the cluster's join token (a new certificate)"
	}
	a.failErr = fmt.Errorf("%w: the head at %s refuses this node's certificate (serial %s): it was revoked (`rayctl cert list` on the head says), "+
		"so this agent stops instead of retrying; to rejoin the cluster: %s (%w)", ErrCredentials, addr, serial, rejoin, rerr)
	a.log.Error("agent: the head refuses this node's certificate (revoked); stopping", "serial", serial, "gcs", addr, "err", a.failErr)
	go func() { _ = a.Stop(context.Background()) }() // not here: Stop waits for this goroutine
	return refusedStop
}

// Err is why the agent stopped by itself (nil: it did not, or has not): the GCS refuses
// its certificate, wrapping ErrCredentials. Valid once Done is closed.
func (a *Agent) Err() error {
	select {
	case <-a.done:
		return a.failErr
	default:
		return nil
	}
}

// ID returns the agent ID.
func (a *Agent) ID() string { return a.id }

// Address returns the cluster's address: the GCS endpoints, host:port, comma-separated
// (what RAY_ADDRESS and `rayctl start --address` take).
func (a *Agent) Address() string { return strings.Join(a.address, ",") }

// Store returns the agent's GCS client (valid until Stop).
func (a *Agent) Store() gcs.Store { return a.store }

// Done is closed once the agent has stopped.
func (a *Agent) Done() <-chan struct{} { return a.done }

// Stop stops the agent: it ends every process it started (SIGTERM to each process group,
// SIGKILL after 5 s), revokes its liveness lease (so others see it dead at once), closes
// its GCS connection and, on a head with an embedded GCS, stops the GCS. Calling it again
// returns the first call's result. ctx bounds the waiting; processes are killed anyway.
func (a *Agent) Stop(ctx context.Context) error {
	a.stopOnce.Do(func() {
		defer close(a.done)
		a.cancel()
		a.stopMetrics()
		waited := make(chan struct{})
		go func() { a.wg.Wait(); close(waited) }()
		refused := false
		select {
		case <-waited:
			refused = a.failErr != nil // set by keepAlive, which has returned
		case <-ctx.Done():
			a.stopErr = fmt.Errorf("agent: stop: %w", ctx.Err())
		}
		a.stopMachine()
		a.closeSpill() // after the worker processes
		if !refused {  // a GCS that refuses this agent's certificate would not take the revocation
			a.leaseMu.Lock()
			lease := a.lease
			a.leaseMu.Unlock()
			rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if err := a.store.Revoke(rctx, lease); err != nil && !errors.Is(err, gcs.ErrLeaseNotFound) {
				a.log.Warn("agent: revoke the liveness lease", "err", err)
			}
			cancel()
		}
		a.closeGCS()
		a.log.Info("agent stopped")
	})
	return a.stopErr
}

// closeSpill removes the agent's spill directory (Config.SpillDir), with what its worker
// processes left there.
func (a *Agent) closeSpill() {
	if a.spill != nil {
		if err := a.spill.Close(); err != nil {
			a.log.Warn("agent: remove the spill directory", "dir", a.spill.Dir, "err", err)
		}
	}
}

// SpillDir is the directory of this agent in Config.SpillDir ("" without one).
func (a *Agent) SpillDir() string {
	if a.spill == nil {
		return ""
	}
	return a.spill.Dir
}

func (a *Agent) closeGCS() {
	if a.join != nil {
		_ = a.join.Close()
	}
	if a.tokenDir != nil {
		_ = a.tokenDir.Close()
	}
	if a.compactor != nil {
		a.compactor.Stop()
	}
	if a.store != nil {
		_ = a.store.Close()
	}
	if a.embedded != nil {
		_ = a.embedded.Close()
	}
}

// hasGCSData reports whether dir holds an embedded GCS's data from an earlier start (its
// member directory).
func hasGCSData(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "member"))
	return err == nil
}
