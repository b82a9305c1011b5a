package ship

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// Limits of a working directory (rayctl job submit --working-dir).
const (
	// MaxDirBytes is the most content a packed directory may hold (before compression).
	MaxDirBytes = 256 << 20
	// MaxDirFiles is the most entries (files and directories) it may hold.
	MaxDirFiles = 20000
	// MaxArchiveBytes is the most bytes its compressed archive may have: it travels through
	// the GCS.
	MaxArchiveBytes = 64 << 20
)

// ErrArchive: an archive that Unpack refuses (a path outside the directory, an entry kind
// other than a regular file or a directory, a limit exceeded, a damaged stream).
var ErrArchive = errors.New("ship: bad working-directory archive")

// PackDir packs the regular files and directories under dir into a tar stream compressed
// with zstd, in lexical order with modes and no owners or times, so that the same tree
// always gives the same bytes (and the same hash, so the GCS keeps it once). A symbolic
// link is followed, wherever it points (as Ray's working_dir upload does: data links,
// virtual environments), and packed as what it points to: the archive holds no links. It
// refuses a link that points nowhere or to a directory that holds it (a loop), a device,
// socket or named pipe (saying which), and a tree that exceeds MaxDirBytes, MaxDirFiles or
// MaxArchiveBytes. It returns the archive and its hex sha256.
func PackDir(dir string) ([]byte, string, error) {
	var out bytes.Buffer
	enc, err := zstd.NewWriter(&out, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(4<<20))
	if err != nil {
		return nil, "", err
	}
	p := &packer{dir: dir, tw: tar.NewWriter(enc), out: &out}
	err = p.walk(dir, "", nil)
	if err == nil {
		err = p.tw.Close()
	}
	if cerr := enc.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, "", fmt.Errorf("ship: pack %s: %w", dir, err)
	}
	if out.Len() > MaxArchiveBytes {
		return nil, "", fmt.Errorf("ship: pack %s: the archive has %d bytes, more than %d MiB (the limit of a working directory)", dir, out.Len(), MaxArchiveBytes>>20)
	}
	sum := sha256.Sum256(out.Bytes())
	return out.Bytes(), hex.EncodeToString(sum[:]), nil
}

// packer is one PackDir's walk.
type packer struct {
	dir   string
	tw    *tar.Writer
	out   *bytes.Buffer
	total int64
	files int
}

// walk packs the entries of the directory at path p (named rel in the archive; "" for the
// root), in lexical order. above are the directories from the root down to p, as os.Stat
// gives them (links followed): a link to one of them is a loop.
func (pk *packer) walk(p, rel string, above []os.FileInfo) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	above = append(above, fi)
	entries, err := os.ReadDir(p)
	if err != nil {
		return err
	}
	for _, e := range entries {
		full := filepath.Join(p, e.Name())
		name := e.Name()
		if rel != "" {
			name = rel + "/" + name
		}
		fi, err := os.Stat(full) // follows a symbolic link
		if err != nil {
			if e.Type()&fs.ModeSymlink != 0 {
				target, _ := os.Readlink(full)
				return fmt.Errorf("%s is a symbolic link to %s, which cannot be read (%v): remove the link, or make it point to a file or directory", full, target, err)
			}
			return err
		}
		if pk.files++; pk.files > MaxDirFiles {
			return fmt.Errorf("%s holds more than %d files and directories (the limit of a working directory)", pk.dir, MaxDirFiles)
		}
		switch {
		case fi.IsDir():
			for _, a := range above {
				if os.SameFile(a, fi) {
					if target, err := os.Readlink(full); err == nil {
						return fmt.Errorf("%s is a symbolic link to %s, a directory that holds it (a loop): remove the link", full, target)
					}
					return fmt.Errorf("%s is a directory that holds it (a loop)", full)
				}
			}
			if err := pk.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: int64(fi.Mode().Perm())}); err != nil {
				return err
			}
			if err := pk.walk(full, name, above); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			if err := pk.file(full, name, fi); err != nil {
				return err
			}
		default:
			what := full
			if e.Type()&fs.ModeSymlink != 0 {
				target, _ := os.Readlink(full)
				what = fmt.Sprintf("%s (a symbolic link to %s)", full, target)
			}
			return fmt.Errorf("%s is %s: only regular files and directories can be shipped in a working directory; move it out of the directory", what, fileKind(fi.Mode()))
		}
	}
	return nil
}

