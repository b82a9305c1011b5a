package ship

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzUnpack: whatever the archive, Unpack either refuses it and leaves nothing, or
// writes only inside its directory.
func FuzzUnpack(f *testing.F) {
	f.Add(archive(f, []entry{{name: "a.txt", typ: tar.TypeReg, body: "hi"}, {name: "d/", typ: tar.TypeDir}, {name: "d/b", typ: tar.TypeReg, body: "x"}}))
	f.Add(archive(f, []entry{{name: "../x", typ: tar.TypeReg, body: "hi"}}))
	f.Add(archive(f, []entry{{name: "l", typ: tar.TypeSymlink, link: ".."}, {name: "l/x", typ: tar.TypeReg}}))
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		root := t.TempDir()
		parent := filepath.Join(root, "p")
		dst := filepath.Join(parent, "wd")
		err := Unpack(bytes.NewReader(b), dst)
		if err != nil {
			if ents, _ := os.ReadDir(parent); len(ents) != 0 {
				t.Fatalf("a refused archive left %v", ents)
			}
		}
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if p != root && p != parent && !strings.HasPrefix(p, dst+string(filepath.Separator)) && p != dst {
				t.Fatalf("wrote %s outside %s", p, dst)
			}
			if d.Type()&os.ModeSymlink != 0 {
				t.Fatalf("made a symlink %s", p)
			}
			return nil
		})
	})
}

// FuzzDecodeMeta: a blob record either decodes to numbers that describe a blob, or is
// refused; never a panic.
func FuzzDecodeMeta(f *testing.F) {
	f.Add([]byte(`{"size":10,"chunks":1,"stored":9,"lease":7}`))
	f.Add([]byte(`{"size":-1}`))
	f.Add([]byte(`{"size":1,"chunks":99999999,"stored":1,"lease":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMeta(b)
		if err != nil {
			return
		}
		if m.Size < 0 || m.Stored < 0 || m.Lease == 0 || int64(m.Chunks) != (m.Stored+ChunkBytes-1)/ChunkBytes {
			t.Fatalf("accepted %+v", m)
		}
	})
}
