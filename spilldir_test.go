package ray

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestSpillDir: WithSpillDir sends the store's spill files to the directory given, in a
// directory of the node's own there, and not to the node's directory; the objects read
// back whole; Shutdown removes the node's directory and nothing else there. A directory
// there that a killed program left (its lock free) is removed by Init; a live one's (its
// lock held), an agent's and other files are kept.
func TestSpillDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "session")
	spill := filepath.Join(t.TempDir(), "scratch")
	if err := os.MkdirAll(spill, 0o700); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	mk := func(name string, lock bool) *os.File {
		d := filepath.Join(spill, name)
		if err := os.MkdirAll(filepath.Join(d, "spill"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "spill", "x-1.zst"), []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(filepath.Join(d, "ray-go.lock"), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("1\n" + host + "\n")
		if lock {
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				t.Fatal(err)
			}
			return f
		}
		f.Close()
		return nil
	}
	mk("ray-go-spill-dead", false)
	live := mk("ray-go-spill-live", true)
	defer live.Close()
	mk("ray-go-agent-other", false)
	if err := os.WriteFile(filepath.Join(spill, "keep.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, err := Init(context.Background(), WithNumCPUs(1), WithDir(dir), WithSpillDir(spill), WithObjectStoreMemory(2<<20))
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			Shutdown(ctx)
		}
	}()
	if _, err := os.Stat(filepath.Join(spill, "ray-go-spill-dead")); !os.IsNotExist(err) {
		t.Errorf("the directory a killed program left is still there (%v)", err)
	}
	var want [][]byte
	var refs []ObjectRef[[]byte]
	for i := range 8 { // 8 MiB into a 2 MiB store: most of it is spilled
		b := bytes.Repeat([]byte{byte(i + 1)}, 1<<20)
		b[i] = 0xff
		r, err := Put(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		want, refs = append(want, b), append(refs, r)
	}
	deadline := time.Now().Add(60 * time.Second)
	var spilled []string
	for {
		spilled, _ = filepath.Glob(filepath.Join(spill, "ray-go-spill-*", "spill", "*.zst"))
		mine := spilled[:0:0]
		for _, f := range spilled {
			if filepath.Base(filepath.Dir(filepath.Dir(f))) != "ray-go-spill-live" {
				mine = append(mine, f)
			}
		}
		if spilled = mine; len(spilled) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing was spilled under %s", spill)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if def, _ := filepath.Glob(filepath.Join(dir, "spill", "*")); len(def) > 0 {
		t.Errorf("spill files in the node's directory too: %v", def)
	}
	for i, r := range refs {
		got, err := Get(ctx, r)
		if err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		if !bytes.Equal(got, want[i]) {
			t.Fatalf("object %d: other bytes read back", i)
		}
	}
	if err := Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	stopped = true
	entries, err := os.ReadDir(spill)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want2 := []string{"keep.txt", "ray-go-agent-other", "ray-go-spill-live"}
	if len(names) != len(want2) || names[0] != want2[0] || names[1] != want2[1] || names[2] != want2[2] {
		t.Fatalf("after Shutdown the spill directory holds %v, want %v", names, want2)
	}
	if b, err := os.ReadFile(filepath.Join(spill, "ray-go-spill-live", "spill", "x-1.zst")); err != nil || string(b) != "old" {
		t.Fatalf("a live node's spill file was touched: %q, %v", b, err)
	}
}

// TestSpillDirRefused: Init refuses a spill directory that cannot be one, saying why.
func TestSpillDirRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Init(context.Background(), WithNumCPUs(1), WithDir(t.TempDir()), WithSpillDir(file))
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("is a file, not a directory")) {
		t.Fatalf("Init with a file as the spill directory: %v", err)
	}
}
