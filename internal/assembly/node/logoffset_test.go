package node

import (
	"os"
	"path/filepath"
	"testing"
)

// logOffset reads where an O_APPEND log ends, also before the process's first write (the
// descriptor's own offset is 0 then) and after writes through another descriptor; a pipe
// has none.
func TestLogOffset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "worker.log")
	if err := os.WriteFile(path, []byte("an earlier process's output\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	off := logOffset(f)
	if off == nil {
		t.Fatal("no offsets of a regular file")
	}
	if got := off(); got != 28 {
		t.Fatalf("before the first write: %d, want 28", got)
	}
	f.WriteString("task output\n")
	if got := off(); got != 40 {
		t.Fatalf("after a write: %d, want 40", got)
	}
	other, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	other.WriteString("stderr\n")
	other.Close()
	if got := off(); got != 47 {
		t.Fatalf("after another descriptor's write: %d, want 47", got)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if logOffset(w) != nil {
		t.Error("offsets of a pipe")
	}
}

// What a task pays for its log offsets: two of these.
func BenchmarkLogOffset(b *testing.B) {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "worker.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	off := logOffset(f)
	b.ReportAllocs()
	for b.Loop() {
		off()
	}
}
