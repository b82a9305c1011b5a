package ship

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
)

// Cache is a directory of verified blobs, each a file named by its sha256 (mode 0700: the
// cache holds executables). A file is only ever created by renaming a fetched and verified
// temporary file, and is hashed again before every use, so a file changed on disk is
// fetched anew, never run.
//
// Eviction: after each fetch, the least recently used files (by modification time, which
// Path sets on every use) are removed until the directory holds at most MaxBytes; the file
// just fetched and those named in keep stay. A process started from an evicted file keeps
// running (the kernel holds the inode); a later start fetches it again.
type Cache struct {
	Dir      string
	MaxBytes int64
	// Limit is the largest blob fetched.
	Limit int64
}

// Path returns the path of the verified file of blob sum, fetching it from store when the
// cache does not hold it (or holds other bytes under its name). keep names blobs eviction
// must leave (those in use).
func (c Cache) Path(ctx context.Context, store gcs.Store, sum string, keep map[string]bool) (string, error) {
	if !ValidSum(sum) {
		return "", fmt.Errorf("ship: %q is not a sha256", sum)
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return "", fmt.Errorf("ship: cache: %w", err)
	}
	path := filepath.Join(c.Dir, sum)
	if got, err := FileSum(path); err == nil && got == sum {
		now := time.Now()
		_ = os.Chtimes(path, now, now)
		return path, nil
	} else if err == nil {
		_ = os.Remove(path) // other bytes under this name: fetch again
	}
	tmp, err := os.CreateTemp(c.Dir, ".fetch-"+sum[:12]+"-*")
	if err != nil {
		return "", fmt.Errorf("ship: cache: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	err = Fetch(ctx, store, sum, c.Limit, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o700)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return "", err
	}
	c.evict(sum, keep)
	return path, nil
}

func (c Cache) evict(fresh string, keep map[string]bool) {
	if c.MaxBytes <= 0 {
		return
	}
	ents, err := os.ReadDir(c.Dir)
	if err != nil {
		return
	}
	type file struct {
		name string
		size int64
		used time.Time
	}
	var files []file
	var total int64
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() || !ValidSum(e.Name()) {
			continue
		}
		files = append(files, file{e.Name(), fi.Size(), fi.ModTime()})
		total += fi.Size()
	}
	sort.Slice(files, func(i, j int) bool { return files[i].used.Before(files[j].used) })
	for _, f := range files {
		if total <= c.MaxBytes {
			return
		}
		if f.name == fresh || keep[f.name] {
			continue
		}
		if os.Remove(filepath.Join(c.Dir, f.name)) == nil {
			total -= f.size
		}
	}
}

// FileSum returns the hex sha256 of a file (how blobs and executables are named).
func FileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
