package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExitCause: an agent that exited before it was ready is explained from its log: the
// last error and the panic, and, when they come from the embedded GCS (etcd's database
// truncated or its snapshot gone: it panics) or from a full disk, what to do. rayctl start
// said only "the agent exited before it was ready (exit status 2); see agent.log".
func TestExitCause(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "agent.log")
	write := func(s string) {
		if err := os.WriteFile(log, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`time=2026-11-29T22:55:02.832Z level=INFO msg="agent starting"
time=2026-11-29T22:55:02.832Z level=ERROR msg="etcd: failed to open database" agent=f0 error="file size too small" path=/x/gcs/member/snap/db
panic: failed to open database

goroutine 1 [running]:
go.etcd.io/etcd/server/v3/mvcc/backend.newBackend(...)
`)
	got := exitCause(log, dir)
	for _, want := range []string{"failed to open database", "file size too small", "panic: failed to open database",
		"GCS data in " + filepath.Join(dir, "gcs"), "restore", "remove " + dir} {
		if !strings.Contains(got, want) {
			t.Errorf("exitCause of a damaged GCS: %q, want it to say %q", got, want)
		}
	}
	write(`time=2026-11-29T22:55:02.832Z level=ERROR msg="etcd: failed to commit tx" error="write /x/gcs/member/snap/db: no space left on device"
`)
	if got := exitCause(log, dir); !strings.Contains(got, "no space left on device") || !strings.Contains(got, "disk of "+dir+" is full") {
		t.Errorf("exitCause of a full disk: %q, want it to say the disk is full", got)
	}
	write("time=2026-11-29T22:55:02.832Z level=INFO msg=\"agent starting\"\n")
	if got := exitCause(log, dir); got != "" {
		t.Errorf("exitCause of a log without an error: %q, want nothing", got)
	}
	if got := exitCause(filepath.Join(dir, "none"), dir); got != "" {
		t.Errorf("exitCause of no log: %q, want nothing", got)
	}
}
