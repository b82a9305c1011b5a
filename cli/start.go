package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"
	ucli "github.com/urfave/cli/v2"

	"github.com/ray-go/ray/internal/assembly/agent"
	"github.com/ray-go/ray/internal/assembly/dashboard"
	"github.com/ray-go/ray/internal/base/identity"
	"github.com/ray-go/ray/internal/base/workerenv"
	"github.com/ray-go/ray/objects/shard"
)

// readyTimeout bounds how long `rayctl start` waits for its background agent.
const readyTimeout = 60 * time.Second

func startCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "start",
		Usage: "start this machine's node agent: a new cluster's head (--head) or one that joins (--address)",
		Description: "Without --block the agent runs in the background (its output in " +
			"<session-dir>/agent-<id>/logs/agent.log); rayctl waits until it is ready, prints the " +
			"cluster's address and exits.",
		Flags: append([]ucli.Flag{
			&ucli.BoolFlag{Name: "head", Usage: "start a new cluster: run the GCS (an embedded etcd, or --gcs-endpoints) and this machine's agent", EnvVars: []string{"RAY_GO_HEAD"}},
			&ucli.IntFlag{Name: "port", Usage: "client port of the head's embedded GCS", Value: agent.DefaultGCSPort, EnvVars: []string{"RAY_GO_PORT"}},
			&ucli.StringFlag{Name: "host", Usage: "the address this agent's metrics endpoint and, on the head, its embedded GCS listen on (the GCS advertises it); give this machine's address when other machines join or a Prometheus elsewhere scrapes", Value: "127.0.0.1", EnvVars: []string{"RAY_GO_HOST"}},
			&ucli.IntFlag{Name: "metrics-port", Usage: "port of this agent's Prometheus endpoint, GET http://HOST:PORT/metrics (plain HTTP, read-only; 0: a free port; -1: none). The default port falls back to a free one when taken; \"rayctl metrics\" lists where each agent serves", Value: agent.DefaultMetricsPort, EnvVars: []string{"RAY_GO_METRICS_PORT"}},
			&ucli.IntFlag{Name: "dashboard-port", Usage: "head: port of the web dashboard, http://HOST:PORT/ (and its /metrics; asks for the cluster's token; 0: a free port; -1: none). The default port falls back to a free one when taken; \"rayctl status\" says where it is", Value: agent.DefaultDashboardPort, EnvVars: []string{"RAY_GO_DASHBOARD_PORT"}},
			&ucli.BoolFlag{Name: "dashboard-tls", Usage: "head: serve the dashboard over HTTPS with the head's certificate (signed by the cluster CA: import <session>/agent-<id>/tls/ca.crt into the browser, or accept its warning), so the token never crosses the network in clear", EnvVars: []string{"RAY_GO_DASHBOARD_TLS"}},
			&ucli.StringFlag{Name: "address", Usage: "join the cluster whose GCS is at HOST:PORT[,HOST:PORT] (env RAY_GO_ADDRESS, or RAY_ADDRESS)", EnvVars: []string{"RAY_GO_ADDRESS"}},
			&ucli.Float64Flag{Name: "num-cpus", Usage: "CPUs this machine offers", DefaultText: "all cores", EnvVars: []string{"RAY_GO_NUM_CPUS"}},
			&ucli.Float64Flag{Name: "num-gpus", Usage: "GPUs this machine offers", EnvVars: []string{"RAY_GO_NUM_GPUS"}},
			&ucli.StringFlag{Name: "resources", Usage: `custom resources as JSON, e.g. '{"accel":2}' (CPU and GPU have their own flags)`, EnvVars: []string{"RAY_GO_CUSTOM_RESOURCES"}},
			&ucli.StringFlag{Name: "object-store-memory", Usage: "this machine's object store budget, shared by the stores of every job's worker processes here (beyond it they spill): bytes, or with a unit: 500MB, 2GiB", DefaultText: "30% of RAM", EnvVars: []string{"RAY_GO_OBJECT_STORE_MEMORY"}},
			&ucli.StringFlag{Name: "spill-dir", Usage: "where this machine's object stores (its worker processes' and those of the drivers rayctl job submit runs here, unless the job's --env sets " + workerenv.SpillDir + ") spill objects beyond --object-store-memory (Ray's --object-spilling-directory), e.g. a scratch disk: " +
				"a directory, created if missing; a relative path is taken from the current directory. The agent works in a directory of its own there, ray-go-agent-<id>, " +
				"removed by rayctl stop, and touches nothing else, so agents may share it", DefaultText: "<session-dir>/agent-<id>/workers/<job>/spill", EnvVars: []string{workerenv.SpillDir}},
			sessionDirFlag(),
			&ucli.StringFlag{Name: "gcs-endpoints", Usage: "head: use this external etcd (HOST:PORT[,HOST:PORT]) as the GCS instead of an embedded one", EnvVars: []string{"RAY_GO_GCS_ENDPOINTS"}},
			namespaceFlag(),
			&ucli.BoolFlag{Name: "block", Usage: "run the agent in the foreground until SIGINT or SIGTERM", EnvVars: []string{"RAY_GO_BLOCK"}},
			&ucli.StringFlag{Name: "agent-id", Usage: "the agent's ID (set by rayctl for its background agent)", Hidden: true},
			// Tests of the certificates' lifecycle (agent.Config's fields of the same names).
			&ucli.DurationFlag{Name: "driver-cert-validity", Usage: "head: lifetime of drivers' certificates", Hidden: true},
			&ucli.DurationFlag{Name: "cert-collect-every", Usage: "head: period of the collection of expired certificates' records", Hidden: true},
			&ucli.DurationFlag{Name: "cert-retention", Usage: "head: how long an expired certificate's records stay", Hidden: true},
			&ucli.IntFlag{Name: "max-dead-actors", Usage: "head: how many dead actors' records the cluster keeps (the oldest dead beyond go; -1: none)", DefaultText: "10000"},
			// Tests of the deletion of gone processes' lineage and object records (agent.Config).
			&ucli.DurationFlag{Name: "sweep-every", Usage: "head: period of the deletion of gone processes' lineage and object records", Hidden: true},
			&ucli.DurationFlag{Name: "sweep-grace", Usage: "head: how long a gone process's lineage and object records stay", Hidden: true},
			&ucli.IntFlag{Name: "join-port", Usage: "head: the port of its join endpoint (on --host), where agents and drivers trade the token for a certificate", DefaultText: "--port + 1", EnvVars: []string{"RAY_GO_JOIN_PORT"}},
		}, credentialFlags()...),
		Action: runStart,
	}
}

