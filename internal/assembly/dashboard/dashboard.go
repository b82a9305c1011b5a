package dashboard

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ray-go/ray/internal/assembly/agent"
	"github.com/ray-go/ray/internal/assembly/clusterstate"
	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/assembly/metrics"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/identity"
)

//go:embed static
var staticFiles embed.FS

// Config configures a Dashboard.
type Config struct {
	// Store is the GCS the pages read (required).
	Store gcs.Store
	// Address is the cluster's address, shown as rayctl status shows it ("" unknown).
	Address string
	// Metrics serves GET /metrics (nil: 404); Gatherer is what the charts sample besides
	// the GCS (nil: the task, actor and head machine charts stay empty).
	Metrics  http.Handler
	Gatherer prometheus.Gatherer
	// TokenFile is the cluster's join token, which every request must present; "" asks
	// for none (an insecure cluster). Token, when set, reads it instead of TokenFile (a
	// head reads it through its CA directory opened at start, not by path).
	TokenFile string
	Token     func() (identity.Token, error)
	// SampleEvery is the charts' sampling interval (default 5 s); Window how long they
	// reach back (default 1 h): the ring holds Window/SampleEvery samples.
	SampleEvery time.Duration
	Window      time.Duration
	// MaxInFlight bounds the requests that read the cluster at once (default 4).
	MaxInFlight int
	Logger      *slog.Logger // default slog.Default()
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Store == nil:
		return errors.New("dashboard: no Store")
	case c.SampleEvery < 0 || c.Window < 0 || c.MaxInFlight < 0:
		return errors.New("dashboard: negative SampleEvery, Window or MaxInFlight")
	case c.SampleEvery > 0 && c.Window > 0 && c.Window < c.SampleEvery:
		return errors.New("dashboard: Window shorter than SampleEvery")
	}
	return nil
}

// Dashboard serves the pages, the JSON under /api/ and /metrics; Run samples the charts.
type Dashboard struct {
	cfg      Config
	mux      *http.ServeMux
	samples  *ring
	machines machines
	slots    chan struct{} // requests reading the cluster now
	key      [32]byte      // signs the session cookie
}

// New returns a Dashboard; it samples nothing until Run.
func New(cfg Config) (*Dashboard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.SampleEvery == 0 {
		cfg.SampleEvery = 5 * time.Second
	}
	if cfg.Window == 0 {
		cfg.Window = time.Hour
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = 4
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	d := &Dashboard{cfg: cfg, samples: newRing(int(cfg.Window / cfg.SampleEvery)), slots: make(chan struct{}, cfg.MaxInFlight)}
	if _, err := rand.Read(d.key[:]); err != nil {
		return nil, err
	}
	static, err := fs.Sub(staticFiles, "static")
	if err != nil {
		return nil, err
	}
	d.mux = http.NewServeMux()
	d.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	d.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "index.html")
	})
	d.mux.HandleFunc("GET /api/cluster", d.bounded(d.apiCluster))
	d.mux.HandleFunc("GET /api/actors", d.bounded(d.apiActors))
	d.mux.HandleFunc("GET /api/tasks", d.bounded(d.apiTasks))
	d.mux.HandleFunc("GET /api/objects", d.bounded(d.apiObjects))
	d.mux.HandleFunc("GET /api/timeline", d.bounded(d.apiTimeline))
	d.mux.HandleFunc("GET /api/logs/{submission}", d.bounded(d.apiLogs))
	d.mux.HandleFunc("GET /api/metrics", d.apiMetrics)
	if cfg.Metrics != nil {
		d.mux.Handle("GET /metrics", d.bounded(cfg.Metrics.ServeHTTP))
	}
	return d, nil
}

// NewForAgent adapts New to agent.Config.NewDashboard.
func NewForAgent(c agent.DashboardConfig) (agent.Dashboard, error) {
	return New(Config{Store: c.Store, Metrics: c.Metrics, Gatherer: c.Gatherer, TokenFile: c.TokenFile, Token: c.Token, Logger: c.Logger, Address: c.Address})
}

// ServeHTTP serves a request: read-only, and only with the token.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "the dashboard is read-only: GET only", http.StatusMethodNotAllowed)
		return
	}
	if !d.authorize(w, r) {
		return
	}
	d.mux.ServeHTTP(w, r)
}

// slotWait bounds how long a request waits for a slot.
const slotWait = 5 * time.Second

