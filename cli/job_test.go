package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"
	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/assembly/agent"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestJobStatusCellsOneLine: rayctl job status keeps each field on its row: a message
// with newlines and tabs (a failed driver's error) and an entrypoint argument with one are
// escaped as list's and status's cells are, and the rows after them still line up.
func TestJobStatusCellsOneLine(t *testing.T) {
	msg := "driver exited: panic: boom\n\tgoroutine 1 [running]:\r\nexit status 2"
	v := submissionView{SubmissionID: "s1", State: "FAILED", JobID: "j1", Entrypoint: []string{"./drv", "a\nb"},
		WorkingDir: "/w", Pid: 42, ExitCode: 2, Start: "t0", End: "t1", Message: msg, LogPath: "/log"}
	var out bytes.Buffer
	if err := printSubmission(&out, v, true); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	want := []string{"Submission", "State", "Job", "Entrypoint", "Working dir", "Driver pid", "Exit code", "Start", "End", "Message", "Log (on the head)"}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d (one per field):\n%s", len(lines), len(want), text)
	}
	col := strings.Index(lines[0], "s1")
	for i, k := range want {
		if !strings.HasPrefix(lines[i], k+":") {
			t.Fatalf("line %d %q, want the %s row:\n%s", i, lines[i], k, text)
		}
		if lines[i][col-1] != ' ' || lines[i][col] == ' ' {
			t.Fatalf("line %d %q: its value does not start in the values' column (%d):\n%s", i, lines[i], col, text)
		}
	}
	if !strings.HasSuffix(lines[9], `driver exited: panic: boom\n\tgoroutine 1 [running]:\r\nexit status 2`) {
		t.Fatalf("message row %q, want the message escaped on it", lines[9])
	}
	if !strings.HasSuffix(lines[3], `./drv a\nb`) {
		t.Fatalf("entrypoint row %q, want the argument escaped", lines[3])
	}
	// A running submission has no exit code row.
	out.Reset()
	v.State, v.Message, v.End = "RUNNING", "", ""
	if err := printSubmission(&out, v, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "Exit code") || strings.Contains(out.String(), "Message") {
		t.Fatalf("running:\n%s", out.String())
	}
}

// TestJobCommandOfADirectDriver: the job commands given the ID of a job whose driver was
// run directly (it has no submission) say so and which commands show it, instead of that
// no such submission exists; an ID of nothing says that neither a submission nor a job has it.
func TestJobCommandOfADirectDriver(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(memstore.Options{})
	defer s.Close()
	putJob := func(info *pb.JobInfo) {
		b, err := proto.Marshal(info)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, gcs.JobKey(info.JobId), b, 0); err != nil {
			t.Fatal(err)
		}
	}
	putJob(&pb.JobInfo{JobId: "46c82f6a", State: pb.JobInfo_FAILED, DriverHost: "h1", DriverPid: 1234})
	putJob(&pb.JobInfo{JobId: "77aa0011", State: pb.JobInfo_SUCCEEDED, SubmissionId: "0123456789abcdef"})
	statusOf := func(id string) string {
		t.Helper()
		app := &ucli.App{Action: func(c *ucli.Context) error {
			_, err := oneSubmission(c, s)
			return err
		}}
		err := app.RunContext(ctx, []string{"rayctl", id})
		if err == nil {
			t.Fatalf("%s: no error", id)
		}
		return err.Error()
	}
	msg := statusOf("46c82f")
	for _, want := range []string{"job 46c82f6a is a driver run directly (on h1, pid 1234)", "rayctl get job 46c82f6a", "rayctl list jobs", "rayctl logs job 46c82f6a"} {
		if !strings.Contains(msg, want) {
			t.Errorf("job of a direct driver: %q does not say %q", msg, want)
		}
	}
	if msg := statusOf("77aa0011"); !strings.Contains(msg, "submitted as 0123456789abcdef, whose record is no longer in the cluster") {
		t.Errorf("job whose submission was removed: %q", msg)
	}
	if msg := statusOf("ffffffff"); !strings.Contains(msg, `no submission or job "ffffffff"`) {
		t.Errorf("unknown ID: %q", msg)
	}
}

// silentStore is a store whose reads of submissions fail as a stopped head's do.
type silentStore struct {
	gcs.Store
}

func (s silentStore) Get(ctx context.Context, key string) (gcs.KV, bool, error) {
	if strings.HasPrefix(key, gcs.SubmissionsPrefix) {
		return gcs.KV{}, false, fmt.Errorf("etcdstore: get %s: %w", key, context.DeadlineExceeded)
	}
	return s.Store.Get(ctx, key)
}

// TestFollowOfAStoppedHead: job submit following a job whose head stops answering (its
// output ended, then the submission cannot be read) says that the cluster at its address
// stopped answering, that the job's end is unknown, and how to learn it, rather than only
// the store's error.
func TestFollowOfAStoppedHead(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New(memstore.Options{})
	defer mem.Close()
	id := "d55db0123456789a"
	b, _ := proto.Marshal(&pb.Submission{SubmissionId: id, State: pb.JobInfo_RUNNING})
	for k, v := range map[string][]byte{
		gcs.SubmissionKey(id):    b,
		agent.LogChunkKey(id, 1): []byte("started\n"),
		agent.LogEndKey(id):      []byte(`{"bytes":8}`),
	} {
		if _, err := mem.Put(ctx, k, v, 0); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	app := &ucli.App{Writer: &out, ErrWriter: io.Discard, Action: func(c *ucli.Context) error {
		return follow(c, silentStore{mem}, []string{"127.0.0.1:27999"}, id)
	}}
	err := app.RunContext(ctx, []string{"rayctl"})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"the cluster (head at 127.0.0.1:27999) stopped answering while following " + id,
		"how the job ended is unknown", "rayctl job status " + id, "deadline exceeded"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if out.String() != "started\n" {
		t.Errorf("output %q", out.String())
	}
}