// file packs the regular file at path p as name.
func (pk *packer) file(p, name string, fi os.FileInfo) error {
	if pk.total += fi.Size(); pk.total > MaxDirBytes {
		return fmt.Errorf("%s holds more than %d MiB (the limit of a working directory): leave large inputs out and read them from shared storage", pk.dir, MaxDirBytes>>20)
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pk.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(fi.Mode().Perm()), Size: fi.Size()}); err != nil {
		return err
	}
	if _, err := io.CopyN(pk.tw, f, fi.Size()); err != nil {
		return fmt.Errorf("%s changed while it was packed: %w", p, err)
	}
	if pk.out.Len() > MaxArchiveBytes {
		return fmt.Errorf("the archive of %s exceeds %d MiB compressed (the limit of a working directory)", pk.dir, MaxArchiveBytes>>20)
	}
	return nil
}

// Unpack extracts an archive made by PackDir into dst, which must not exist: it unpacks
// into a new sibling directory and renames it to dst only when the whole archive was good,
// so dst is either absent or complete. It refuses (ErrArchive, nothing left behind):
// a name that is absolute, has "..", or is not in canonical form; an entry other than a
// regular file or directory (no links: nothing can point outside dst); a name seen twice;
// more than MaxDirFiles entries or MaxDirBytes of content. Modes keep their permission
// bits masked with 0755 (owner may always read and write). Memory stays bounded: the zstd
// window at most 8 MiB, file content streamed.
func Unpack(r io.Reader, dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("ship: unpack into %s: it exists already", dst)
	}
	parent := filepath.Dir(dst)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return fmt.Errorf("ship: unpack: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dst)+".unpack-*")
	if err != nil {
		return fmt.Errorf("ship: unpack: %w", err)
	}
	if err := unpackInto(r, tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("ship: unpack: %w", err)
	}
	return nil
}

func unpackInto(r io.Reader, dir string) error {
	dec, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(decoderWindow), zstd.WithDecoderMaxMemory(MaxDirBytes+decoderWindow))
	if err != nil {
		return err
	}
	defer dec.Close()
	tr := tar.NewReader(dec)
	seen := map[string]bool{}
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrArchive, err)
		}
		name := strings.TrimSuffix(h.Name, "/")
		if name == "" || strings.ContainsAny(name, "\\\x00") || path.Clean(name) != name || !filepath.IsLocal(name) || strings.HasPrefix(name, "../") {
			return fmt.Errorf("%w: entry %q is not a plain relative path inside the directory", ErrArchive, h.Name)
		}
		if seen[name] {
			return fmt.Errorf("%w: entry %q appears twice", ErrArchive, h.Name)
		}
		seen[name] = true
		if len(seen) > MaxDirFiles {
			return fmt.Errorf("%w: more than %d entries", ErrArchive, MaxDirFiles)
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		mode := os.FileMode(h.Mode).Perm()&0o755 | 0o600
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, mode|0o700); err != nil {
				return fmt.Errorf("%w: %v", ErrArchive, err)
			}
		case tar.TypeReg:
			if h.Size < 0 || total+h.Size > MaxDirBytes {
				return fmt.Errorf("%w: more than %d MiB of content", ErrArchive, MaxDirBytes>>20)
			}
			total += h.Size
			if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
				return fmt.Errorf("%w: %v", ErrArchive, err)
			}
			f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
			if err != nil {
				return fmt.Errorf("%w: entry %q: %v", ErrArchive, h.Name, err)
			}
			_, err = io.CopyN(f, tr, h.Size)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("%w: entry %q: %v", ErrArchive, h.Name, err)
			}
		default:
			return fmt.Errorf("%w: entry %q is of tar type %q: only regular files and directories are unpacked", ErrArchive, h.Name, string(h.Typeflag))
		}
	}
}

// fileKind names a file type that is not a regular file or a directory ("a L---------"
// was what %v of fs.FileMode printed for a symbolic link).
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file (" + m.Type().String() + ")"
}
