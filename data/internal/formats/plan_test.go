package formats

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestPlanParquetRowGroups(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "ten.parquet")
	writeParquetGroups(t, p, 1000, 100) // 10 row groups of 100 rows
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ parallelism, want int }{
		{0, 1}, {1, 1}, {3, 3}, {10, 10}, {100, 10},
	} {
		units, err := Plan(Parquet, []string{p}, tc.parallelism)
		if err != nil {
			t.Fatal(err)
		}
		if len(units) != tc.want {
			t.Fatalf("parallelism %d: %d units, want %d: %+v", tc.parallelism, len(units), tc.want, units)
		}
		for _, u := range units {
			// (i int64, f float64): 16 bytes a row in Arrow, which the estimate must not
			// undercut (the uncompressed pages add a little).
			if u.ArrowBytes < 16*u.Rows || u.ArrowBytes > 24*u.Rows {
				t.Fatalf("parallelism %d: unit of %d rows estimated at %d Arrow bytes", tc.parallelism, u.Rows, u.ArrowBytes)
			}
		}
		var rows int64
		next := 0
		for _, u := range units {
			if u.Path != p {
				t.Fatalf("unit path %q", u.Path)
			}
			rows += u.Rows
			if tc.want == 1 {
				if u.RowGroups != nil || u.Bytes != fi.Size() || u.Rows != 1000 {
					t.Fatalf("whole-file unit %+v, want nil row groups, %d bytes, 1000 rows", u, fi.Size())
				}
				continue
			}
			if len(u.RowGroups) == 0 || u.Bytes <= 0 {
				t.Fatalf("empty unit %+v", u)
			}
			for _, rg := range u.RowGroups {
				if rg != next {
					t.Fatalf("parallelism %d: row groups not consecutive/complete: %+v", tc.parallelism, units)
				}
				next++
			}
			if u.Rows != int64(100*len(u.RowGroups)) {
				t.Fatalf("unit %+v: rows %d", u, u.Rows)
			}
		}
		if rows != 1000 || (tc.want > 1 && next != 10) {
			t.Fatalf("parallelism %d: rows %d, row groups %d", tc.parallelism, rows, next)
		}
		if tc.parallelism == 3 {
			// 10 equal groups into 3: sizes 3/4/3 or similar, never 1/1/8.
			for _, u := range units {
				if len(u.RowGroups) < 3 || len(u.RowGroups) > 4 {
					t.Fatalf("unbalanced split %+v", units)
				}
			}
		}
	}
}

func TestPlanManyFiles(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.parquet")
	small := filepath.Join(dir, "small.parquet")
	writeParquetGroups(t, big, 8000, 1000) // 8 row groups
	writeParquetGroups(t, small, 100, 100) // 1 row group
	units, err := Plan(Parquet, []string{big, small}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(units) != 2 {
		t.Fatalf("never fewer units than files: got %d", len(units))
	}
	units, err = Plan(Parquet, []string{big, small}, 5)
	if err != nil {
		t.Fatal(err)
	}
	perFile := map[string]int{}
	for _, u := range units {
		perFile[filepath.Base(u.Path)]++
	}
	if perFile["big.parquet"] != 4 || perFile["small.parquet"] != 1 {
		t.Fatalf("extra units should go to the big file: %v", perFile)
	}
}

func TestPlanOtherFormats(t *testing.T) {
	dir := t.TempDir()
	a := writeString(t, dir, "a.csv", "x\n1\n")
	b := writeString(t, dir, "b.csv", "x\n1\n2\n")
	units, err := Plan(CSV, []string{a, b}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(units) != 2 || !reflect.DeepEqual(units[0], Unit{Path: a, Rows: -1, Bytes: 4}) || units[1].Bytes != 6 {
		t.Fatalf("units %+v", units)
	}
	if _, err := Plan(CSV, []string{filepath.Join(dir, "nope.csv")}, 1); err == nil || !strings.Contains(err.Error(), "nope.csv") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestPlanNotParquet(t *testing.T) {
	dir := t.TempDir()
	bad := writeString(t, dir, "bad.parquet", "this is not parquet at all, just text")
	_, err := Plan(Parquet, []string{bad}, 4)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "not a valid Parquet file") {
		t.Fatalf("err = %v", err)
	}
	good := filepath.Join(dir, "good.parquet")
	writeParquetGroups(t, good, 1000, 100)
	data, _ := os.ReadFile(good)
	trunc := writeString(t, dir, "trunc.parquet", string(data[:len(data)/2]))
	_, err = Plan(Parquet, []string{good, trunc}, 4)
	if err == nil || !strings.Contains(err.Error(), trunc) {
		t.Fatalf("truncated: err = %v", err)
	}
}
