package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/assembly/metrics"
	"github.com/ray-go/ray/internal/assembly/taskstate"
	"github.com/ray-go/ray/tasks/sched"
)

// DefaultMetricsPort is the port of an agent's Prometheus endpoint that `rayctl start` asks
// for (Ray's metrics export port).
const DefaultMetricsPort = 8080

// MetricsOff as Config.MetricsPort serves no metrics.
const MetricsOff = -1

// ErrMetricsPortInUse: Config.MetricsPort is taken (the error is an ErrPortInUse too).
var ErrMetricsPortInUse error = inUse("agent: metrics port in use")

// inUse is an error about one port (metrics, dashboard) that is also an ErrPortInUse,
// without saying so in its message.
type inUse string

func (e inUse) Error() string { return string(e) }

func (e inUse) Is(target error) bool { return target == ErrPortInUse }

// metricsTaskWait bounds how long a scrape of the head waits for the processes' task counts.
const metricsTaskWait = 3 * time.Second

// metricsTaskEvery: scrapes closer together than this share one gather of the task counts
// (the endpoint has no credential: a flood of GETs must not become a flood of queries to
// every process of the cluster), and metricsInFlight bounds the scrapes served at once.
const (
	metricsTaskEvery = time.Second
	metricsInFlight  = 4
)

// taskCountsCache is the last gather of the task counts.
type taskCountsCache struct {
	mu       sync.Mutex // held across a gather: concurrent scrapes wait for it and share it
	at       time.Time
	counts   metrics.TaskCounts
	err      error
	finished metrics.FinishedTotals // ray_go_tasks_finished_total, over every gather
}

// etcdFamilies are the embedded etcd's own metrics a head serves too: its disk latency
// (every GCS write of the cluster is an fsync of the WAL and a backend commit), the size of
// its database against its quota, and whether it has a leader.
var etcdFamilies = []string{"etcd_disk_wal_fsync_duration_seconds", "etcd_disk_backend_commit_duration_seconds",
	"etcd_mvcc_db_total_size_in_bytes", "etcd_mvcc_db_total_size_in_use_in_bytes", "etcd_server_quota_backend_bytes",
	"etcd_server_has_leader", "etcd_server_proposals_committed_total", "etcd_server_proposals_failed_total"}

// metricsHandler builds the agent's collector and its GET /metrics handler, once (the
// metrics endpoint and the head's dashboard share them).
func (a *Agent) metricsHandler() (http.Handler, prometheus.Gatherer, error) {
	if a.metricsGatherer != nil {
		return a.metricsHTTP, a.metricsGatherer, nil
	}
	cfg := a.cfg
	c, err := metrics.New(metrics.Config{
		Nodes: metrics.LoadReports(a.store, a.id, cfg.Head), // the head counts the drivers too
		Store: a.store,
		CPUs:  cfg.Resources[sched.CPU],
		// The budget of the agent, not the sum of its worker processes' reports: an
		// idle agent (no job's worker process yet) has all of it available.
		StoreBytes: cfg.ObjectStoreBytes,
		Cluster:    cfg.Head,
		Tasks:      a.taskCounts,
		Logger:     a.log,
	})
	if err != nil {
		return nil, nil, err
	}
	var g prometheus.Gatherer = metrics.Registry(c, a.latency)
	if a.embedded != nil {
		g = prometheus.Gatherers{g, onlyFamilies(prometheus.DefaultGatherer, etcdFamilies)}
	}
	h := promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, ErrorLog: slogPrinter{a},
		MaxRequestsInFlight: metricsInFlight})
	a.metricsGatherer = g
	a.metricsHTTP = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "metrics are read-only: GET /metrics", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
	return a.metricsHTTP, a.metricsGatherer, nil
}

// serveMetrics listens on Host:MetricsPort and serves GET /metrics until Stop.
func (a *Agent) serveMetrics() error {
	cfg := a.cfg
	if cfg.MetricsPort == MetricsOff {
		return nil
	}
	addr := net.JoinHostPort(cfg.host(), strconv.Itoa(cfg.MetricsPort))
	l, err := net.Listen("tcp", addr)
	if err != nil && cfg.MetricsPort != 0 && cfg.MetricsPortFallback && isAddrInUse(err) {
		a.log.Warn("agent: the metrics port is taken; serving metrics on a free port instead", "port", cfg.MetricsPort)
		l, err = net.Listen("tcp", net.JoinHostPort(cfg.host(), "0"))
	}
	if err != nil {
		if isAddrInUse(err) {
			return fmt.Errorf("%w: the metrics port %d on %s is already in use (pass another --metrics-port, 0 for a free one, or -1 for none): %v",
				ErrMetricsPortInUse, cfg.MetricsPort, cfg.host(), err)
		}
		return fmt.Errorf("agent: listen for metrics on %s: %w", addr, err)
	}
	h, _, err := a.metricsHandler()
	if err != nil {
		_ = l.Close()
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	a.metricsSrv = newHTTPServer(mux)
	a.metricsAddr = l.Addr().String()
	a.serve(a.metricsSrv, l, "metrics")
	return nil
}

// newHTTPServer is an HTTP server with the agent's bounds on slow clients.
func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, MaxHeaderBytes: 64 << 10}
}

// serve runs srv on l until Stop shuts it down.
func (a *Agent) serve(srv *http.Server, l net.Listener, what string) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Warn("agent: the "+what+" server stopped", "err", err)
		}
	}()
}

// stopMetrics closes the metrics server (Stop, or a failed Start).
// The dashboard's server too.
func (a *Agent) stopMetrics() {
	for _, srv := range []*http.Server{a.metricsSrv, a.dashboardSrv} {
		if srv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = srv.Shutdown(ctx)
			cancel()
		}
	}
}

// MetricsAddress returns the host:port of the agent's GET /metrics ("" when it serves none).
func (a *Agent) MetricsAddress() string { return a.metricsAddr }

// taskCounts gathers the task counts of every process of the cluster (the head's
// ray_tasks), at most once per metricsTaskEvery.
func (a *Agent) taskCounts(ctx context.Context) (metrics.TaskCounts, error) {
	c := &a.taskCountsCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < metricsTaskEvery {
		return c.counts, c.err
	}
	res, err := taskstate.Gather(ctx, a.store, "", core.TaskQuery{Counts: true}, taskstate.Options{Wait: metricsTaskWait})
	c.at, c.counts, c.err = time.Now(), metrics.TaskCounts{}, err
	if err == nil {
		// A process that did not answer in time or could not be asked keeps its last
		// counts in the totals; one that exited (not asked, or gone from the node
		// table) leaves them there for good.
		stay := map[string]bool{}
		for _, n := range res.Missing {
			stay[n] = true
		}
		c.counts = metrics.TaskCounts{Counts: res.Summary, Missing: len(res.Missing),
			Finished: c.finished.Update(res.Counts, func(node string) bool { return stay[node] })}
	}
	return c.counts, c.err
}

// onlyFamilies gathers from g only the families named.
func onlyFamilies(g prometheus.Gatherer, names []string) prometheus.Gatherer {
	keep := map[string]bool{}
	for _, n := range names {
		keep[n] = true
	}
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		fams, err := g.Gather()
		out := fams[:0]
		for _, f := range fams {
			if keep[f.GetName()] {
				out = append(out, f)
			}
		}
		return out, err
	})
}

// slogPrinter is promhttp's error log: the agent's, at debug level.
type slogPrinter struct{ a *Agent }

func (p slogPrinter) Println(v ...any) {
	p.a.log.Debug("agent: metrics: " + strings.TrimSpace(fmt.Sprintln(v...)))
}
