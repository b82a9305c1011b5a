package ship

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
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

func TestPackRefusesSymlink(t *testing.T) {
	src := t.TempDir()
	must(t, os.Symlink("/etc/passwd", filepath.Join(src, "link")))
	if _, _, err := PackDir(src); err == nil || !strings.Contains(err.Error(), "is a symbolic link, not a regular file or directory") {
		t.Fatalf("err %v", err)
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