// startConfig turns the flags into an agent configuration.
func startConfig(c *ucli.Context) (agent.Config, error) {
	cfg := agent.Config{
		Environ:   os.Environ(),
		Head:      c.Bool("head"),
		Namespace: c.String("namespace"),
		ID:        c.String("agent-id"),

		DriverCertValidity: c.Duration("driver-cert-validity"),
		CertCollectEvery:   c.Duration("cert-collect-every"),
		CertRetention:      c.Duration("cert-retention"),
		SweepEvery:         c.Duration("sweep-every"),
		SweepGrace:         c.Duration("sweep-grace"),
		MaxDeadActors:      c.Int("max-dead-actors"),
	}
	cfg.Host = c.String("host")
	cfg.MetricsPort = c.Int("metrics-port")
	cfg.MetricsPortFallback = !c.IsSet("metrics-port")
	if cfg.MetricsPort < agent.MetricsOff || cfg.MetricsPort > 65535 {
		return cfg, exitf(ExitError, "--metrics-port %d: want a port between 0 and 65535, or -1 for no metrics endpoint", cfg.MetricsPort)
	}
	cfg.DashboardPort = c.Int("dashboard-port")
	cfg.DashboardPortFallback = !c.IsSet("dashboard-port")
	cfg.DashboardTLS = c.Bool("dashboard-tls")
	if cfg.DashboardPort < agent.DashboardOff || cfg.DashboardPort > 65535 {
		return cfg, exitf(ExitError, "--dashboard-port %d: want a port between 0 and 65535, or -1 for no dashboard", cfg.DashboardPort)
	}
	cfg.NewDashboard = dashboard.NewForAgent
	address := c.String("address")
	if c.IsSet("address") && address != "" && cfg.Head {
		return cfg, exitf(ExitError, "--head and --address exclude each other: --head starts a new cluster, --address joins one")
	}
	if !cfg.Head && address == "" {
		address = os.Getenv(workerenv.Address)
	}
	switch {
	case cfg.Head:
		cfg.GCSPort = c.Int("port")
		cfg.GCSEndpoints = workerenv.SplitAddress(c.String("gcs-endpoints"))
		if cfg.GCSPort <= 0 || cfg.GCSPort > 65535 {
			return cfg, exitf(ExitError, "--port %d: want a port between 1 and 65535", cfg.GCSPort)
		}
	case address == "":
		return cfg, exitf(ExitError, "say what to start: --head for a new cluster, or --address HOST:PORT (or RAY_ADDRESS) to join one")
	default:
		if c.IsSet("gcs-endpoints") {
			return cfg, exitf(ExitError, "--gcs-endpoints is for the head; an agent that joins takes the cluster's address with --address")
		}
		cfg.GCSEndpoints = workerenv.SplitAddress(address)
	}
	if err := startCredentials(c, &cfg); err != nil {
		return cfg, err
	}
	res := map[string]float64{}
	if s := c.String("resources"); s != "" {
		if err := json.Unmarshal([]byte(s), &res); err != nil {
			return cfg, exitf(ExitError, `--resources %q: want a JSON object of numbers, e.g. '{"accel":2}': %v`, s, err)
		}
		for name := range res {
			switch strings.ToUpper(name) {
			case "CPU":
				return cfg, exitf(ExitError, "--resources names %s: set CPUs with --num-cpus", name)
			case "GPU":
				return cfg, exitf(ExitError, "--resources names %s: set GPUs with --num-gpus", name)
			}
		}
	}
	if c.IsSet("num-cpus") {
		res["CPU"] = c.Float64("num-cpus")
	}
	if c.IsSet("num-gpus") && c.Float64("num-gpus") != 0 {
		res["GPU"] = c.Float64("num-gpus")
	}
	cfg.Resources = res
	if s := c.String("object-store-memory"); s != "" {
		n, err := humanize.ParseBytes(s)
		if err != nil || n == 0 || n > 1<<62 {
			return cfg, exitf(ExitError, "--object-store-memory %q: want a positive size in bytes, or with a unit such as 500MB or 2GiB", s)
		}
		cfg.ObjectStoreBytes = int64(n)
	}
	if c.IsSet("spill-dir") {
		spill, err := shard.CheckSpillDir(c.String("spill-dir"))
		if err != nil {
			return cfg, exitf(ExitError, "--spill-dir: %v", err)
		}
		cfg.SpillDir = spill
	}
	dir, err := filepath.Abs(c.String("session-dir"))
	if err != nil {
		return cfg, exitf(ExitError, "--session-dir: %v", err)
	}
	// The session dir must be this user's, and nobody else's to write in: a head keeps the
	// cluster's CA and join token under it, and another user who made it (a pre-created
	// /tmp/ray-go) could swap the head's directory for one with a token of theirs.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return cfg, exitf(ExitError, "create the session dir: %v", err)
	}
	if err := checkSessionDir(dir, true); err != nil {
		return cfg, err
	}
	if cfg.ID == "" {
		// An agent that ran on this session dir before, for the same role and cluster, comes
		// back as itself: the same ID, directory, credentials and, for a head, the same CA,
		// token and GCS data (issue: the cluster runtime, item 5).
		prev, err := previousAgent(dir, cfg.Head, clusterOf(cfg))
		if err != nil {
			return cfg, err
		}
		if cfg.ID = prev; cfg.ID != "" {
			fmt.Fprintf(c.App.ErrWriter, "rayctl: restarting agent %s from %s (it ran here before; remove that directory to start a new one)\n",
				cfg.ID, agentDir(dir, cfg.ID))
		} else {
			cfg.ID = agent.NewID()
		}
	}
	if err := alreadyRunning(dir, cfg); err != nil {
		return cfg, err
	}
	cfg.SessionDir = agentDir(dir, cfg.ID)
	if _, err := os.Lstat(cfg.SessionDir); err == nil {
		if err := checkSessionDir(cfg.SessionDir, true); err != nil {
			return cfg, err
		}
	}
	if !cfg.Head {
		cfg.Rejoin = fmt.Sprintf("rayctl start --address %s --session-dir %s --token <the cluster's join token> "+
			"(`rayctl token show` on the head prints it; a new certificate)", strings.Join(cfg.GCSEndpoints, ","), dir)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, exitf(ExitError, "%v", err)
	}
	return cfg, nil
}

