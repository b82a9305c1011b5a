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
// always gives the same bytes (and the same hash, so the GCS keeps it once). It refuses a
// tree that holds a symbolic link, device, socket or pipe (say what to do: copy the target
// in), or exceeds MaxDirBytes, MaxDirFiles or MaxArchiveBytes. It returns the archive and
// its hex sha256.
func PackDir(dir string) ([]byte, string, error) {
	var out bytes.Buffer
	enc, err := zstd.NewWriter(&out, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(4<<20))
	if err != nil {
		return nil, "", err
	}
	tw := tar.NewWriter(enc)
	var total int64
	files := 0
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if files++; files > MaxDirFiles {
			return fmt.Errorf("%s holds more than %d files and directories (the limit of a working directory)", dir, MaxDirFiles)
		}
		switch {
		case fi.IsDir():
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: int64(fi.Mode().Perm())})
		case fi.Mode().IsRegular():
		default:
			return fmt.Errorf("%s is %s, not a regular file or directory: a working directory holds only those (copy the target in instead)", p, fileKind(fi.Mode()))
		}
		if total += fi.Size(); total > MaxDirBytes {
			return fmt.Errorf("%s holds more than %d MiB (the limit of a working directory): leave large inputs out and read them from shared storage", dir, MaxDirBytes>>20)
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: int64(fi.Mode().Perm()), Size: fi.Size()}); err != nil {
			return err
		}
		if _, err := io.CopyN(tw, f, fi.Size()); err != nil {
			return fmt.Errorf("%s changed while it was packed: %w", p, err)
		}
		if out.Len() > MaxArchiveBytes {
			return fmt.Errorf("the archive of %s exceeds %d MiB compressed (the limit of a working directory)", dir, MaxArchiveBytes>>20)
		}
		return nil
	})
	if err == nil {
		err = tw.Close()
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
