package shard

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ray-go/ray/internal/base/fuzzing"
)

// TestSpillCorruptLength: one flipped bit in a spill file's length field (a claim of
// 512 GiB) used to make the reader allocate the claimed size before checking anything, a
// fatal out-of-memory. The reader knows the object's size; a file that disagrees, or is
// larger than a spill of that size can be, is refused at once, with an error that names
// the file and says what is wrong.
func TestSpillCorruptLength(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	write := func(name string) string {
		p := filepath.Join(dir, name)
		if _, err := writeSpill(p, data); err != nil {
			t.Fatal(err)
		}
		return p
	}
	size := int64(len(data))
	if got, err := readSpill(write("good.zst"), size); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("good file: %v", err)
	}

	flipped := write("flipped.zst")
	b, _ := os.ReadFile(flipped)
	b[4+4] ^= 0x80 // bit 39 of the length: +512 GiB
	if err := os.WriteFile(flipped, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	fuzzing.CheckAlloc(t, 1<<20, "reading a spill file claiming 512 GiB", func() { _, err = readSpill(flipped, size) })
	if !errors.Is(err, ErrCorruptSpill) || !strings.Contains(err.Error(), flipped) || !strings.Contains(err.Error(), "header says 549756862464 bytes, the object has 1048576") {
		t.Fatalf("flipped length: %v", err)
	}

	grown := write("grown.zst")
	f, _ := os.OpenFile(grown, os.O_WRONLY|os.O_APPEND, 0)
	_, _ = f.Write(make([]byte, 2<<20))
	f.Close()
	fuzzing.CheckAlloc(t, 1<<20, "reading a grown spill file", func() { _, err = readSpill(grown, size) })
	if !errors.Is(err, ErrCorruptSpill) || !strings.Contains(err.Error(), grown) || !strings.Contains(err.Error(), "more than a spill of a 1048576-byte object can take") {
		t.Fatalf("grown file: %v", err)
	}

	if _, err := readSpill(filepath.Join(dir, "missing.zst"), size); !errors.Is(err, ErrCorruptSpill) || !strings.Contains(err.Error(), "missing.zst") {
		t.Fatalf("missing file: %v", err)
	}
}

// TestSpillFileModes: spill files are readable by their owner only, in a directory only
// the owner can enter.
func TestSpillFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spill")
	p := filepath.Join(dir, "x.zst")
	if _, err := writeSpill(p, []byte("secret")); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, p: 0o600} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, st.Mode().Perm(), want)
		}
	}
}
