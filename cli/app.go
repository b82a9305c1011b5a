package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ray-go/ray/internal/assembly/agent"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
	"github.com/ray-go/ray/internal/base/workerenv"
)

// Exit codes of rayctl (the table is in the package doc).
const (
	ExitOK             = 0 // success
	ExitError          = 1 // bad usage, or any other error
	ExitPortInUse      = 3 // start --head: the GCS port is taken
	ExitGCSUnreachable = 4 // no GCS answered at the address
	ExitNothingRunning = 5 // no agent runs (stop, or no address to find), or no head to run a job
	ExitJobFailed      = 6 // the job ended FAILED
	ExitJobStopped     = 7 // the job ended STOPPED
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
			"5 nothing running, 6 job failed, 7 job stopped.",
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
			jobCommand(),
		},
	}
}

// interspersed lets flags follow the ID of `job status|logs|stop ID` (urfave/cli v2 stops
// parsing flags at the first argument, so `job logs ID --follow` would not follow): it
// moves the flags of such a command line before its arguments. `job submit` is left
// alone: what follows its program belongs to the program.
func interspersed(app *ucli.App, args []string) []string {
	if len(args) < 4 || args[1] != "job" {
		return args
	}
	var cmd *ucli.Command
	for _, top := range app.Commands {
		if top.Name == "job" {
			for _, sub := range top.Subcommands {
				if sub.HasName(args[2]) {
					cmd = sub
				}
			}
		}
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
	rest := args[3:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			pos = append(pos, rest[i:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' {
			flags = append(flags, a)
			if name := strings.TrimLeft(a, "-"); !strings.Contains(name, "=") && takesValue[name] && i+1 < len(rest) {
				flags = append(flags, rest[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	out := append(append([]string(nil), args[:3]...), flags...)
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
		Usage:   "GCS key namespace of the cluster (when several share one etcd)",
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
	agents, _ := localAgents(c.String("session-dir"))
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

// connect opens the GCS of the cluster the flags name.
func connect(c *ucli.Context) (gcs.Store, []string, error) {
	addr, err := resolveAddress(c)
	if err != nil {
		return nil, nil, err
	}
	s, err := etcdstore.New(c.Context, etcdstore.Config{
		Endpoints:   addr,
		DialTimeout: dialTimeout,
		Namespace:   c.String("namespace"),
		Logger:      discardLogger(),
	})
	if err != nil {
		return nil, nil, exitf(ExitGCSUnreachable,
			"cannot reach the cluster's GCS at %s within %v: is the head agent running (`rayctl start --head`), and is the address right (--address, RAY_ADDRESS)? (%v)",
			strings.Join(addr, ","), dialTimeout, err)
	}
	return s, addr, nil
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

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
