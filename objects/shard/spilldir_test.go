package shard

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestCheckSpillDir: a relative path is made absolute (from the current directory), a
// missing directory is created, and what cannot hold spill files is refused with what to do.
func TestCheckSpillDir(t *testing.T) {
	base := t.TempDir()
	t.Chdir(base)
	got, err := CheckSpillDir("rel/spill")
	if err != nil || got != filepath.Join(base, "rel", "spill") {
		t.Fatalf("CheckSpillDir(rel/spill) = %q, %v; want %s", got, err, filepath.Join(base, "rel", "spill"))
	}
	if fi, err := os.Stat(got); err != nil || !fi.IsDir() {
		t.Fatalf("not created: %v", err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		file:                         "is a file, not a directory: give a directory",
		filepath.Join(file, "below"): "a part of the path is a file",
		"":                           "empty",
	} {
		if _, err := CheckSpillDir(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckSpillDir(%q) = %v, want an error saying %q", path, err, want)
		}
	}
	for errno, want := range map[syscall.Errno]string{
		syscall.EROFS:  "read-only filesystem",
		syscall.EACCES: "not writable by this user",
		syscall.ENOSPC: "full",
	} {
		if err := spillDirError("/x", &os.PathError{Op: "mkdir", Path: "/x", Err: errno}); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "give") && !strings.Contains(err.Error(), "free space") {
			t.Errorf("%v: %v, want %q and what to do", errno, err, want)
		}
	}
}

// TestOpenSpillDirAgent: an agent's directory is taken back by its next start (emptied)
// when its lock is free, refused while a live process holds it, and Close removes it.
func TestOpenSpillDirAgent(t *testing.T) {
	parent := t.TempDir()
	d, err := OpenSpillDir(parent, AgentSpillPrefix+"a1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSpillDir(parent, AgentSpillPrefix+"a1"); err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("a second open of a held directory: %v", err)
	}
	left := filepath.Join(d.Dir, NodeSpillPrefix+"n1", "spill", "o-1.zst")
	if err := os.MkdirAll(filepath.Dir(left), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(left, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.lock.Close() // killed: the kernel drops the lock, the files stay
	d2, err := OpenSpillDir(parent, AgentSpillPrefix+"a1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(filepath.Dir(left))); !os.IsNotExist(err) {
		t.Fatalf("what the killed run left is still there: %v", err)
	}
	if err := d2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d2.Dir); !os.IsNotExist(err) {
		t.Fatalf("Close left %s: %v", d2.Dir, err)
	}
}