// alreadyRunning refuses to start an agent that runs already, or a second head in one
// session directory: the directory's commands (`rayctl status`, `token`, `job`, a restart)
// would then find either cluster's head (a second head was accepted, and a restart later
// brought back the wrong cluster).
func alreadyRunning(dir string, cfg agent.Config) error {
	las, err := localAgents(dir)
	if err != nil {
		return nil
	}
	for _, la := range las {
		switch {
		case !la.live:
		case la.id == cfg.ID:
			return exitf(ExitError, "agent %s already runs (pid %d) in %s: stop it first (rayctl stop --session-dir %s)", la.id, la.pid, dir, dir)
		case cfg.Head && la.info != nil && la.info.Head:
			return exitf(ExitError, "a head agent already runs in %s (agent %s, pid %d, cluster %s): stop it first (rayctl stop --session-dir %s), or start the new cluster with another --session-dir",
				dir, la.id, la.pid, la.info.Address, dir)
		}
	}
	return nil
}

// clusterOf is agentIdentity.Cluster for cfg.
func clusterOf(cfg agent.Config) string {
	return strings.Join(cfg.GCSEndpoints, ",")
}

// startCredentials sets the agent's security from the flags: --insecure, or a secure
// head (its join endpoint on --join-port), or a joining agent's token or external-etcd
// credentials.
func startCredentials(c *ucli.Context, cfg *agent.Config) error {
	files, err := gcsFiles(c)
	if err != nil {
		return err
	}
	tok, haveToken, err := tokenOf(c)
	if err != nil {
		return err
	}
	if cfg.Head && haveToken && !onCommandLine(c, "token", "token-file") {
		// Exported for the cluster's drivers and rayctl (as the README shows): not a
		// request to join. The head makes (or, restarted, keeps) its own.
		haveToken = false
	}
	cfg.Insecure = c.Bool("insecure")
	cfg.GCSFiles = files
	switch {
	case cfg.Insecure && (haveToken || !files.IsZero()):
		return exitf(ExitError, "--insecure excludes --token and --gcs-ca/--gcs-cert/--gcs-key: a cluster is secure or not")
	case cfg.Head && haveToken:
		return exitf(ExitError, "--token is for joining a cluster: the head makes the cluster's token (and prints it)")
	case cfg.Head:
		if c.IsSet("join-port") {
			p := c.Int("join-port")
			if p <= 0 || p > 65535 || p == cfg.GCSPort {
				return exitf(ExitError, "--join-port %d: want a port between 1 and 65535 other than --port", p)
			}
			cfg.JoinAddress = net.JoinHostPort(cfg.Host, strconv.Itoa(p))
		} else if cfg.GCSPort >= 65535 {
			return exitf(ExitError, "--port %d leaves no room for the join endpoint at --port + 1: pass --join-port", cfg.GCSPort)
		}
	default:
		if c.IsSet("join-port") {
			return exitf(ExitError, "--join-port is for the head; an agent that joins takes the head's join endpoint with --join-address")
		}
		if haveToken {
			cfg.Token = &tok
		}
		cfg.JoinAddress = c.String("join-address")
	}
	return nil
}

