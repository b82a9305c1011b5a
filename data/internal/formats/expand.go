package formats

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Expand resolves paths to a sorted, de-duplicated list of regular files: a path is a file, a
// directory (walked recursively; hidden files/dirs starting with "." or "_" skipped, as Ray does), or a
// glob (filepath.Glob syntax, plus "**" for any depth). In directories only files whose name ends in
// one of exts are kept (exts nil = all); the comparison ignores case. Files named explicitly or
// matched by a glob are kept whatever their extension. Errors name the path:
// "data: no files match \"/x/*.csv\"", "data: /x: permission denied" (the os error is wrapped
// with %w, so errors.Is(err, fs.ErrNotExist) and fs.ErrPermission work).
func Expand(paths []string, exts []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, errors.New("data: no paths given: pass at least one file, directory or glob")
	}
	var out []string
	for _, p := range paths {
		if p == "" {
			return nil, errors.New("data: empty path: pass a file, directory or glob")
		}
		var (
			got []string
			err error
		)
		if hasMeta(p) {
			got, err = expandGlob(p, exts)
			if err == nil && len(got) == 0 {
				err = fmt.Errorf("data: no files match %q", p)
			}
		} else {
			got, err = expandPath(filepath.Clean(p), exts)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	sort.Strings(out)
	return dedupe(out), nil
}

func dedupe(s []string) []string {
	if len(s) == 0 {
		return s
	}
	j := 1
	for i := 1; i < len(s); i++ {
		if s[i] != s[j-1] {
			s[j] = s[i]
			j++
		}
	}
	return s[:j]
}

func hasMeta(p string) bool { return strings.ContainsAny(p, `*?[`) }

func hidden(name string) bool { return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") }

func hasExt(name string, exts []string) bool {
	if exts == nil {
		return true
	}
	lname := strings.ToLower(name)
	for _, e := range exts {
		if strings.HasSuffix(lname, strings.ToLower(e)) {
			return true
		}
	}
	return false
}

// pathErr turns an os error about path into "data: path: reason", keeping the cause for errors.Is.
func pathErr(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("data: %s: %w", path, pe.Err)
	}
	return fmt.Errorf("data: %s: %w", path, err)
}

// expandPath expands one file or directory path.
func expandPath(p string, exts []string) ([]string, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, pathErr(p, err)
	}
	if fi.Mode().IsRegular() {
		return []string{p}, nil
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("data: %s: not a regular file or directory (mode %s)", p, fi.Mode())
	}
	files, err := walkDir(p, exts)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		if exts != nil {
			return nil, fmt.Errorf("data: no files with extension %s in directory %q (hidden files starting with \".\" or \"_\" are skipped)", strings.Join(exts, " or "), p)
		}
		return nil, fmt.Errorf("data: no files in directory %q (hidden files starting with \".\" or \"_\" are skipped)", p)
	}
	return files, nil
}

// walkDir lists the regular files under dir whose names end in one of exts, skipping hidden
// entries.
func walkDir(dir string, exts []string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return pathErr(path, err)
		}
		if path == dir {
			return nil
		}
		if hidden(d.Name()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		typ := d.Type()
		if typ&fs.ModeSymlink != 0 {
			fi, err := os.Stat(path)
			if err != nil {
				return pathErr(path, err)
			}
			typ = fi.Mode().Type()
		}
		if typ.IsRegular() && hasExt(d.Name(), exts) {
			out = append(out, path)
		}
		return nil
	})
	return out, err
}

// expandGlob expands a glob pattern in filepath.Match syntax where a "**" segment matches any
// number of directories. Matched directories are walked like directory paths.
func expandGlob(pattern string, exts []string) ([]string, error) {
	pattern = filepath.Clean(pattern)
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, fmt.Errorf("data: bad glob %q: %w", pattern, err)
	}
	// The root is the longest leading run of segments without meta characters.
	sep := string(filepath.Separator)
	segs := strings.Split(pattern, sep)
	root := ""
	i := 0
	for ; i < len(segs)-1 && !hasMeta(segs[i]); i++ {
		if i == 0 && segs[0] == "" {
			root = sep
			continue
		}
		root = filepath.Join(root, segs[i])
	}
	if root == "" {
		root = "."
	}
	var matched []string
	if err := matchSegs(root, segs[i:], &matched, make(map[string]bool)); err != nil {
		return nil, err
	}
	var out []string
	for _, m := range matched {
		fi, err := os.Stat(m)
		if err != nil {
			return nil, pathErr(m, err)
		}
		switch {
		case fi.Mode().IsRegular():
			out = append(out, m)
		case fi.IsDir():
			files, err := walkDir(m, exts)
			if err != nil {
				return nil, err
			}
			out = append(out, files...)
		}
	}
	return out, nil
}

func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return filepath.Join(dir, name)
}

// matchSegs appends to out the paths under dir that match the pattern segments segs.
func matchSegs(dir string, segs []string, out *[]string, seen map[string]bool) error {
	if len(segs) == 0 {
		if !seen[dir] {
			seen[dir] = true
			*out = append(*out, dir)
		}
		return nil
	}
	seg := segs[0]
	if !hasMeta(seg) {
		p := join(dir, seg)
		if _, err := os.Lstat(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return pathErr(p, err)
		}
		return matchSegs(p, segs[1:], out, seen)
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return pathErr(dir, err)
	}
	if seg == "**" {
		if len(segs) == 1 {
			// A trailing "**" matches every file below dir.
			for _, e := range entries {
				if hidden(e.Name()) {
					continue
				}
				if err := matchSegs(join(dir, e.Name()), segs, out, seen); err != nil {
					return err
				}
				if !e.IsDir() {
					if err := matchSegs(join(dir, e.Name()), nil, out, seen); err != nil {
						return err
					}
				}
			}
			return nil
		}
		if err := matchSegs(dir, segs[1:], out, seen); err != nil {
			return err
		}
		for _, e := range entries {
			if e.IsDir() && !hidden(e.Name()) {
				if err := matchSegs(join(dir, e.Name()), segs, out, seen); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, e := range entries {
		if hidden(e.Name()) && !hidden(seg) {
			continue
		}
		ok, err := filepath.Match(seg, e.Name())
		if err != nil {
			return fmt.Errorf("data: bad glob segment %q: %w", seg, err)
		}
		if ok {
			if err := matchSegs(join(dir, e.Name()), segs[1:], out, seen); err != nil {
				return err
			}
		}
	}
	return nil
}
