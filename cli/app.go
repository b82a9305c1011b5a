package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ray-go/ray/internal/assembly/agent"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
	"github.com/ray-go/ray/internal/base/identity"
	"github.com/ray-go/ray/internal/base/workerenv"
)

// Exit codes of rayctl (the table is in the package doc).
const (
	ExitOK             = 0 // success
	ExitError          = 1 // bad usage, or any other error
	ExitPortInUse      = 3 // start: the GCS port (--head) or an explicit --metrics-port is taken
	ExitGCSUnreachable = 4 // no GCS answered at the address
	ExitNothingRunning = 5 // no agent runs (stop, or no address to find), or no head to run a job
	ExitJobFailed      = 6 // the job ended FAILED
	ExitJobStopped     = 7 // the job ended STOPPED
	ExitCredentials    = 8 // no credentials for a secure cluster, or they were refused
)

// DefaultSessionDir is where agents keep their directories unless --session-dir says.
const DefaultSessionDir = "/tmp/ray-go"

// dialTimeout bounds how long a client command waits for the GCS to answer.
const dialTimeout = 3 * time.Second

// exitError is an error with the exit code it should produce.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// exitf makes an error that exits with code.
func exitf(code int, format string, args ...any) error {
	return &exitError{code: code, err: fmt.Errorf(format, args...)}
}

// Main runs rayctl with args (args[0] is the program name) and returns its exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	app := New(stdout, stderr)
	app.Metadata = map[string]any{"args": args}
	err := app.Run(interspersed(app, args))
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	code := ExitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	fmt.Fprintf(stderr, "rayctl: %v\n", err)
	return code
}

// New returns the rayctl application.
func New(stdout, stderr io.Writer) *ucli.App {
	return &ucli.App{
		Name:  "rayctl",
		Usage: "start, stop and inspect a ray-go cluster; submit jobs to it",
		Description: "A cluster is one head agent (rayctl start --head: the GCS, an embedded etcd) and any " +
			"number of agents that join it (rayctl start --address HOST:PORT), one per machine. " +
			"Exit codes: 0 ok, 1 usage or other error, 3 GCS port in use, 4 GCS unreachable, " +
			"5 nothing running, 6 job failed, 7 job stopped, 8 no or refused credentials (pass --token).",
		Version:                   version(),
		Writer:                    stdout,
		ErrWriter:                 stderr,
		HideHelpCommand:           true,
		DisableSliceFlagSeparator: true,
		Suggest:                   true,
		ExitErrHandler:            func(*ucli.Context, error) {}, // Main maps errors to exit codes
		Commands: []*ucli.Command{
			startCommand(),
			stopCommand(),
			statusCommand(),
			memoryCommand(),
			metricsCommand(),
			jobCommand(),
			tokenCommand(),
			certCommand(),
			listCommand(),
			getCommand(),
			summaryCommand(),
			timelineCommand(),
			logsCommand(),
		},
	}
}

