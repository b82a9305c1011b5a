package ship

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func TestPackUnpackRoundTrip(t *testing.T) {
	src := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(src, "data", "deep"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "input.txt"), []byte("hello\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "data", "deep", "run.sh"), []byte("#!/bin/sh\n"), 0o755))
	must(t, os.MkdirAll(filepath.Join(src, "empty"), 0o755))
	a, sum, err := PackDir(src)
	must(t, err)
	a2, sum2, err := PackDir(src)
	must(t, err)
	if sum != sum2 || !bytes.Equal(a, a2) || sum != sumOf(a) {
		t.Fatal("packing the same tree twice gave different archives")
	}
	dst := filepath.Join(t.TempDir(), "wd")
	must(t, Unpack(bytes.NewReader(a), dst))
	if b, _ := os.ReadFile(filepath.Join(dst, "input.txt")); string(b) != "hello\n" {
		t.Fatalf("input.txt: %q", b)
	}
	fi, err := os.Stat(filepath.Join(dst, "data", "deep", "run.sh"))
	must(t, err)
	if fi.Mode().Perm()&0o100 == 0 {
		t.Fatalf("run.sh lost its x bit: %v", fi.Mode())
	}
	if fi, err := os.Stat(filepath.Join(dst, "empty")); err != nil || !fi.IsDir() {
		t.Fatal("empty dir missing")
	}
	if err := Unpack(bytes.NewReader(a), dst); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Fatalf("unpack over an existing dir: %v", err)
	}
}

// TestPackFollowsSymlinks: links to files and directories, inside the working directory
// or outside it, are packed as what they point to (Ray's working_dir follows them); the
// archive holds no links. They were refused.
func TestPackFollowsSymlinks(t *testing.T) {
	outside := t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, "data.csv"), []byte("a,b\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(outside, "venv", "bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(outside, "venv", "bin", "tool"), []byte("#!/bin/sh\n"), 0o755))
	src := t.TempDir()
	must(t, os.WriteFile(filepath.Join(src, "main.txt"), []byte("main\n"), 0o644))
	must(t, os.Symlink(filepath.Join(outside, "data.csv"), filepath.Join(src, "data.csv")))
	must(t, os.Symlink(filepath.Join(outside, "venv"), filepath.Join(src, "venv")))
	must(t, os.Symlink("main.txt", filepath.Join(src, "alias.txt")))
	a, _, err := PackDir(src)
	must(t, err)
	dst := filepath.Join(t.TempDir(), "wd")
	must(t, Unpack(bytes.NewReader(a), dst))
	for name, want := range map[string]string{"main.txt": "main\n", "alias.txt": "main\n", "data.csv": "a,b\n", "venv/bin/tool": "#!/bin/sh\n"} {
		p := filepath.Join(dst, filepath.FromSlash(name))
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s: %v, %v; want a regular file", name, fi, err)
			continue
		}
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Errorf("%s: %q, want %q", name, b, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(dst, "venv", "bin", "tool")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("venv/bin/tool lost its x bit: %v %v", fi, err)
	}
}

// TestPackRefusesWhatCannotBeShipped: a named pipe (and a link to one), a link that points
// nowhere and a link to a directory above it are refused, each saying what it is and what
// to do.
func TestPackRefusesWhatCannotBeShipped(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(src string)
		want  []string
	}{
		{"fifo", func(src string) { must(t, syscall.Mkfifo(filepath.Join(src, "pipe"), 0o600)) },
			[]string{"pipe is a named pipe: only regular files and directories can be shipped", "move it out of the directory"}},
		{"link to a fifo", func(src string) {
			other := t.TempDir()
			must(t, syscall.Mkfifo(filepath.Join(other, "pipe"), 0o600))
			must(t, os.Symlink(filepath.Join(other, "pipe"), filepath.Join(src, "link")))
		}, []string{"link (a symbolic link to ", "is a named pipe"}},
		{"dangling link", func(src string) { must(t, os.Symlink("/no/such/file", filepath.Join(src, "gone"))) },
			[]string{"gone is a symbolic link to /no/such/file, which cannot be read", "remove the link"}},
		{"loop", func(src string) {
			must(t, os.MkdirAll(filepath.Join(src, "a"), 0o755))
			must(t, os.Symlink("..", filepath.Join(src, "a", "up")))
		}, []string{"up is a symbolic link to .., a directory that holds it (a loop)"}},
	} {
		src := t.TempDir()
		c.setup(src)
		_, _, err := PackDir(src)
		if err == nil {
			t.Errorf("%s: packed", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want it to say %q", c.name, err, w)
			}
		}
	}
}

type entry struct {
	name string
	typ  byte
	body string
	link string
}

func archive(t testing.TB, es []entry) []byte {
	var out bytes.Buffer
	enc, _ := zstd.NewWriter(&out)
	tw := tar.NewWriter(enc)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body)), Linkname: e.link}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			_, _ = tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	enc.Close()
	return out.Bytes()
}

// Archives that would write outside the directory, or hold links, are refused and leave
// nothing behind.
func TestUnpackRefusesEscapes(t *testing.T) {
	for _, es := range [][]entry{
		{{name: "../evil", typ: tar.TypeReg, body: "x"}},
		{{name: "/etc/evil", typ: tar.TypeReg, body: "x"}},
		{{name: "a/../../evil", typ: tar.TypeReg, body: "x"}},
		{{name: "link", typ: tar.TypeSymlink, link: "/etc"}, {name: "link/evil", typ: tar.TypeReg, body: "x"}},
		{{name: "hard", typ: tar.TypeLink, link: "/etc/passwd"}},
		{{name: "a", typ: tar.TypeReg, body: "x"}, {name: "a", typ: tar.TypeReg, body: "y"}},
		{{name: "dev", typ: tar.TypeChar}},
	} {
		parent := t.TempDir()
		dst := filepath.Join(parent, "wd")
		err := Unpack(bytes.NewReader(archive(t, es)), dst)
		if !errors.Is(err, ErrArchive) {
			t.Errorf("%+v: err %v, want ErrArchive", es, err)
		}
		if ents, _ := os.ReadDir(parent); len(ents) != 0 {
			t.Errorf("%+v: left %v behind", es, ents)
		}
	}
	if _, err := os.Stat(filepath.Join(os.TempDir(), "evil")); err == nil {
		t.Fatal("an archive wrote outside its directory")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