// warnInsecure says what --insecure gives up.
func warnInsecure(c *ucli.Context) {
	fmt.Fprintln(c.App.ErrWriter, "rayctl: WARNING: --insecure: the GCS speaks plain text and asks for no certificate: anyone who "+
		"reaches its port can read every key and make this cluster's head agent run any command. Use it only for "+
		"benchmark baselines or on a machine nobody else can reach.")
}

func runStart(c *ucli.Context) error {
	if c.NArg() > 0 {
		return exitf(ExitError, "start takes no arguments (got %q); see rayctl start --help", c.Args().Slice())
	}
	cfg, err := startConfig(c)
	if err != nil {
		return err
	}
	if cfg.Insecure {
		warnInsecure(c)
	}
	if c.Bool("block") {
		return runAgent(c, cfg)
	}
	return startBackground(c, cfg)
}

// classify gives an agent start error its exit code and advice.
func classify(cfg agent.Config, err error) *exitError {
	switch {
	case errors.Is(err, agent.ErrMetricsPortInUse), errors.Is(err, agent.ErrDashboardPortInUse):
		return &exitError{code: ExitPortInUse, err: err}
	case errors.Is(err, agent.ErrPortInUse):
		// The agent's message names the port that is taken (the GCS's, or the join
		// endpoint's) and its host.
		return &exitError{code: ExitPortInUse, err: fmt.Errorf(
			"cannot start the head: %v. Pass --port (the GCS's) or --join-port to use other ports, or stop the process that holds it (`rayctl stop` if it is a ray-go agent)",
			err)}
	case errors.Is(err, agent.ErrNoCredentials) || errors.Is(err, agent.ErrCredentials):
		return &exitError{code: ExitCredentials, err: err}
	case errors.Is(err, agent.ErrJoinEndpoint):
		return &exitError{code: ExitGCSUnreachable, err: err} // it says what to pass instead
	case errors.Is(err, agent.ErrGCSUnreachable):
		return &exitError{code: ExitGCSUnreachable, err: fmt.Errorf(
			"cannot reach the cluster's GCS at %s: is the head agent running (`rayctl start --head` on the head machine) and the address right? (%v)",
			strings.Join(cfg.GCSEndpoints, ","), err)}
	}
	return &exitError{code: ExitError, err: err}
}

