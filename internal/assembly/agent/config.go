package agent

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ray-go/ray/internal/base/identity"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks/sched"
)

// DefaultGCSPort is the client port of the embedded etcd that `rayctl start --head` uses
// unless told otherwise (Ray's GCS port).
const DefaultGCSPort = 6379

// Config configures an Agent.
type Config struct {
	// Head makes this the cluster's head agent: it runs the GCS (an embedded etcd, unless
	// GCSEndpoints names an external one), runs `rayctl job submit` drivers and marks jobs
	// whose driver died FAILED.
	Head bool
	// GCSEndpoints are the host:port client endpoints of the GCS to join (comma-separated in
	// RAY_ADDRESS). Required unless Head; on the head, empty means "start an embedded etcd".
	GCSEndpoints []string
	// Host is the address the head's embedded etcd listens on and advertises, and the
	// address every agent's metrics endpoint listens on (default 127.0.0.1; give the
	// machine's address for a cluster that spans machines).
	Host string
	// GCSPort is the client port of the embedded etcd on Host (head without
	// GCSEndpoints). 0 picks a free port (tests); the CLI passes DefaultGCSPort. The peer port
	// is always picked.
	GCSPort int
	// Resources this machine offers (default CPU = runtime.NumCPU(); CPU is added with that
	// default when missing).
	Resources map[string]float64
	// ObjectStoreBytes is the object store budget of this machine (default 30% of RAM).
	ObjectStoreBytes int64
	// SpillDir, when set, is where the object stores of this machine's worker processes
	// spill (instead of under their directory in SessionDir), and those of the drivers of
	// submissions it runs (unless the submission's environment sets workerenv.SpillDir;
	// else they spill under their own directory): the agent makes a directory
	// of its own there, ray-go-agent-<ID>, in which each worker process's node makes its
	// own (shard.OpenSpillDir); Stop removes it, and a restarted agent (the same ID)
	// empties what its killed run left. Nothing else in SpillDir is touched, so agents may
	// share it. Start fails when it is not a writable directory (shard.CheckSpillDir).
	SpillDir string
	// SessionDir is this agent's own directory: gcs/ (embedded etcd data), logs/ (worker and
	// submission output), workers/<job> (the directory of each worker process), bin/<sha256>
	// (executables fetched from the GCS), submissions/<id> (unpacked working directories).
	// Required.
	SessionDir string
	// Rejoin says what to run on this machine to rejoin the cluster with a new certificate
	// once the head refuses this agent's (it was revoked); the CLI sets it (its commands,
	// with this agent's directory). Default: a generic hint.
	Rejoin string
	// BinCacheBytes caps the executables kept in <SessionDir>/bin (default
	// DefaultBinCacheBytes): beyond it the least recently used go, those in use excepted.
	BinCacheBytes int64
	// Namespace is the GCS key namespace (etcdstore.Config.Namespace); default none.
	Namespace string
	// ID is the agent ID (default: random). The CLI picks it so that the agent's directory
	// and its process can be matched.
	ID string
	// GCSDialTimeout bounds the wait for an external GCS to answer at Start (default 5 s).
	GCSDialTimeout time.Duration
	// Environ is the environment the worker processes and submitted drivers start from
	// (the CLI passes its own, os.Environ(); nil: none), without the variables of the worker
	// contract, which the agent sets itself.
	Environ []string
	// Logger receives the agent's log (default slog.Default()).
	Logger *slog.Logger

	// MetricsPort is the port of the agent's Prometheus endpoint, GET /metrics on Host (see
	// metrics.go and package internal/assembly/metrics): 0 picks a free port (the default,
	// for tests; the CLI passes DefaultMetricsPort), MetricsOff (-1) serves none.
	// Agent.MetricsAddress and the agent's record (AgentInfo.metrics_address) say where it
	// is. The endpoint is plain HTTP without authentication, like Ray's: it is read-only
	// and shows counts, sizes and names (functions, actor classes, roles), never job
	// environments, logs, keys or tokens. On a machine others reach, bind it (Host) where
	// only the Prometheus server can connect, or firewall it.
	MetricsPort int
	// MetricsPortFallback serves metrics on a free port when MetricsPort is taken, instead
	// of failing Start (the CLI's default port: two agents on one machine).
	MetricsPortFallback bool

	// NewDashboard makes the web dashboard a head serves (see dashboard.go; package
	// internal/assembly/dashboard implements it, the CLI passes dashboard.New). nil, or a
	// non-head agent, or DashboardPort DashboardOff: none.
	NewDashboard func(DashboardConfig) (Dashboard, error)
	// DashboardPort is the port of the head's dashboard on Host (it serves /metrics too):
	// 0 picks a free port (the default, for tests; the CLI passes DefaultDashboardPort),
	// DashboardOff (-1) serves none. Agent.DashboardAddress and the agent's record
	// (AgentInfo.dashboard_address) say where it is.
	DashboardPort int
	// DashboardPortFallback serves the dashboard on a free port when DashboardPort is
	// taken, instead of failing Start (the CLI's default port).
	DashboardPortFallback bool
	// DashboardTLS serves the dashboard over HTTPS with the head's certificate (signed by
	// the cluster CA, for 127.0.0.1 and Host; no client certificate asked), so the token
	// and the cluster's state never cross the network in clear. A browser trusts it once
	// the cluster CA (<agent dir>/tls/ca.crt) is imported, or after its warning. Needs the
	// cluster's identity: not with Insecure.
	DashboardTLS bool

	// Insecure turns security off: a plain-text GCS without client certificates, no CA, no
	// join endpoint, no credentials for the processes the agent starts. Only for
	// benchmarks' baselines and throw-away clusters on one machine (--insecure).
	Insecure bool
	// Token is the cluster's join token (a joining agent, unless GCSFiles gives it
	// credentials): presented once to the head's join endpoint for a certificate.
	Token *identity.Token
	// JoinAddress is the head's join endpoint (host:port). On the head: where it listens
	// (default: Host, GCSPort+1; a picked port when GCSPort is 0). On a joining agent:
	// where it asks (default: the first GCS endpoint's host, its port+1).
	JoinAddress string
	// GCSFiles are credentials for an external etcd (GCSEndpoints): the CA that signed its
	// server certificates, and a client certificate and key it accepts. A head with
	// GCSEndpoints needs them (unless Insecure); an agent joining such a cluster too (a
	// token gets a certificate of the cluster CA, which the external etcd does not trust).
	GCSFiles identity.Files

	// CertCollectEvery is how often a secure head with an embedded GCS matches the GCS's
	// users to the certificates and collects the records of expired ones (gcsauth.go):
	// default DefaultCertCollectEvery.
	CertCollectEvery time.Duration
	// CertRetention is how long the records of an expired certificate (certs/, and
	// revoked/ for a revoked one) stay, for `rayctl cert list` to show it EXPIRED, before
	// a collection deletes them: default DefaultCertRetention. A revoked certificate's
	// record stays at least identity.ClockSkew past its expiry whatever this says.
	CertRetention time.Duration
	// DriverCertValidity is the lifetime of the driver certificates the head's join
	// endpoint issues (ray.Init with an address and the token; the driver renews its own
	// at half of it while it runs): default identity.DriverCertValidity, at least
	// identity.MinRenewableValidity.
	DriverCertValidity time.Duration

	// SweepEvery is how often the head deletes the lineage pages and object table entries
	// of processes gone for SweepGrace (gcssweep.go): defaults DefaultSweepEvery and
	// DefaultSweepGrace. The grace must cover the adoption of a dead owner's objects by
	// its borrowers, which read its lineage when they learn it died (seconds).
	SweepEvery time.Duration
	SweepGrace time.Duration

	// MaxDeadActors is how many dead actors' records the head keeps (deadactors.go): beyond
	// it the oldest dead are deleted. Default DefaultMaxDeadActors; negative keeps none.
	MaxDeadActors int
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if !c.Head && len(c.GCSEndpoints) == 0 {
		return errors.New("agent: a non-head agent needs GCSEndpoints (the head's address)")
	}
	for _, ep := range c.GCSEndpoints {
		if strings.TrimSpace(ep) == "" || strings.Contains(ep, ",") {
			return fmt.Errorf("agent: bad GCS endpoint %q", ep)
		}
	}
	if c.GCSPort < 0 || c.GCSPort > 65535 {
		return fmt.Errorf("agent: GCS port %d out of range 0-65535", c.GCSPort)
	}
	for name, v := range c.Resources {
		if name == "" {
			return errors.New("agent: resource with an empty name")
		}
		if _, err := sched.QuantityOf(v); err != nil {
			return fmt.Errorf("agent: resource %s: %w", name, err)
		}
	}
	if c.MetricsPort < MetricsOff || c.MetricsPort > 65535 {
		return fmt.Errorf("agent: metrics port %d out of range (0-65535, or -1 for none)", c.MetricsPort)
	}
	if c.DashboardPort < DashboardOff || c.DashboardPort > 65535 {
		return fmt.Errorf("agent: dashboard port %d out of range (0-65535, or -1 for none)", c.DashboardPort)
	}
	if c.GCSDialTimeout < 0 {
		return errors.New("agent: negative GCSDialTimeout")
	}
	if c.BinCacheBytes < 0 {
		return fmt.Errorf("agent: negative BinCacheBytes %d", c.BinCacheBytes)
	}
	if c.ObjectStoreBytes < 0 {
		return fmt.Errorf("agent: negative ObjectStoreBytes %d", c.ObjectStoreBytes)
	}
	if c.SessionDir == "" {
		return errors.New("agent: empty SessionDir")
	}
	if c.Insecure && (c.Token != nil || !c.GCSFiles.IsZero()) {
		return errors.New("agent: Insecure excludes a token and GCS credentials: a cluster is secure or not")
	}
	if f := c.GCSFiles; !f.IsZero() && (f.CA == "" || f.Cert == "" || f.Key == "") {
		return errors.New("agent: GCS credentials need all three files: the CA certificate, a client certificate and its key")
	}
	if c.JoinAddress != "" {
		if _, _, err := net.SplitHostPort(c.JoinAddress); err != nil {
			return fmt.Errorf("agent: join address %q: want host:port", c.JoinAddress)
		}
	}
	if c.CertCollectEvery < 0 || c.CertRetention < 0 {
		return errors.New("agent: negative CertCollectEvery or CertRetention")
	}
	if c.DriverCertValidity != 0 && c.DriverCertValidity < identity.MinRenewableValidity {
		return fmt.Errorf("agent: DriverCertValidity %v is shorter than %v", c.DriverCertValidity, identity.MinRenewableValidity)
	}
	if strings.ContainsAny(c.ID, "/ \t\n") {
		return fmt.Errorf("agent: ID %q contains '/' or white space", c.ID)
	}
	return nil
}