// bounded runs h in one of MaxInFlight slots.
func (d *Dashboard) bounded(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		t := time.NewTimer(slotWait)
		defer t.Stop()
		select {
		case d.slots <- struct{}{}:
			defer func() { <-d.slots }()
		case <-t.C:
			http.Error(w, "the dashboard is busy: too many requests at once; try again", http.StatusServiceUnavailable)
			return
		case <-r.Context().Done():
			return
		}
		h(w, r)
	}
}

// Run samples the charts every SampleEvery until ctx is done.
func (d *Dashboard) Run(ctx context.Context) {
	t := time.NewTicker(d.cfg.SampleEvery)
	defer t.Stop()
	for {
		d.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sampleTimeout bounds one sample's reads.
const sampleTimeout = 4 * time.Second

func (d *Dashboard) sample(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, sampleTimeout)
	defer cancel()
	st, err := clusterstate.Read(ctx, d.cfg.Store)
	if err != nil {
		if ctx.Err() == nil {
			d.cfg.Logger.Debug("dashboard: sample the cluster", "err", err)
		}
		return
	}
	s := Sample{UnixMs: time.Now().UnixMilli(), NodesAlive: float64(st.Cluster.AliveNodes), JobsRunning: float64(st.Cluster.RunningJobs),
		CPUUsed: st.Cluster.InUse["CPU"], CPUTotal: st.Cluster.Total["CPU"],
		StoreUsed: float64(st.Cluster.ObjectStoreUsed), StoreBudget: float64(st.Cluster.ObjectStoreBudget)}
	if d.cfg.Gatherer != nil {
		fams, err := d.cfg.Gatherer.Gather()
		if err != nil {
			d.cfg.Logger.Debug("dashboard: gather the metrics", "err", err)
		}
		for _, f := range fams {
			for _, m := range f.GetMetric() {
				v := m.GetGauge().GetValue()
				switch f.GetName() {
				case "ray_tasks":
					switch label(m.GetLabel(), "State") {
					case core.StateRunning:
						s.TasksRunning += v
					case core.StatePendingArgs, core.StatePendingNode:
						s.TasksPending += v
					case core.StateFinished:
						s.TasksDone += v
					case core.StateFailed:
						s.TasksFailed += v
					}
				case "ray_actors":
					if label(m.GetLabel(), "State") == "ALIVE" {
						s.ActorsAlive += v
					}
				case "ray_node_cpu_utilization":
					s.HeadCPU = v
				case "ray_node_mem_used":
					s.HeadMemUsed = v
				case "ray_node_mem_total":
					s.HeadMemTotal = v
				}
			}
		}
	}
	d.samples.add(s)
	d.scrapeMachines(ctx, st.Nodes)
}

// Machine is one agent's machine as its /metrics last said (the overview's memory bars).
type Machine struct {
	CPUPercent float64 `json:"cpu_percent"`
	MemUsed    float64 `json:"mem_used"`
	MemTotal   float64 `json:"mem_total"`
	UnixMs     int64   `json:"t"`
}

// machines is the last scrape of each agent's metrics (a leaf: the mutex guards the map).
type machines struct {
	mu   sync.Mutex
	byID map[string]Machine
}

func (m *machines) set(byID map[string]Machine) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.byID = byID
}

func (m *machines) get() map[string]Machine {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byID
}

// maxScrapes bounds the agents' metrics endpoints scraped at once.
const maxScrapes = 8

// scrapeMachines reads the machine of every alive agent that serves metrics, from its
// GET /metrics (the memory of a machine is not in the GCS), and keeps the answers.
func (d *Dashboard) scrapeMachines(ctx context.Context, nodes []clusterstate.NodeStatus) {
	out := map[string]Machine{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxScrapes)
	for _, n := range nodes {
		if !n.Alive || n.MetricsAddress == "" {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f, err := metrics.Scrape(ctx, "http://"+n.MetricsAddress+"/metrics")
			if err != nil {
				d.cfg.Logger.Debug("dashboard: scrape an agent's metrics", "agent", n.AgentID, "err", err)
				return
			}
			var m Machine
			m.CPUPercent, _ = f.Value("ray_node_cpu_utilization")
			m.MemUsed, _ = f.Value("ray_node_mem_used")
			m.MemTotal, _ = f.Value("ray_node_mem_total")
			m.UnixMs = time.Now().UnixMilli()
			mu.Lock()
			out[n.AgentID] = m
			mu.Unlock()
		}()
	}
	wg.Wait()
	d.machines.set(out)
}