// runAgent runs the agent in this process until SIGINT or SIGTERM (--block).
func runAgent(c *ucli.Context, cfg agent.Config) error {
	// 0700 and 0600, as the agent's own files (internal/assembly/agent).
	if err := os.MkdirAll(cfg.SessionDir, 0o700); err != nil {
		return exitf(ExitError, "create the agent directory: %v", err)
	}
	if err := checkSessionDir(cfg.SessionDir, true); err != nil {
		return err
	}
	removeStartFiles(cfg.SessionDir) // a previous run's, if it was killed (startBackground did, unless --block was given)
	pidFile := filepath.Join(cfg.SessionDir, pidFileName)
	readyFile := filepath.Join(cfg.SessionDir, readyFileName)
	errFile := filepath.Join(cfg.SessionDir, errorFileName)
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return exitf(ExitError, "write %s: %v", pidFile, err)
	}
	defer func() {
		_ = os.Remove(pidFile)
		_ = os.Remove(readyFile)
	}()
	cfg.Logger = slog.New(slog.NewTextHandler(c.App.ErrWriter, nil))

	sigCtx, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stopSignals()
	startCtx, cancel := context.WithTimeout(sigCtx, readyTimeout)
	a, err := agent.Start(startCtx, cfg)
	cancel()
	if err != nil {
		ee := classify(cfg, err)
		_ = writeJSON(errFile, agentError{Message: ee.Error(), Code: ee.code})
		return ee
	}
	info := agentFile{
		AgentID: a.ID(), Pid: os.Getpid(), Address: a.Address(), Head: cfg.Head,
		Dir: cfg.SessionDir, StartedUnixMs: time.Now().UnixMilli(),
		Insecure: cfg.Insecure, JoinAddress: a.JoinAddress(), MetricsAddress: a.MetricsAddress(),
		DashboardAddress: a.DashboardAddress(), DashboardTLS: cfg.DashboardTLS && a.DashboardAddress() != "",
		SpillDir: a.SpillDir(),
	}
	if f := a.CredentialFiles(); !cfg.Insecure {
		info.GCSCA, info.GCSCert, info.GCSKey = f.CA, f.Cert, f.Key
	}
	if info.JoinAddress != "" {
		info.TokenFile = agent.TokenPath(cfg.SessionDir)
	}
	if err := writeJSON(readyFile, info); err != nil {
		_ = a.Stop(context.Background())
		return exitf(ExitError, "write %s: %v", readyFile, err)
	}
	idFile := filepath.Join(cfg.SessionDir, identityFileName)
	if err := writeJSON(idFile, agentIdentity{AgentID: a.ID(), Head: cfg.Head, Cluster: clusterOf(cfg)}); err != nil {
		_ = a.Stop(context.Background())
		return exitf(ExitError, "write %s: %v", idFile, err)
	}
	printStarted(c, info)

	select {
	case <-sigCtx.Done():
	case <-a.Done():
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Stop(stopCtx); err != nil {
		return exitf(ExitError, "stop: %v", err)
	}
	if err := a.Err(); err != nil {
		return classify(cfg, err) // it stopped by itself: its certificate was refused
	}
	return nil
}

