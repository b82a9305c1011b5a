package cli

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"
	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/assembly/agent"
	"github.com/ray-go/ray/internal/assembly/clusterstate"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
)

func jobCommand() *ucli.Command {
	common := func(extra ...ucli.Flag) []ucli.Flag {
		return append(append([]ucli.Flag{addressFlag(), namespaceFlag(), sessionDirFlag()}, credentialFlags()...), extra...)
	}
	return &ucli.Command{
		Name:  "job",
		Usage: "submit driver programs to the cluster's head agent and follow them",
		Subcommands: []*ucli.Command{
			{
				Name:        "submit",
				Usage:       "run a program as a driver on the head agent, and stream its output until it ends",
				ArgsUsage:   "-- PROGRAM [ARGS...]",
				Description: submitDescription,
				Flags: common(
					&ucli.BoolFlag{Name: "no-wait", Usage: "print the submission ID and return at once", EnvVars: []string{"RAY_GO_NO_WAIT"}},
					&ucli.StringFlag{Name: "working-dir", Usage: "a directory on this machine, shipped to the head: the driver starts in its copy", DefaultText: "a new empty directory", EnvVars: []string{"RAY_GO_WORKING_DIR"}},
					&ucli.StringSliceFlag{Name: "env", Usage: "extra environment variable for the driver, KEY=VALUE (repeatable)", EnvVars: []string{"RAY_GO_JOB_ENV"}},
				),
				Action: runJobSubmit,
			},
			{
				Name:   "list",
				Usage:  "list the submissions (jobs whose drivers were run directly are in rayctl list jobs and rayctl status)",
				Flags:  common(outputFlag()),
				Action: runJobList,
			},
			{
				Name:      "status",
				Usage:     "show one submission (by its ID or its job's, or at least 6 of their first characters)",
				ArgsUsage: "SUBMISSION_ID|JOB_ID",
				Flags:     common(outputFlag()),
				Action:    runJobStatus,
			},
			{
				Name:      "logs",
				Usage:     "print a submission's output (kept in the GCS: of one longer than 32 MiB, its first 8 MiB and its last 24 MiB, with a note of how much was omitted between; the whole log stays on the head)",
				ArgsUsage: "SUBMISSION_ID|JOB_ID",
				Flags:     common(&ucli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing until the job ends", EnvVars: []string{"RAY_GO_FOLLOW"}}),
				Action:    runJobLogs,
			},
			{
				Name:      "stop",
				Usage:     "stop a submission (the driver is asked to keep its task records in the GCS, for up to 3 s; then SIGTERM to its process group, SIGKILL after 5 s); the submission and its job end STOPPED",
				ArgsUsage: "SUBMISSION_ID|JOB_ID",
				Flags:     common(&ucli.BoolFlag{Name: "no-wait", Usage: "return once the request is recorded", EnvVars: []string{"RAY_GO_NO_WAIT"}}),
				Action:    runJobStop,
			},
		},
	}
}

// newSubmissionID returns 16 random hex digits.
func newSubmissionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// resolveProgram makes argv[0] an absolute path of an executable regular file.
func resolveProgram(p string) (string, error) {
	if !strings.Contains(p, "/") {
		found, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("program %q not found in PATH", p)
		}
		p = found
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	switch {
	case err != nil:
		return "", fmt.Errorf("program %s does not exist", abs)
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("program %s is not a regular file", abs)
	case fi.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("program %s is not executable (chmod +x it)", abs)
	}
	return abs, nil
}

// aliveHead returns the record of an alive head agent, or nil.
func aliveHead(ctx context.Context, s gcs.Store) (*pb.AgentInfo, error) {
	agents, err := list(ctx, s, gcs.AgentsPrefix)
	if err != nil {
		return nil, err
	}
	alive, err := list(ctx, s, gcs.AgentAlivePrefix)
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, kv := range alive {
		id, _ := gcs.TrimKey(gcs.AgentAlivePrefix, kv.Key)
		live[id] = true
	}
	for _, kv := range agents {
		id, _ := gcs.TrimKey(gcs.AgentsPrefix, kv.Key)
		if a, err := agent.DecodeAgentInfo(id, kv.Value); err == nil && a.GetHead() && live[a.GetAgentId()] {
			return a, nil
		}
	}
	return nil, nil
}

func runJobSubmit(c *ucli.Context) error {
	argv := c.Args().Slice()
	if len(argv) == 0 {
		return exitf(ExitError, "no program: rayctl job submit [flags] -- PROGRAM [ARGS...]")
	}
	sub := &pb.Submission{Argv: argv, State: pb.JobInfo_PENDING}
	upload, err := prepareShipping(c, sub)
	if err != nil {
		return err
	}
	env := c.StringSlice("env")
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return exitf(ExitError, "--env %q: want KEY=VALUE", kv)
		}
	}

	store, addr, err := connect(c)
	if err != nil {
		return err
	}
	defer store.Close()
	head, err := aliveHead(c.Context, store)
	if err != nil {
		return exitf(ExitError, "read the agents: %v", err)
	}
	if head == nil {
		return exitf(ExitNothingRunning, "no head agent is alive in the cluster at %s: submissions are run by the head (`rayctl start --head`)",
			strings.Join(addr, ","))
	}
	uctx, ucancel := context.WithTimeout(c.Context, 5*time.Minute)
	err = uploadWatched(uctx, store, strings.Join(addr, ","), upload)
	ucancel()
	if d := denied(err, "ship the program", submitNeeds); d != nil {
		return d
	}
	if err != nil {
		return exitf(ExitError, "%v", err)
	}

	id := newSubmissionID()
	sub.SubmissionId, sub.Env = id, env
	b, err := proto.Marshal(sub)
	if err != nil {
		return err
	}
	ctx, cancel := opCtx(c)
	ok, _, err := store.Txn(ctx, []gcs.Cmp{{Key: gcs.SubmissionKey(id), ModRev: 0}},
		[]gcs.Op{{Kind: gcs.OpPut, Key: gcs.SubmissionKey(id), Value: b}})
	cancel()
	if d := denied(err, "record the submission", submitNeeds); d != nil {
		return d
	}
	if err != nil || !ok {
		return exitf(ExitError, "record the submission: %v (ok %v)", err, ok)
	}
	if c.Bool("no-wait") {
		fmt.Fprintln(c.App.Writer, id)
		writeErr(c, "rayctl: submitted %s; follow it with: rayctl job logs --follow %s", id, id)
		return nil
	}
	writeErr(c, "rayctl: submitted %s; streaming its output (Ctrl-C stops following, not the job)", id)
	return follow(c, store, addr, id)
}