// interspersed lets flags follow the arguments of `job status|logs|stop ID`, `cert revoke
// SERIAL`, `list KIND`, `get KIND ID` and `logs KIND ID` (urfave/cli v2 stops parsing flags at the first argument, so `job logs
// ID --follow` would not follow): it moves the flags of such a command line before its
// arguments. `job submit` is left
// alone: what follows its program belongs to the program. With -h or --help the arguments
// are dropped: urfave/cli takes an argument after the help flag for a subcommand's name
// (`rayctl list actors --help` said "No help topic for 'actors'"), and the command's own
// help (which names the kinds it takes) is what was asked for.
func interspersed(app *ucli.App, args []string) []string {
	var cmd *ucli.Command
	n := 0 // args[:n] are the program and the command's names
	switch {
	case len(args) >= 3 && (args[1] == "list" || args[1] == "get" || args[1] == "summary" || args[1] == "logs"):
		cmd, n = app.Command(args[1]), 2
	case len(args) >= 4 && (args[1] == "job" || args[1] == "cert"):
		if top := app.Command(args[1]); top != nil {
			for _, sub := range top.Subcommands {
				if sub.HasName(args[2]) {
					cmd = sub
				}
			}
		}
		n = 3
	}
	if cmd == nil || cmd.Name == "submit" {
		return args
	}
	takesValue := map[string]bool{}
	for _, f := range cmd.Flags {
		_, isBool := f.(*ucli.BoolFlag)
		for _, n := range f.Names() {
			takesValue[n] = !isBool
		}
	}
	var flags, pos []string
	help := false
	rest := args[n:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			pos = append(pos, rest[i:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' {
			flags = append(flags, a)
			fn, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			help = help || fn == "help" || fn == "h"
			if name := strings.TrimLeft(a, "-"); !strings.Contains(name, "=") && takesValue[name] && i+1 < len(rest) {
				flags = append(flags, rest[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	out := append(append([]string(nil), args[:n]...), flags...)
	if help {
		return out
	}
	return append(out, pos...)
}

// Flags shared by the commands that talk to a running cluster.
func addressFlag() ucli.Flag {
	return &ucli.StringFlag{
		Name:    "address",
		Usage:   "the cluster's GCS, HOST:PORT[,HOST:PORT] (default: a running agent of this machine's session dir)",
		EnvVars: []string{workerenv.Address},
	}
}

func namespaceFlag() ucli.Flag {
	return &ucli.StringFlag{
		Name:    "namespace",
		Usage:   "GCS key namespace of the cluster (when several share one etcd); not a job's namespace of named actors (ray.WithNamespace, RAY_GO_JOB_NAMESPACE)",
		EnvVars: []string{workerenv.Namespace},
	}
}

func sessionDirFlag() ucli.Flag {
	return &ucli.StringFlag{
		Name:    "session-dir",
		Usage:   "directory holding this machine's agents (one subdirectory each)",
		Value:   DefaultSessionDir,
		EnvVars: []string{"RAY_GO_SESSION_DIR"},
	}
}

func outputFlag() ucli.Flag {
	return &ucli.StringFlag{
		Name:    "output",
		Aliases: []string{"o"},
		Usage:   "output format: text or json",
		Value:   "text",
		EnvVars: []string{"RAY_GO_OUTPUT"},
	}
}

func outputFormat(c *ucli.Context) (json bool, err error) {
	switch o := c.String("output"); o {
	case "text", "":
		return false, nil
	case "json":
		return true, nil
	default:
		return false, exitf(ExitError, "unknown output format %q: use -o text or -o json", o)
	}
}

// resolveAddress finds the cluster: --address / RAY_ADDRESS, else the address of an agent
// running on this machine (its agent.json in the session dir; a head's first).
func resolveAddress(c *ucli.Context) ([]string, error) {
	if a := workerenv.SplitAddress(c.String("address")); len(a) > 0 {
		return a, nil
	}
	agents, err := localAgents(c.String("session-dir"))
	if err != nil {
		return nil, err
	}
	for _, head := range []bool{true, false} {
		for _, la := range agents {
			if la.live && la.info != nil && la.info.Head == head && la.info.Address != "" {
				return workerenv.SplitAddress(la.info.Address), nil
			}
		}
	}
	return nil, exitf(ExitNothingRunning,
		"no cluster address: pass --address HOST:PORT or set RAY_ADDRESS, or start a cluster on this machine with `rayctl start --head` (no running agent found under %s)",
		c.String("session-dir"))
}

// connect opens the GCS of the cluster the flags name, with the credentials
// clientCredentials finds.
func connect(c *ucli.Context) (gcs.Store, []string, error) {
	addr, err := resolveAddress(c)
	if err != nil {
		return nil, nil, err
	}
	tlsCfg, err := clientCredentials(c, addr)
	if err != nil {
		return nil, nil, err
	}
	open := func() (gcs.Store, error) {
		return etcdstore.New(c.Context, etcdstore.Config{
			Endpoints:   addr,
			DialTimeout: dialTimeout,
			Namespace:   c.String("namespace"),
			Logger:      discardLogger(),
			TLS:         tlsCfg,
		})
	}
	s, err := open()
	if (errors.Is(err, etcdstore.ErrNoAccess) || errors.Is(err, etcdstore.ErrTLSRefused)) && dropCachedCert(c, addr) {
		// A cached client certificate the cluster refuses (revoked): ask the token again.
		if tlsCfg, err = clientCredentials(c, addr); err != nil {
			return nil, nil, err
		}
		s, err = open()
	}
	switch {
	case errors.Is(err, etcdstore.ErrNeedsTLS):
		return nil, nil, exitf(ExitCredentials, "the cluster at %s is secure and --insecure gives no credentials: %s", strings.Join(addr, ","), howToAuthenticate)
	case errors.Is(err, etcdstore.ErrNoAccess):
		return nil, nil, exitf(ExitCredentials, "the cluster at %s refuses every request of this client's certificate (revoked? `rayctl cert list` on the head says): %v", strings.Join(addr, ","), err)
	case errors.Is(err, etcdstore.ErrTLSRefused):
		return nil, nil, exitf(ExitCredentials, "the cluster at %s refused this client's credentials (%v): %s", strings.Join(addr, ","), err, howToAuthenticate)
	case err != nil && probe(addr, time.Second) == probeHTTP:
		return nil, nil, notTheGCS(addr)
	case err != nil:
		if jerr := joinPortGiven(addr); jerr != nil {
			return nil, nil, jerr
		}
		return nil, nil, exitf(ExitGCSUnreachable,
			"cannot reach the cluster's GCS at %s within %v: is the head agent running (`rayctl start --head`), and is the address right (--address, RAY_ADDRESS)? (%v)",
			strings.Join(addr, ","), dialTimeout, err)
	}
	return s, addr, nil
}

// howToAuthenticate says how a client gets credentials.
const howToAuthenticate = "pass the cluster's join token with --token (or RAY_GO_TOKEN, or --token-file; `rayctl start --head` printed it, " +
	"`rayctl token show` on the head prints it again), or run this command on a machine whose agent belongs to the cluster " +
	"(it uses that agent's credentials); a cluster started with --insecure needs --insecure"

// submitNeeds says which credentials may submit and stop jobs (see identity's GCS role
// table).
const submitNeeds = "submitting and stopping jobs needs the cluster's join token (--token, RAY_GO_TOKEN or --token-file) " +
	"or the head's credentials (rayctl on the head's machine); the credentials of another machine's agent are a node's, which may not"

// denied turns the GCS's refusal of a request to these credentials (gcs.ErrPermissionDenied:
// their role may not) into exit code ExitCredentials saying what was refused and what is
// needed; nil for any other error.
func denied(err error, what, needs string) error {
	if !errors.Is(err, gcs.ErrPermissionDenied) {
		return nil
	}
	return exitf(ExitCredentials, "%s: the cluster refuses it to these credentials (%v): %s", what, err, needs)
}

// credentialFlags are the flags of every command that talks to a cluster.
func credentialFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "token", Usage: "the cluster's join token (as \"rayctl start --head\" printed it)", EnvVars: []string{workerenv.Token}},
		&ucli.StringFlag{Name: "token-file", Usage: "a file (mode 600) holding the join token", EnvVars: []string{workerenv.TokenFile}},
		&ucli.StringFlag{Name: "join-address", Usage: "the head's join endpoint HOST:PORT", DefaultText: "the GCS address's port + 1", EnvVars: []string{workerenv.JoinAddress}},
		&ucli.BoolFlag{Name: "insecure", Usage: "talk plain text to a cluster started with --insecure", EnvVars: []string{workerenv.Insecure}},
		&ucli.StringFlag{Name: "gcs-ca", Usage: "external etcd: the CA certificate (PEM) that signed its server certificates", EnvVars: []string{workerenv.GCSCA}},
		&ucli.StringFlag{Name: "gcs-cert", Usage: "external etcd: a client certificate (PEM) it accepts", EnvVars: []string{workerenv.GCSCert}},
		&ucli.StringFlag{Name: "gcs-key", Usage: "external etcd: the key (PEM) of --gcs-cert", EnvVars: []string{workerenv.GCSKey}},
	}
}

// tokenOf reads --token or --token-file; ok is false when neither is set.
func tokenOf(c *ucli.Context) (tok identity.Token, ok bool, err error) {
	switch {
	case c.String("token") != "" && c.String("token-file") != "":
		return tok, false, exitf(ExitError, "--token and --token-file exclude each other: pass one")
	case c.String("token") != "":
		tok, err = identity.ParseToken(c.String("token"))
	case c.String("token-file") != "":
		tok, err = identity.ReadTokenFile(c.String("token-file"))
	default:
		return tok, false, nil
	}
	if err != nil {
		return tok, false, exitf(ExitCredentials, "%v", err)
	}
	return tok, true, nil
}

// onCommandLine reports whether one of the named flags is on the command line (not only in
// the environment, which urfave/cli does not tell apart).
func onCommandLine(c *ucli.Context, names ...string) bool {
	args, _ := c.App.Metadata["args"].([]string)
	if len(args) == 0 {
		args = os.Args
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if slices.Contains(names, name) {
			return true
		}
	}
	return false
}

// gcsFiles reads --gcs-ca, --gcs-cert and --gcs-key (all or none).
func gcsFiles(c *ucli.Context) (identity.Files, error) {
	f := identity.Files{CA: c.String("gcs-ca"), Cert: c.String("gcs-cert"), Key: c.String("gcs-key")}
	if !f.IsZero() && (f.CA == "" || f.Cert == "" || f.Key == "") {
		return f, exitf(ExitError, "--gcs-ca, --gcs-cert and --gcs-key go together (the etcd's CA, a client certificate it accepts and its key)")
	}
	return f, nil
}

// clientCredentials finds a client command's credentials for the cluster at addr:
// --insecure (none), --gcs-ca/--gcs-cert/--gcs-key, a join token (a client certificate
// from the head), or the credentials of an agent of this machine that belongs to the
// cluster (its address is addr). Nothing: exit code ExitCredentials, saying what to pass.
func clientCredentials(c *ucli.Context, addr []string) (*tls.Config, error) {
	files, err := gcsFiles(c)
	if err != nil {
		return nil, err
	}
	tok, haveToken, err := tokenOf(c)
	if err != nil {
		return nil, err
	}
	if c.Bool("insecure") {
		if haveToken || !files.IsZero() {
			return nil, exitf(ExitError, "--insecure excludes --token and --gcs-ca/--gcs-cert/--gcs-key")
		}
		return nil, nil
	}
	if !files.IsZero() {
		creds, err := identity.Load(files)
		if err != nil {
			return nil, exitf(ExitCredentials, "%v", err)
		}
		return creds.ClientTLS(), nil
	}
	if haveToken && !onCommandLine(c, "token", "token-file") {
		// A token from the environment (exported as the README shows), on the head's own
		// machine: the head's credentials, which may do what a client's may not (revoke a
		// certificate).
		if la := localAgentOf(c.String("session-dir"), addr); la != nil && la.info.Head && !la.info.Insecure {
			if creds, err := identity.LoadOwned(identity.Files{CA: la.info.GCSCA, Cert: la.info.GCSCert, Key: la.info.GCSKey}); err == nil {
				return creds.ClientTLS(), nil
			}
		}
	}
	if haveToken {
		joinAddr := c.String("join-address")
		if joinAddr == "" {
			if joinAddr, err = identity.JoinAddress(addr[0]); err != nil {
				return nil, exitf(ExitError, "%v", err)
			}
		}
		host, _ := os.Hostname()
		join := identity.JoinRequest{Address: joinAddr, Token: tok, Role: identity.RoleClient,
			Name: fmt.Sprintf("rayctl-%s-%d", host, os.Getpid()), Timeout: dialTimeout}
		cached := cachedClientCert(tok, joinAddr) // clientcert.go
		// With a cached certificate the head is asked only whether the token is current
		// (a rotated one is refused, as without a cache), and issues nothing.
		join.CheckOnly = cached != nil
		creds, err := identity.Join(c.Context, join)
		if err == nil && cached != nil {
			return cached.ClientTLS(), nil
		}
		if err != nil {
			if jerr := joinPortGiven(addr); jerr != nil {
				return nil, jerr
			}
		}
		switch {
		case errors.Is(err, identity.ErrJoinUnreachable):
			return nil, exitf(ExitGCSUnreachable, "cannot reach the cluster at %s: is the head agent running? (%v; pass --join-address if the head's join endpoint is not at the GCS port + 1)",
				strings.Join(addr, ","), err)
		case err != nil:
			return nil, exitf(ExitCredentials, "%v", err)
		}
		cacheClientCert(tok, joinAddr, creds)
		return creds.ClientTLS(), nil
	}
	if _, err := localAgents(c.String("session-dir")); err != nil {
		return nil, err // an unsafe session dir: say so, not that no credentials were found
	}
	if la := localAgentOf(c.String("session-dir"), addr); la != nil {
		if la.info.Insecure {
			return nil, nil
		}
		creds, err := identity.LoadOwned(identity.Files{CA: la.info.GCSCA, Cert: la.info.GCSCert, Key: la.info.GCSKey})
		if err != nil {
			return nil, exitf(ExitCredentials, "the credentials of this machine's agent %s: %v", la.id, err)
		}
		return creds.ClientTLS(), nil
	}
	// No credentials: say first whether anything is there to use them with.
	switch probe(addr, time.Second) {
	case probeNothing:
		return nil, exitf(ExitGCSUnreachable, "nothing answered at %s: is the head agent running (`rayctl start --head`), and is the address right (--address, RAY_ADDRESS)? "+
			"(and no credentials were given: %s)", strings.Join(addr, ","), howToAuthenticate)
	case probeHTTP:
		return nil, notTheGCS(addr)
	case probePlain:
		return nil, exitf(ExitCredentials, "the cluster at %s speaks plain text (its head was started with --insecure): pass --insecure (or %s=1)",
			strings.Join(addr, ","), workerenv.Insecure)
	}
	if err := joinPortGiven(addr); err != nil {
		return nil, err
	}
	return nil, exitf(ExitCredentials, "no credentials for the cluster at %s: %s", strings.Join(addr, ","), howToAuthenticate)
}

// joinPortGiven is the error of a cluster address where a head's join endpoint answers
// (its port, the GCS port + 1 by default, taken for the GCS's), naming the GCS address
// to use; nil when none of addr is one. Only for a connection that failed: it asks each
// address (identity.JoinEndpointAt).
func joinPortGiven(addr []string) error {
	for _, a := range addr {
		gcsAddr, ok := identity.JoinEndpointAt(a, 2*time.Second)
		if !ok {
			continue
		}
		use := "the GCS port, the join port - 1 unless the head was started with --join-port"
		if gcsAddr != "" {
			use = gcsAddr
		}
		return exitf(ExitGCSUnreachable, "%s is the head's join endpoint (where agents and drivers trade the join token for a certificate), not the cluster's GCS: "+
			"pass the GCS address instead: %s (--address or RAY_ADDRESS, as `rayctl start --head` printed it)", a, use)
	}
	return nil
}

// notTheGCS is the error of an address where an HTTP server answers.
func notTheGCS(addr []string) error {
	return exitf(ExitGCSUnreachable, "%s is an HTTP server (the dashboard, or a metrics endpoint?), not the cluster's GCS: "+
		"pass the GCS address `rayctl start` printed (RAY_ADDRESS=HOST:%d by default; `rayctl status` on the head's machine prints it too)",
		strings.Join(addr, ","), agent.DefaultGCSPort)
}

// What probe finds at an address.
const (
	probeTLS     = iota // a TLS server, or a server that did not answer in time
	probeNothing        // nothing listens (every address refused or could not be dialled)
	probeHTTP           // a plain-text HTTP server (the dashboard, a metrics endpoint)
	probePlain          // another plain-text server (an --insecure GCS)
)

// probe tells what listens at the first of addrs that accepts a connection: it starts a
// TLS handshake (nothing secret is sent, nothing is trusted) and reads what comes back, as
// identity.PlainText does, telling an HTTP server's answer (HTTP/1.x) from others'.
func probe(addrs []string, timeout time.Duration) int {
	for _, addr := range addrs {
		conn, err := net.DialTimeout("tcp", addr, timeout)
		if err != nil {
			continue
		}
		_ = conn.SetDeadline(time.Now().Add(timeout))
		tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true, ServerName: "probe"}) // a probe: nothing is trusted or sent
		err = tc.Handshake()
		_ = conn.Close()
		var rec tls.RecordHeaderError
		switch {
		case err == nil:
			return probeTLS
		case errors.As(err, &rec) && bytes.HasPrefix(rec.RecordHeader[:], []byte("HTTP/")):
			return probeHTTP
		case errors.As(err, &rec), errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
			return probePlain
		}
		return probeTLS
	}
	return probeNothing
}

// localAgentOf returns a live agent of this machine whose cluster address is addr (a
// head's first), or nil.
func localAgentOf(sessionDir string, addr []string) *localAgent {
	agents, _ := localAgents(sessionDir)
	want := strings.Join(addr, ",")
	for _, head := range []bool{true, false} {
		for i, la := range agents {
			if la.live && la.info != nil && la.info.Head == head && la.info.Address == want && (la.info.Insecure || la.info.GCSKey != "") {
				return &agents[i]
			}
		}
	}
	return nil
}

// opCtx bounds one GCS request of a command.
func opCtx(c *ucli.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Context, 10*time.Second)
}

// isTerminal is agent.IsTerminal, re-exported for brevity.
var isTerminal = agent.IsTerminal

// writeErr prints a line on stderr.
func writeErr(c *ucli.Context, format string, args ...any) {
	fmt.Fprintf(c.App.ErrWriter, format+"\n", args...)
}