func printStarted(c *ucli.Context, info agentFile) {
	w := c.App.Writer
	kind := "agent"
	if info.Head {
		kind = "head agent"
	}
	fmt.Fprintf(w, "ray-go %s %s started (pid %d); the cluster's GCS is at %s\n", kind, info.AgentID, info.Pid, info.Address)
	fmt.Fprintf(w, "Its files and logs: %s\n", info.Dir)
	if info.SpillDir != "" {
		fmt.Fprintf(w, "Its object stores spill to: %s\n", info.SpillDir)
	}
	if info.MetricsAddress != "" {
		fmt.Fprintf(w, "Its Prometheus metrics: http://%s/metrics\n", info.MetricsAddress)
	}
	scheme := "http"
	if info.DashboardTLS {
		scheme = "https"
	}
	switch {
	case info.DashboardAddress != "" && info.Insecure:
		fmt.Fprintf(w, "Its dashboard: http://%s/ (open to anyone who reaches it: --insecure)\n", info.DashboardAddress)
	case info.DashboardAddress != "":
		fmt.Fprintf(w, "Its dashboard: %s://%s/ (it asks for the cluster's token once: open %s://%s/?token=<token>)\n",
			scheme, info.DashboardAddress, scheme, info.DashboardAddress)
		if info.DashboardTLS {
			fmt.Fprintf(w, "  (its certificate is the cluster CA's: import %s into the browser, or accept its warning)\n", info.GCSCA)
		}
	}
	fmt.Fprintln(w)
	if !info.Head {
		fmt.Fprintf(w, "Stop this machine's agents: %s\n", stopHint(info.Dir))
		fmt.Fprintf(w, "\nexport %s=%s\n", workerenv.Address, info.Address)
		return
	}
	switch {
	case info.Insecure:
		fmt.Fprintf(w, "INSECURE: no TLS, no token: anyone who reaches %s controls this cluster.\n", info.Address)
		fmt.Fprintf(w, "Join other machines:   rayctl start --insecure --address %s\n", info.Address)
		fmt.Fprintf(w, "Point drivers at it:   export %s=%s %s=1\n", workerenv.Address, info.Address, workerenv.Insecure)
	case info.TokenFile != "":
		tok, err := identity.ReadTokenFile(info.TokenFile)
		if err != nil {
			fmt.Fprintf(w, "cannot read the join token: %v\n", err)
			break
		}
		fmt.Fprintf(w, "The cluster's join token (a password: whoever holds it can join and run jobs; kept in %s,\n", info.TokenFile)
		fmt.Fprintf(w, "printed again by `rayctl token show`, replaced by `rayctl token rotate`):\n\n%s%s\n\n", tokenIndent, tok)
		fmt.Fprintf(w, "Join other machines:   %s=<token> rayctl start --address %s", workerenv.Token, info.Address)
		if def, _ := identity.JoinAddress(info.Address); def != info.JoinAddress {
			fmt.Fprintf(w, " --join-address %s", info.JoinAddress)
		}
		fmt.Fprintf(w, "\n                       (or --token-file FILE; --token TOKEN works too, but shows in ps)\n")
		fmt.Fprintf(w, "Point drivers at it:   export %s=%s %s=<token>\n", workerenv.Address, info.Address, workerenv.Token)
		fmt.Fprintf(w, "On this machine, rayctl status and rayctl job need no token.\n")
	default:
		fmt.Fprintf(w, "The GCS is an external etcd: other machines and drivers need its credentials (--gcs-ca, --gcs-cert, --gcs-key; %s, %s, %s).\n",
			workerenv.GCSCA, workerenv.GCSCert, workerenv.GCSKey)
		fmt.Fprintf(w, "Join other machines:   rayctl start --address %s --gcs-ca ... --gcs-cert ... --gcs-key ...\n", info.Address)
	}
	fmt.Fprintf(w, "Stop this machine's agents: %s\n", stopHint(info.Dir))
	fmt.Fprintf(w, "\nexport %s=%s\n", workerenv.Address, info.Address)
}