// follow streams a submission's output until it ends, then exits by its outcome. addr is
// the cluster's address, for the error when the cluster stops answering meanwhile.
func follow(c *ucli.Context, store gcs.Store, addr []string, id string) error {
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	_, ferr := agent.ReadLog(ctx, store, id, c.App.Writer, true)
	if ctx.Err() != nil && c.Context.Err() == nil {
		writeErr(c, "rayctl: stopped following; %s goes on (rayctl job stop %s stops it)", id, id)
		return exitf(ExitError, "interrupted")
	}
	// The end marker is written with the final state; wait briefly if the head died.
	var sub *pb.Submission
	deadline := time.Now().Add(10 * time.Second)
	for {
		rctx, cancel := opCtx(c)
		var err error
		sub, err = agent.GetSubmission(rctx, store, id)
		cancel()
		switch {
		case errors.Is(err, agent.ErrNoSubmission):
			return exitf(ExitError, "read submission %s: %v", id, err)
		case err != nil:
			// The head stopped (or is cut off) while the output was followed.
			return lostWhileFollowing(addr, id, cmp.Or(ferr, err))
		case ferr != nil && !isTerminal(sub.GetState()):
			return exitf(ExitError, "follow the output of %s: %v", id, ferr)
		}
		if isTerminal(sub.GetState()) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return outcome(c, sub)
}

// lostWhileFollowing is the error of a follow whose cluster stopped answering: how the job
// ended is not known here, and the error says how to learn it.
func lostWhileFollowing(addr []string, id string, err error) error {
	return exitf(ExitError, "the cluster (head at %s) stopped answering while following %s: how the job ended is unknown here; "+
		"once the head is back, rayctl job status %s says it and rayctl job logs %s prints its output (%v)",
		strings.Join(addr, ","), id, id, id, err)
}

// outcome reports how a submission ended and returns the matching exit error.
func outcome(c *ucli.Context, sub *pb.Submission) error {
	id := sub.GetSubmissionId()
	switch sub.GetState() {
	case pb.JobInfo_SUCCEEDED:
		writeErr(c, "rayctl: %s SUCCEEDED", id)
		return nil
	case pb.JobInfo_FAILED:
		return exitf(ExitJobFailed, "%s FAILED: %s (exit code %d)", id, sub.GetMessage(), sub.GetExitCode())
	case pb.JobInfo_STOPPED:
		return exitf(ExitJobStopped, "%s STOPPED: %s", id, sub.GetMessage())
	}
	return exitf(ExitError, "%s is still %s, but its output ended (is the head agent alive?)", id, sub.GetState())
}

// submissionView is a submission as `job list` and `job status` print it.
type submissionView struct {
	SubmissionID string   `json:"submission_id"`
	State        string   `json:"state"`
	JobID        string   `json:"job_id,omitempty"`
	Entrypoint   []string `json:"entrypoint"`
	WorkingDir   string   `json:"working_dir"`
	Pid          int32    `json:"pid,omitempty"`
	ExitCode     int32    `json:"exit_code"`
	Start        string   `json:"start,omitempty"`
	End          string   `json:"end,omitempty"`
	Message      string   `json:"message,omitempty"`
	LogPath      string   `json:"log_path,omitempty"`
	StopRequest  bool     `json:"stop_requested,omitempty"`
	startMs      int64
}

func view(s *pb.Submission) submissionView {
	return submissionView{
		SubmissionID: s.GetSubmissionId(), State: s.GetState().String(), JobID: s.GetJobId(),
		Entrypoint: s.GetArgv(), WorkingDir: s.GetWorkingDir(), Pid: s.GetPid(), ExitCode: s.GetExitCode(),
		Start: fmtTime(s.GetStartUnixMs()), End: fmtTime(s.GetEndUnixMs()), Message: s.GetMessage(),
		LogPath: s.GetLogPath(), StopRequest: s.GetStopRequested(), startMs: s.GetStartUnixMs(),
	}
}

func runJobList(c *ucli.Context) error {
	asJSON, err := outputFormat(c)
	if err != nil {
		return err
	}
	store, _, err := connect(c)
	if err != nil {
		return err
	}
	defer store.Close()
	kvs, err := list(c.Context, store, gcs.SubmissionsPrefix)
	if err != nil {
		return exitf(ExitError, "list submissions: %v", err)
	}
	views := []submissionView{}
	for _, kv := range kvs {
		id, _ := gcs.TrimKey(gcs.SubmissionsPrefix, kv.Key)
		if s, err := agent.DecodeSubmission(id, kv.Value); err == nil {
			views = append(views, view(s))
		}
	}
	sort.SliceStable(views, func(i, j int) bool { return views[i].startMs > views[j].startMs })
	if asJSON {
		return printJSON(c, views)
	}
	if len(views) == 0 {
		fmt.Fprintln(c.App.Writer, "No submissions.")
		return nil
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SUBMISSION\tSTATE\tJOB\tSTART\tEND\tENTRYPOINT")
	for _, v := range views {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", v.SubmissionID, v.State, dash(v.JobID), dash(v.Start), dash(v.End),
			cell(strings.Join(v.Entrypoint, " ")))
	}
	return tw.Flush()
}

// oneSubmission reads the submission named by the only argument: its ID or its job's, or
// at least 6 of the first characters of either.
func oneSubmission(c *ucli.Context, store gcs.Store) (*pb.Submission, error) {
	if c.NArg() != 1 {
		return nil, exitf(ExitError, "want one SUBMISSION_ID (rayctl job list shows them)")
	}
	id := c.Args().First()
	sub, err := findSubmission(c.Context, store, id)
	if err != nil {
		return nil, err
	}
	if sub == nil {
		return nil, noSubmission(c.Context, store, id)
	}
	return sub, nil
}

// noSubmission is the error for an ID no submission has. A job whose driver was run
// directly (not by rayctl job submit) has none: the job commands do not know it, and the
// error says so and which commands show it, rather than that it does not exist.
func noSubmission(ctx context.Context, store gcs.Store, id string) error {
	job, err := clusterstate.ResolveJob(ctx, store, id)
	var amb *clusterstate.AmbiguousError
	if errors.As(err, &amb) {
		return exitf(ExitError, "%v", err)
	}
	if err == nil && job != "" {
		var info *pb.JobInfo
		if kv, found, gerr := store.Get(ctx, gcs.JobKey(job)); gerr == nil && found {
			info, _ = agent.DecodeJob(job, kv.Value)
		}
		if sid := info.GetSubmissionId(); sid != "" {
			return exitf(ExitError, "job %s was submitted as %s, whose record is no longer in the cluster; rayctl get job %s shows the job", job, sid, job)
		}
		where := ""
		if info.GetDriverHost() != "" {
			where = fmt.Sprintf(" (on %s, pid %d)", info.GetDriverHost(), info.GetDriverPid())
		}
		return exitf(ExitError, "job %s is a driver run directly%s, not submitted with rayctl job submit: rayctl job commands know "+
			"submitted jobs only. rayctl get job %s shows it (rayctl list jobs lists every job); its driver's output went where it ran, "+
			"and rayctl logs job %s says where its worker processes' logs are", job, where, job, job)
	}
	return exitf(ExitError, "no submission or job %q in this cluster (rayctl job list shows the submissions, rayctl list jobs every job)", id)
}

// findSubmission reads the submission whose ID (or its job's) is id or starts with it
// (clusterstate.ResolveSubmission); nil when there is none.
func findSubmission(ctx context.Context, store gcs.Store, id string) (*pb.Submission, error) {
	sid, err := clusterstate.ResolveSubmission(ctx, store, id)
	var amb *clusterstate.AmbiguousError
	switch {
	case errors.As(err, &amb):
		return nil, exitf(ExitError, "%v", err)
	case err != nil:
		return nil, exitf(ExitError, "read the submissions: %v", err)
	case sid == "":
		return nil, nil
	}
	sub, err := agent.GetSubmission(ctx, store, sid)
	if errors.Is(err, agent.ErrNoSubmission) {
		return nil, nil // removed since
	}
	if err != nil {
		return nil, exitf(ExitError, "read submission %s: %v", sid, err)
	}
	return sub, nil
}

func runJobStatus(c *ucli.Context) error {
	asJSON, err := outputFormat(c)
	if err != nil {
		return err
	}
	store, _, err := connect(c)
	if err != nil {
		return err
	}
	defer store.Close()
	sub, err := oneSubmission(c, store)
	if err != nil {
		return err
	}
	v := view(sub)
	if asJSON {
		return printJSON(c, v)
	}
	return printSubmission(c.App.Writer, v, isTerminal(sub.GetState()))
}

// printSubmission writes a submission as `job status` shows it: a "Field:  value" row per
// field that has one (the exit code once it ended); every value is one table cell, so a
// message with newlines or tabs (a failed driver's error) stays on its row, escaped.
func printSubmission(w io.Writer, v submissionView, ended bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, cell(v))
		}
	}
	row("Submission", v.SubmissionID)
	row("State", v.State)
	row("Job", v.JobID)
	row("Entrypoint", strings.Join(v.Entrypoint, " "))
	row("Working dir", v.WorkingDir)
	if v.Pid != 0 {
		row("Driver pid", fmt.Sprint(v.Pid))
	}
	if ended {
		row("Exit code", fmt.Sprint(v.ExitCode))
	}
	row("Start", v.Start)
	row("End", v.End)
	row("Message", v.Message)
	row("Log (on the head)", v.LogPath)
	if v.StopRequest {
		row("Stop requested", "yes")
	}
	return tw.Flush()
}

