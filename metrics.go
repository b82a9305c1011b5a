package ray

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/assembly/metrics"
	"github.com/ray-go/ray/internal/assembly/node"
	"github.com/ray-go/ray/tasks/raylet"
	"github.com/ray-go/ray/tasks/sched"
)

// MetricsPortEnv is the environment variable that turns on a local-mode program's
// Prometheus endpoint when WithMetricsPort is not given: a port number (0: a free one).
const MetricsPortEnv = "RAY_GO_METRICS_PORT"

// metricsOff is initConfig.metricsPort when no endpoint is asked for.
const metricsOff = -1

// WithMetricsPort makes a local-mode runtime (Init with no address) serve Prometheus's GET
// /metrics on 127.0.0.1:port (0: a free port; MetricsAddress says which), with the metrics
// and names a node agent serves (ray_tasks, ray_actors, the object store, the machine, the
// Go runtime); Shutdown stops it. Also RAY_GO_METRICS_PORT. Off by default. The endpoint
// listens on loopback only and shows counts, sizes and names, never values or logs. A
// driver that joins a cluster ignores it: the cluster's agents serve its metrics.
func WithMetricsPort(port int) InitOption {
	return func(c *initConfig) { c.metricsPort, c.metricsSet = port, true }
}

// MetricsAddress returns the host:port of the runtime's GET /metrics (WithMetricsPort), or
// "" when it serves none.
func MetricsAddress(ctx context.Context) string {
	if s, ok := ctx.Value(runtimeKey{}).(*session); ok && s.metrics != nil {
		return s.metrics.addr
	}
	return ""
}

// metricsPortOf is the port asked for by the option or, without it, MetricsPortEnv
// (metricsOff: none).
func metricsPortOf(cfg *initConfig) (int, error) {
	if cfg.metricsSet {
		if cfg.metricsPort < 0 || cfg.metricsPort > 65535 {
			return 0, fmt.Errorf("ray: Init: WithMetricsPort(%d): want a port from 0 to 65535", cfg.metricsPort)
		}
		return cfg.metricsPort, nil
	}
	v := os.Getenv(MetricsPortEnv)
	if v == "" {
		return metricsOff, nil
	}
	p, err := strconv.Atoi(v)
	if err != nil || p < 0 || p > 65535 {
		return 0, fmt.Errorf("ray: Init: %s=%q: want a port from 0 to 65535", MetricsPortEnv, v)
	}
	return p, nil
}

// metricsServer is a local runtime's /metrics endpoint.
type metricsServer struct {
	srv  *http.Server
	addr string
	done chan struct{} // closed when Serve returned
}

// serveMetrics starts a local runtime's /metrics on 127.0.0.1:port.
func serveMetrics(n *node.Node, port int, res sched.Resources, logger *slog.Logger) (*metricsServer, error) {
	if logger == nil {
		logger = slog.Default()
	}
	stats := func(ctx context.Context) ([]metrics.NodeStats, error) {
		st, err := n.Core.StoreStats(ctx, 0)
		if err != nil {
			return nil, err
		}
		d := 5 * time.Second
		if dl, ok := ctx.Deadline(); ok {
			d = time.Until(dl)
		}
		r, err := n.System().Root.RequestFuture(n.Raylet(), raylet.Stats{}, d).Result()
		if err != nil {
			return nil, err
		}
		sr, ok := r.(*raylet.StatsReply)
		if !ok {
			return nil, fmt.Errorf("ray: metrics: the raylet answered %T", r)
		}
		return []metrics.NodeStats{{Role: "local", Budget: n.Core.StoreBudget(), InMemory: st.MemoryBytes, Spilled: st.SpilledBytes,
			Objects: st.Objects, SpillErrors: st.SpillErrors, InFlight: n.Core.InFlightBytes(), Queued: int64(sr.Queued)}}, nil
	}
	c, err := metrics.New(metrics.Config{Nodes: stats, Store: n.GCS(), CPUs: res.Map()[sched.CPU], Cluster: true, Logger: logger,
		Tasks: func(ctx context.Context) (metrics.TaskCounts, error) {
			rep, err := n.Core.Tasks(ctx, core.TaskQuery{Counts: true})
			// The one process's counts of ended attempts only grow (its shards' counters).
			var finished []core.TaskCount
			for _, c := range rep.Summary {
				if core.Ended(c.State) {
					finished = append(finished, c)
				}
			}
			return metrics.TaskCounts{Counts: rep.Summary, Finished: finished}, err
		}})
	if err != nil {
		return nil, err
	}
	h := promhttp.HandlerFor(metrics.Registry(c, nil), promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, MaxRequestsInFlight: 4})
	mux := http.NewServeMux()
	mux.Handle("/metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "metrics are read-only: GET /metrics", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	}))
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, rayErrorf("ray: Init: serve metrics on 127.0.0.1:%d: %w", port, err)
	}
	m := &metricsServer{
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
			WriteTimeout: 30 * time.Second, MaxHeaderBytes: 64 << 10},
		addr: l.Addr().String(),
		done: make(chan struct{}),
	}
	go func() {
		defer close(m.done)
		if err := m.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("ray: the metrics server stopped", "err", err)
		}
	}()
	return m, nil
}

// stop shuts the server down and waits for it.
func (m *metricsServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if m.srv.Shutdown(ctx) != nil {
		_ = m.srv.Close()
	}
	<-m.done
}