// stopHint is the command that stops the agents of the session dir that holds
// agentDir.
func stopHint(agentDir string) string {
	if dir := filepath.Dir(agentDir); dir != DefaultSessionDir {
		return "rayctl stop --session-dir " + dir
	}
	return "rayctl stop"
}

// withoutToken removes --token and --token-file from a command line (the background agent
// gets the token through its environment instead: a command line is readable by every user
// of the machine).
func withoutToken(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if strings.HasPrefix(args[i], "-") && (name == "token" || name == "token-file") {
			if !hasValue {
				i++ // the value is the next argument
			}
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// withoutEnv returns environ without the named variables.
func withoutEnv(environ []string, names ...string) []string {
	var out []string
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); !slices.Contains(names, name) {
			out = append(out, kv)
		}
	}
	return out
}

// startBackground starts `rayctl start ... --block` as a daemon (its own session, output
// to its agent.log) and waits until it is ready or failed.
func startBackground(c *ucli.Context, cfg agent.Config) error {
	// A restarted agent's directory holds its credentials and, for a head, the cluster's CA,
	// token and GCS data: a failed start leaves it. Only a new agent's is removed then.
	_, statErr := os.Stat(cfg.SessionDir)
	fresh := errors.Is(statErr, fs.ErrNotExist)
	// What a previous run of this agent left (it was killed, or failed): its ready file
	// would be taken for the new agent's (with the dead one's pid), its error file for the
	// new agent's failure.
	removeStartFiles(cfg.SessionDir)
	logDir := filepath.Join(cfg.SessionDir, "logs")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return exitf(ExitError, "create the agent directory: %v", err)
	}
	logPath := filepath.Join(logDir, "agent.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return exitf(ExitError, "open %s: %v", logPath, err)
	}
	defer logf.Close()
	exe, err := os.Executable()
	if err != nil {
		return exitf(ExitError, "find rayctl's own executable: %v", err)
	}
	args, _ := c.App.Metadata["args"].([]string)
	if len(args) < 2 {
		args = os.Args
	}
	argv := append(withoutToken(args[1:]), "--block", "--agent-id", cfg.ID)
	cmd := exec.Command(exe, argv...)
	if cfg.Token != nil {
		// The token, however it was given (--token, --token-file, the environment), reaches
		// the agent in its environment only.
		cmd.Env = append(withoutEnv(os.Environ(), workerenv.Token, workerenv.TokenFile), workerenv.Token+"="+cfg.Token.String())
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return exitf(ExitError, "start the background agent: %v", err)
	}
	exited := make(chan struct{})
	var werr error
	go func() { werr = cmd.Wait(); close(exited) }() // ends with the child, or with this process

	failed := func() error {
		if ae, err := readAgentError(cfg.SessionDir); err == nil {
			// The message says it all; a new agent's directory is of no further use.
			<-exited
			if fresh {
				_ = os.RemoveAll(cfg.SessionDir)
			}
			return &exitError{code: ae.Code, err: errors.New(ae.Message)}
		}
		return nil
	}
	deadline := time.NewTimer(readyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if info, err := readAgentFile(cfg.SessionDir, cfg.ID); err == nil && info.Pid == cmd.Process.Pid {
			printStarted(c, *info)
			return nil
		}
		if err := failed(); err != nil {
			return err
		}
		select {
		case <-exited:
			if err := failed(); err != nil {
				return err
			}
			return exitf(ExitError, "the agent exited before it was ready (%v)%s; see %s", werr, exitCause(logPath, cfg.SessionDir), logPath)
		case <-deadline.C:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			return exitf(ExitError, "the agent was not ready within %v; stopped it. See %s", readyTimeout, logPath)
		case <-tick.C:
		}
	}
}

