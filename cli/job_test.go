package cli

import (
	"bytes"
	"strings"
	"testing"
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
