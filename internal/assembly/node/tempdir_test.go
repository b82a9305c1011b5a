package node

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// holdDirEnv makes the test binary, re-executed, hold the lock of a session directory
// until its stdin closes: a live process of another Init.
const holdDirEnv = "RAY_GO_TEST_HOLD_TEMPDIR"

// TestMakeTempDirRemovesOnlyStaleDirs: a new local-mode session directory first removes
// the directories that killed processes left in $TMPDIR (their lock file is not held),
// and never a live process's (another process holds its lock), a directory without the
// lock file, or anything not named ray-go-*.
func TestMakeTempDirRemovesOnlyStaleDirs(t *testing.T) {
	if dir := os.Getenv(holdDirEnv); dir != "" {
		f, err := os.OpenFile(filepath.Join(dir, tempDirLock), os.O_RDWR, 0)
		if err == nil {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		}
		if err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("locked\n")
		bufio.NewReader(os.Stdin).ReadString('\n') // until the test closes stdin
		os.Exit(0)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	mk := func(name string, lockFile bool) string {
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(dir, "gcs"), 0o700); err != nil {
			t.Fatal(err)
		}
		if lockFile {
			if err := os.WriteFile(filepath.Join(dir, tempDirLock), []byte("1\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	stale := mk("ray-go-111", true) // its process was killed: nobody holds the lock
	live := mk("ray-go-222", true)  // held by a live process below
	noLock := mk("ray-go-333", false)
	other := mk("other-444", true)

	cmd := exec.Command(os.Args[0], "-test.run=^TestMakeTempDirRemovesOnlyStaleDirs$")
	cmd.Env = append(os.Environ(), holdDirEnv+"="+live)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("the holding process said %q, %v", line, err)
	}

	dir, lock, err := makeTempDir()
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale directory %s is still there (%v)", stale, err)
	}
	for _, keep := range []string{live, noLock, other, dir} {
		if _, err := os.Stat(filepath.Join(keep, "gcs")); keep != dir && err != nil {
			t.Errorf("%s was removed: %v", keep, err)
		}
	}
	if filepath.Dir(dir) != tmp {
		t.Errorf("new session directory %s is not in TMPDIR %s", dir, tmp)
	}
	// The new directory is live: another Init leaves it alone.
	if removed := removeStaleTempDirs(tmp); len(removed) != 0 {
		t.Errorf("a second Init removed %v, want nothing (the others are live or not ours)", removed)
	}
	if _, err := os.Stat(filepath.Join(dir, tempDirLock)); err != nil {
		t.Errorf("the new session directory has no lock file: %v", err)
	}
	// Once its process is gone (here: its lock released), it is stale.
	lock.Close()
	if removed := removeStaleTempDirs(tmp); len(removed) != 1 || removed[0] != dir {
		t.Errorf("after its process ended, removed %v, want [%s]", removed, dir)
	}
}
