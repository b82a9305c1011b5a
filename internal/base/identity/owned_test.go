package identity

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nobody is the uid that plays another local user (the tests run as root to chown to it).
const nobody = 65534

func mustRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test chowns files to another user: run it as root")
	}
}

func savedToken(t *testing.T, dir string) (Token, string) {
	t.Helper()
	ca, err := NewCA("t", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := NewToken(ca)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, TokenFile)
	if err := SaveToken(path, tok); err != nil {
		t.Fatal(err)
	}
	return tok, path
}

// ReadTokenFile refuses a symbolic link, a file of another user and a file others may
// write: each could hold a token someone else chose.
func TestReadTokenFileRefusesForeignFiles(t *testing.T) {
	mustRoot(t)
	dir := t.TempDir()
	tok, path := savedToken(t, dir)
	if got, err := ReadTokenFile(path); err != nil || got != tok {
		t.Fatalf("own token file: %v %v", got == tok, err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTokenFile(link); !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("through a symbolic link: %v", err)
	}
	other := filepath.Join(dir, "other")
	if err := SaveToken(other, tok); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(other, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTokenFile(other); !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Errorf("a file of another user: %v", err)
	}
	writable := filepath.Join(dir, "writable")
	if err := SaveToken(writable, tok); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(writable, 0o620); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTokenFile(writable); !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), "chmod go-w") {
		t.Errorf("a group-writable file: %v", err)
	}
	if err := os.Chmod(writable, 0o602); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTokenFile(writable); !errors.Is(err, ErrNotOwned) {
		t.Errorf("an other-writable file: %v", err)
	}
	if _, err := LoadOwned(Files{CA: link, Cert: path, Key: path}); !errors.Is(err, ErrNotOwned) {
		t.Errorf("LoadOwned through a symbolic link: %v", err)
	}
}

// CheckOwnedDir refuses a directory of another user, one others may write in, a symbolic
// link, and one under a directory that another user could rename it out of; /tmp-like
// sticky directories above are fine.
func TestCheckOwnedDir(t *testing.T) {
	mustRoot(t)
	base := t.TempDir()
	mk := func(name string, mode os.FileMode, uid int) string {
		t.Helper()
		d := filepath.Join(base, name)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, uid, uid); err != nil {
			t.Fatal(err)
		}
		return d
	}
	if err := CheckOwnedDir(mk("mine", 0o700, 0), true); err != nil {
		t.Errorf("own 0700 directory: %v", err)
	}
	mk("sticky", 0o777|os.ModeSticky, 0)
	if err := CheckOwnedDir(mk("sticky/mine", 0o700, 0), true); err != nil {
		t.Errorf("own directory in a sticky world-writable one: %v", err)
	}
	for _, c := range []struct{ dir, want string }{
		{mk("open", 0o777, 0), "mode 0777"},
		{mk("theirs", 0o700, nobody), "belongs to uid 65534"},
		{mk("theirparent/mine", 0o700, 0), ""}, // made below, then the parent given away
	} {
		if c.want == "" {
			if err := os.Chown(filepath.Dir(c.dir), nobody, nobody); err != nil {
				t.Fatal(err)
			}
			c.want = "above " + c.dir
		}
		if err := CheckOwnedDir(c.dir, true); !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.dir, err, c.want)
		}
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(filepath.Join(base, "mine"), link); err != nil {
		t.Fatal(err)
	}
	if err := CheckOwnedDir(link, true); !errors.Is(err, ErrNotOwned) {
		t.Errorf("a symbolic link: %v", err)
	}
	// Root's directory: the user's own check accepts it, the strict one (start) does not
	// when the user is not root; as root both do.
	if err := CheckOwnedDir(filepath.Join(base, "mine"), false); err != nil {
		t.Errorf("not strict: %v", err)
	}
}

// A TokenDir keeps reading the directory it opened: another user who renames it (or a
// directory above it) away and puts their own in its place, with a token of their choice,
// does not change the token read.
func TestTokenDirSurvivesSwap(t *testing.T) {
	mustRoot(t)
	session := filepath.Join(t.TempDir(), "session")
	caDir := filepath.Join(session, "agent-x", "ca")
	if err := MkdirPrivate(caDir); err != nil {
		t.Fatal(err)
	}
	tok, _ := savedToken(t, caDir)
	td, err := OpenTokenDir(caDir)
	if err != nil {
		t.Fatal(err)
	}
	defer td.Close()
	// The swap, as the parent's owner could do it.
	if err := os.Rename(filepath.Join(session, "agent-x"), filepath.Join(session, "real-x")); err != nil {
		t.Fatal(err)
	}
	if err := MkdirPrivate(caDir); err != nil {
		t.Fatal(err)
	}
	fake, _ := savedToken(t, caDir)
	got, err := td.Read()
	if err != nil || got != tok || got == fake {
		t.Fatalf("after the swap: read the real token %v, the fake %v (%v)", got == tok, got == fake, err)
	}
	// Rotation (the file replaced in the directory itself) is seen.
	rotated, _ := savedToken(t, filepath.Join(session, "real-x", "ca"))
	if got, err := td.Read(); err != nil || got != rotated {
		t.Fatalf("after a rotation: %v %v", got == rotated, err)
	}
	// A symbolic link put in its place is refused.
	real := filepath.Join(session, "real-x", "ca", TokenFile)
	if err := os.Rename(real, real+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real+".old", real); err != nil {
		t.Fatal(err)
	}
	if _, err := td.Read(); !errors.Is(err, ErrNotOwned) {
		t.Fatalf("token file replaced by a symbolic link: %v", err)
	}
}