// exitCause reads why an agent that exited before it was ready did, from the end of its
// log (the agent's own errors, and a panic's first line, land there): ": " and the last
// error and panic, and what to do when they name a full disk or the embedded GCS's data
// (etcd exits on a database or log it cannot open, and on a write the disk refused); ""
// when the log says nothing of it.
func exitCause(logPath, agentDir string) string {
	f, err := os.Open(logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	const tailBytes = 64 << 10
	if st, err := f.Stat(); err == nil && st.Size() > tailBytes {
		_, _ = f.Seek(st.Size()-tailBytes, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, tailBytes))
	var lastErr, panicLine string
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.Contains(line, "level=ERROR"):
			lastErr = line
		case strings.HasPrefix(line, "panic: ") && panicLine == "":
			panicLine = line
		}
	}
	if lastErr == "" && panicLine == "" {
		return ""
	}
	msg := strings.TrimSpace(strings.Join([]string{shortLogLine(lastErr), panicLine}, "; "))
	msg = strings.Trim(msg, "; ")
	all := lastErr + panicLine
	switch {
	case strings.Contains(all, "no space left on device"):
		msg += fmt.Sprintf(": the disk of %s is full; free space there (df -h %s) and start it again", agentDir, agentDir)
	case strings.Contains(all, "etcd"):
		msg += fmt.Sprintf(": the GCS data in %s cannot be opened (damaged or incomplete); restore that directory from a backup, "+
			"or remove %s to start a new cluster (its jobs, detached actors and issued certificates are then gone)", filepath.Join(agentDir, "gcs"), agentDir)
	}
	return ": " + msg
}

// shortLogLine is a log line's msg and error, without its time and level ("" stays "").
func shortLogLine(line string) string {
	if i := strings.Index(line, "msg="); i >= 0 {
		line = line[i+len("msg="):]
	}
	return line
}

// removeStartFiles removes the files by which an agent says it is ready or failed to
// start (startConfig has checked that the agent is not running).
func removeStartFiles(dir string) {
	_ = os.Remove(filepath.Join(dir, readyFileName))
	_ = os.Remove(filepath.Join(dir, errorFileName))
}

// tokenIndent sets the join token apart in the output of `rayctl start --head`.
const tokenIndent = "    "

// PrintedToken returns the join token in the output of `rayctl start --head` (the
// indented line that holds only the token), or "" if it has none: what a script or a test
// that started the head reads it from.
func PrintedToken(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, tokenIndent); ok {
			if tok, err := identity.ParseToken(rest); err == nil {
				return tok.String()
			}
		}
	}
	return ""
}