// withDefaults fills the zero values.
func (c Config) withDefaults() (Config, error) {
	res := make(map[string]float64, len(c.Resources)+1)
	for k, v := range c.Resources {
		res[k] = v
	}
	if _, ok := res[sched.CPU]; !ok {
		res[sched.CPU] = float64(runtime.NumCPU())
	}
	c.Resources = res
	if c.ObjectStoreBytes == 0 {
		total, err := MemTotal()
		if err != nil {
			return c, fmt.Errorf("agent: default object store size: %w", err)
		}
		c.ObjectStoreBytes = int64(float64(total) * 0.3)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.BinCacheBytes == 0 {
		c.BinCacheBytes = DefaultBinCacheBytes
	}
	if c.CertCollectEvery == 0 {
		c.CertCollectEvery = DefaultCertCollectEvery
	}
	if c.CertRetention == 0 {
		c.CertRetention = DefaultCertRetention
	}
	if c.DriverCertValidity == 0 {
		c.DriverCertValidity = identity.DriverCertValidity
	}
	if c.SweepEvery <= 0 {
		c.SweepEvery = DefaultSweepEvery
	}
	if c.SweepGrace <= 0 {
		c.SweepGrace = DefaultSweepGrace
	}
	if c.MaxDeadActors == 0 {
		c.MaxDeadActors = DefaultMaxDeadActors
	}
	eps := make([]string, 0, len(c.GCSEndpoints))
	for _, ep := range c.GCSEndpoints {
		eps = append(eps, trimScheme(strings.TrimSpace(ep)))
	}
	c.GCSEndpoints = eps
	return c, nil
}

// MemTotal returns the machine's RAM in bytes (MemTotal of /proc/meminfo).
func MemTotal() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/meminfo: %q: %w", sc.Text(), err)
			}
			return kb << 10, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("/proc/meminfo has no MemTotal")
}

// ResourcesToPB converts a resource map to its wire form, sorted by name.
func ResourcesToPB(m map[string]float64) []*pb.ResourceQty {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]*pb.ResourceQty, 0, len(names))
	for _, k := range names {
		q, err := sched.QuantityOf(m[k])
		if err != nil {
			q = 0
		}
		out = append(out, &pb.ResourceQty{Name: k, Amount: int64(q)})
	}
	return out
}

// ResourcesFromPB converts the wire form to a map of whole units.
func ResourcesFromPB(list []*pb.ResourceQty) map[string]float64 {
	m := make(map[string]float64, len(list))
	for _, q := range list {
		m[q.GetName()] += sched.Quantity(q.GetAmount()).Float()
	}
	return m
}
