package lockdir

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// TestRemoveStale: only directories with the prefix, a lock file and no holder are removed;
// a held lock (flock is per open file, so this process's other open file counts as a live
// holder), a refusing accept, a missing lock file and a symlink are left alone.
func TestRemoveStale(t *testing.T) {
	parent := t.TempDir()
	mk := func(name string) string {
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	stale := mk("p-stale")
	if f, err := CreateLock(stale, "1\n"); err != nil {
		t.Fatal(err)
	} else {
		f.Close() // its process is gone
	}
	live := mk("p-live")
	held, err := CreateLock(live, "2\n")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	refused := mk("p-refused")
	if f, err := CreateLock(refused, "other-host\n"); err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
	noLock := mk("p-nolock")
	other := mk("q-stale")
	if f, err := CreateLock(other, "3\n"); err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
	if err := os.Symlink(other, filepath.Join(parent, "p-link")); err != nil {
		t.Fatal(err)
	}

	accept := func(f *os.File) bool {
		b := make([]byte, 64)
		n, _ := f.ReadAt(b, 0)
		return string(b[:n]) != "other-host\n"
	}
	removed := RemoveStale(parent, "p-", accept)
	sort.Strings(removed)
	if len(removed) != 1 || removed[0] != stale {
		t.Errorf("removed %v, want [%s]", removed, stale)
	}
	for _, keep := range []string{live, refused, noLock, other} {
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("%s was removed: %v", keep, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(live, LockName)); err != nil || string(b) != "2\n" {
		t.Errorf("the live lock file reads %q, %v; want the info written", b, err)
	}
	if _, err := os.Stat(filepath.Join(live, LockName+".new")); !os.IsNotExist(err) {
		t.Errorf("the lock's temporary name is left: %v", err)
	}
	held.Close()
	if removed := RemoveStale(parent, "p-", accept); len(removed) != 1 || removed[0] != live {
		t.Errorf("after its holder closed, removed %v, want [%s]", removed, live)
	}
}
