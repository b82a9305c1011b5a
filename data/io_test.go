package data

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
)

// named is 100 rows of id, name, score in 4 blocks.
func named() *Dataset { return Range(100, Parallelism(4)).Map(withName) }

func sortByID(rows []Row) []Row {
	sort.SliceStable(rows, func(i, j int) bool { return rows[i]["id"].(int64) < rows[j]["id"].(int64) })
	return rows
}

func TestWriteReadRoundTrip(t *testing.T) {
	ctx := timeout(t)
	want, err := named().TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		write func(dir string) ([]string, error)
		read  func(dir string) *Dataset
		ext   string
	}{
		{"parquet", func(dir string) ([]string, error) { return named().WriteParquet(ctx, dir) }, func(dir string) *Dataset { return ReadParquet([]string{dir}) }, ".parquet"},
		{"csv", func(dir string) ([]string, error) { return named().WriteCSV(ctx, dir) }, func(dir string) *Dataset { return ReadCSV([]string{dir}) }, ".csv"},
		{"json", func(dir string) ([]string, error) { return named().WriteJSON(ctx, dir) }, func(dir string) *Dataset { return ReadJSON([]string{dir}) }, ".json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			files, err := c.write(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != 4 {
				t.Fatalf("%d files written, want one per block (4): %v", len(files), files)
			}
			for _, f := range files {
				if !strings.HasSuffix(f, c.ext) {
					t.Errorf("file name %s", f)
				}
				if _, err := os.Stat(f); err != nil {
					t.Error(err)
				}
			}
			got, err := c.read(dir).TakeAll(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(sortByID(got), want) {
				t.Fatalf("read back %d rows, first %v; want first %v", len(got), got[:min(2, len(got))], want[:2])
			}
			// Writing twice into the same directory makes new, distinct files.
			again, err := c.write(dir)
			if err != nil {
				t.Fatal(err)
			}
			if again[0] == files[0] {
				t.Fatalf("a second write reused the names: %s", again[0])
			}
		})
	}
}

func TestReadOptions(t *testing.T) {
	ctx := timeout(t)
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "a.csv")
	if err := os.WriteFile(csvPath, []byte("x;y\n1;a\n2;b\n3;c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadCSV([]string{csvPath}, Delimiter(';'), IncludePath()).TakeAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[1]["x"] != int64(2) || rows[1]["y"] != "b" || rows[0]["path"] != csvPath {
		t.Fatalf("CSV rows: %v", rows)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Float64}, {Name: "y", Type: arrow.BinaryTypes.String}}, nil)
	rows, err = ReadCSV([]string{filepath.Join(dir, "*.csv")}, Delimiter(';'), Schema(schema)).TakeAll(ctx)
	if err != nil || len(rows) != 3 || rows[2]["x"] != 3.0 {
		t.Fatalf("CSV with a schema, by glob: %v %v", rows, err)
	}

	jsonPath := filepath.Join(dir, "b.json")
	if err := os.WriteFile(jsonPath, []byte(`{"a": 1, "b": "x"}`+"\n"+`{"a": 2, "b": "y"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err = ReadJSON([]string{jsonPath}, Columns("b")).TakeAll(ctx)
	if err != nil || !reflect.DeepEqual(rows, []Row{{"b": "x"}, {"b": "y"}}) {
		t.Fatalf("JSON with Columns: %v %v", rows, err)
	}

	binDir := filepath.Join(dir, "bin")
	os.Mkdir(binDir, 0o755)
	os.WriteFile(filepath.Join(binDir, "one"), []byte("hello"), 0o644)
	os.WriteFile(filepath.Join(binDir, "two"), []byte{0, 1, 2}, 0o644)
	rows, err = ReadBinaryFiles([]string{binDir}).TakeAll(ctx)
	if err != nil || len(rows) != 2 || string(rows[0]["bytes"].([]byte)) != "hello" || !reflect.DeepEqual(rows[1]["bytes"], []byte{0, 1, 2}) {
		t.Fatalf("binary files: %v %v", rows, err)
	}

	// Parquet: many read tasks (row groups and files), column projection, Count.
	pq := filepath.Join(dir, "pq")
	if _, err := Range(3000, Parallelism(3)).Map(withName).WriteParquet(ctx, pq); err != nil {
		t.Fatal(err)
	}
	d := ReadParquet([]string{pq}, Columns("id", "score"))
	n, err := d.Count(ctx)
	if err != nil || n != 3000 {
		t.Fatalf("Parquet Count: %d %v", n, err)
	}
	s, err := d.Schema(ctx)
	if err != nil || strings.Join(columnNames(s), ",") != "id,score" {
		t.Fatalf("Parquet projection: %v %v", s, err)
	}
	if ex := d.Filter(isEven).Explain(); !strings.Contains(ex, "ReadParquet->Filter(test.even)") {
		t.Errorf("plan: %s", ex)
	}
}

func TestReadErrors(t *testing.T) {
	ctx := timeout(t)
	dir := t.TempDir()
	_, err := ReadCSV([]string{filepath.Join(dir, "missing", "*.csv")}).TakeAll(ctx)
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("no files: %v", err)
	}
	bad := filepath.Join(dir, "bad.parquet")
	os.WriteFile(bad, []byte("this is not parquet"), 0o644)
	_, err = ReadParquet([]string{bad}).TakeAll(ctx)
	if err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("a file that is not Parquet: %v", err)
	}
	badJSON := filepath.Join(dir, "bad.json")
	os.WriteFile(badJSON, []byte(`{"a": 1}`+"\n"+`{"a": "x"}`+"\n"), 0o644)
	_, err = ReadJSON([]string{badJSON}).TakeAll(ctx)
	if err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Fatalf("mixed JSON types: %v", err)
	}
	t.Logf("errors:\n%v", err)
}