func runJobLogs(c *ucli.Context) error {
	store, _, err := connect(c)
	if err != nil {
		return err
	}
	defer store.Close()
	sub, err := oneSubmission(c, store)
	if err != nil {
		return err
	}
	if c.Bool("follow") {
		ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		if _, err := agent.ReadLog(ctx, store, sub.GetSubmissionId(), c.App.Writer, true); err != nil && ctx.Err() == nil {
			return exitf(ExitError, "follow the output of %s: %v", sub.GetSubmissionId(), err)
		}
		return nil
	}
	if _, err := agent.ReadLog(c.Context, store, sub.GetSubmissionId(), c.App.Writer, false); err != nil {
		return exitf(ExitError, "read the output of %s: %v", sub.GetSubmissionId(), err)
	}
	return nil
}

func runJobStop(c *ucli.Context) error {
	store, _, err := connect(c)
	if err != nil {
		return err
	}
	defer store.Close()
	sub, err := oneSubmission(c, store)
	if err != nil {
		return err
	}
	id := sub.GetSubmissionId()
	if isTerminal(sub.GetState()) {
		fmt.Fprintf(c.App.Writer, "%s already ended: %s\n", id, sub.GetState())
		return nil
	}
	ctx, cancel := opCtx(c)
	_, err = agent.UpdateSubmission(ctx, store, id, func(s *pb.Submission) bool {
		if isTerminal(s.GetState()) || s.GetStopRequested() {
			return false
		}
		s.StopRequested = true
		return true
	})
	cancel()
	if d := denied(err, "request the stop of "+id, submitNeeds); d != nil {
		return d
	}
	if err != nil {
		return exitf(ExitError, "request the stop of %s: %v", id, err)
	}
	if c.Bool("no-wait") {
		fmt.Fprintf(c.App.Writer, "Stop of %s requested\n", id)
		return nil
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		sub, err = agent.GetSubmission(c.Context, store, id)
		if err == nil && isTerminal(sub.GetState()) {
			fmt.Fprintf(c.App.Writer, "%s %s\n", id, sub.GetState())
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return exitf(ExitError, "%s did not stop within 15 s (is the head agent alive? rayctl status)", id)
}
