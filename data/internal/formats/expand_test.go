package formats

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{
		"a/x.csv", "a/b/y.csv", "a/b/c/w.json", "a/n.txt", "a/UP.CSV",
		"a/.hidden/z.csv", "a/_tmp.csv", "a/.dot.csv", "a/b/_meta/q.csv",
	} {
		writeString(t, dir, name, "1\n")
	}
	j := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, filepath.Join(dir, n))
		}
		return out
	}
	tests := []struct {
		name  string
		paths []string
		exts  []string
		want  []string
	}{
		{"file", j("a/n.txt"), []string{".csv"}, j("a/n.txt")},
		{"dir with exts", j("a"), []string{".csv"}, j("a/UP.CSV", "a/b/y.csv", "a/x.csv")},
		{"dir all", j("a"), nil, j("a/UP.CSV", "a/b/c/w.json", "a/b/y.csv", "a/n.txt", "a/x.csv")},
		{"two exts", j("a/b"), []string{".json", ".csv"}, j("a/b/c/w.json", "a/b/y.csv")},
		{"glob", j("a/*.csv"), nil, j("a/x.csv")},
		{"glob hidden explicit", j("a/_*.csv"), nil, j("a/_tmp.csv")},
		{"glob dir", j("a/?"), []string{".csv"}, j("a/b/y.csv")},
		{"doublestar", j("a/**/*.csv"), nil, j("a/b/y.csv", "a/x.csv")},
		{"doublestar middle", j("a/**/c/*"), nil, j("a/b/c/w.json")},
		{"trailing doublestar", j("a/b/**"), nil, j("a/b/c/w.json", "a/b/y.csv")},
		{"dedupe", append(j("a/x.csv", "a/x.csv"), j("a/*.csv")...), nil, j("a/x.csv")},
		{"unclean", []string{dir + "/a/./b//y.csv"}, nil, j("a/b/y.csv")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Expand(tc.paths, tc.exts)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Expand(%v, %v)\n got %v\nwant %v", tc.paths, tc.exts, got, tc.want)
			}
		})
	}

	errTests := []struct {
		name  string
		paths []string
		exts  []string
		want  string
	}{
		{"no match", j("a/*.parquet"), nil, `data: no files match "` + filepath.Join(dir, "a/*.parquet") + `"`},
		{"no match doublestar", j("a/**/*.parquet"), nil, `data: no files match`},
		{"missing", j("nope.csv"), nil, "data: " + filepath.Join(dir, "nope.csv") + ": no such file or directory"},
		{"empty dir", j("a/b/c"), []string{".csv"}, `no files with extension .csv in directory`},
		{"not a dir", j("a/x.csv/y"), nil, "data: " + filepath.Join(dir, "a/x.csv/y") + ": not a directory"},
		{"bad glob", j("a/[x.csv"), nil, "bad glob"},
		{"no paths", nil, nil, "no paths given"},
	}
	for _, tc := range errTests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Expand(tc.paths, tc.exts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Expand(%v) error = %v, want it to contain %q", tc.paths, err, tc.want)
			}
		})
	}
	if _, err := Expand(j("nope.csv"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v is not fs.ErrNotExist", err)
	}
}

func TestExpandPermissionDenied(t *testing.T) {
	dir := t.TempDir()
	writeString(t, dir, "locked/x.csv", "1\n")
	locked := filepath.Join(dir, "locked")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	_, err := Expand([]string{locked}, nil)
	if os.Getuid() == 0 {
		// root reads anything: the walk succeeds.
		if err != nil {
			t.Fatalf("as root: %v", err)
		}
		return
	}
	want := "data: " + locked + ": permission denied"
	if err == nil || err.Error() != want || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("err = %v, want %q wrapping fs.ErrPermission", err, want)
	}
}
