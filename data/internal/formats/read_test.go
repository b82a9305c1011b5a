package formats

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/parquet/file"
)

func TestProjection(t *testing.T) {
	mem := checkedMem(t)
	recs := fullRecords(t, fullSchema)
	dir := t.TempDir()
	for _, f := range []Format{Parquet, JSON, CSV} {
		t.Run(f.String(), func(t *testing.T) {
			schema := fullSchema
			if f == CSV {
				schema = arrow.NewSchema(fullSchema.Fields()[:4], nil)
			}
			rs := fullRecords(t, schema)
			p := filepath.Join(dir, "p"+f.Ext())
			if _, err := WriteFile(p, schema, rs, WriteOptions{Format: f}); err != nil {
				t.Fatal(err)
			}
			cols := []string{"b", "i"}
			if f != CSV {
				cols = []string{"st", "b", "i"}
			}
			got, err := readOne(t, f, p, ReadOptions{Columns: cols, IncludePath: true}, mem)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Release()
			var names []string
			for _, fl := range got.Schema().Fields() {
				names = append(names, fl.Name)
			}
			if want := strings.Join(append(cols, "path"), ","); strings.Join(names, ",") != want {
				t.Fatalf("columns %v, want %s", names, want)
			}
			assertColumnsEqual(t, got, rs, cols...)
			pc := got.Column(len(cols)).(*array.String)
			for k := 0; k < pc.Len(); k++ {
				if pc.Value(k) != p {
					t.Fatalf("path[%d] = %q", k, pc.Value(k))
				}
			}
			_, err = readOne(t, f, p, ReadOptions{Columns: []string{"i", "nope"}}, mem)
			if err == nil || !strings.Contains(err.Error(), `no column "nope"`) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "i, f, s, b") {
				t.Fatalf("missing column: %v", err)
			}
		})
	}
	_ = recs
}

func TestBlockSplitting(t *testing.T) {
	const rows = 1_000_000
	const target = 1 << 20
	p := filepath.Join(t.TempDir(), "big.parquet")
	writeParquetGroups(t, p, rows, 300_000) // row groups of 300k rows: batches cross the target
	for _, tc := range []struct {
		name string
		opt  ReadOptions
	}{
		{"default batches", ReadOptions{TargetBlockBytes: target}},
		{"small batches are concatenated", ReadOptions{TargetBlockBytes: target, BatchRows: 10_000}},
		{"with path", ReadOptions{TargetBlockBytes: target, BatchRows: 30_000, IncludePath: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := checkedMem(t)
			units, err := Plan(Parquet, []string{p}, 1)
			if err != nil {
				t.Fatal(err)
			}
			tc.opt.Format = Parquet
			var total, blocks int64
			var next int64
			var small int
			err = Read(context.Background(), units[0], tc.opt, mem, func(r arrow.Record) error {
				defer r.Release()
				size := RecordBytes(r)
				if size > target {
					t.Errorf("block of %d bytes > %d", size, target)
				}
				if size < target/2 {
					small++
				}
				if isSparse(r) {
					t.Errorf("block holds %d bytes of buffers for %d bytes of rows", heldBytes(r.Column(0).Data()), size)
				}
				// Rows arrive in order.
				iv := r.Column(0).(*array.Int64)
				if iv.Value(0) != next || iv.Value(iv.Len()-1) != next+int64(iv.Len())-1 {
					t.Errorf("rows out of order at %d", next)
				}
				next += int64(iv.Len())
				total += r.NumRows()
				blocks++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if total != rows {
				t.Fatalf("rows %d, want %d", total, rows)
			}
			rowBytes := int64(8 + 8) // two values (and two validity bits)
			if tc.opt.IncludePath {
				rowBytes += int64(4 + len(p) + 1)
			}
			if least := rows * rowBytes / target; blocks < least || blocks > least+least/10+2 {
				t.Fatalf("%d blocks, want about %d", blocks, least)
			}
			if small > 4 {
				t.Fatalf("%d blocks under half the target: blocks should be filled", small)
			}
		})
	}
}

func TestOneRowLargerThanTarget(t *testing.T) {
	mem := checkedMem(t)
	dir := t.TempDir()
	var sb strings.Builder
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&sb, "{\"s\": %q}\n", strings.Repeat("x", 1000*(i%2)+10))
	}
	p := writeString(t, dir, "wide.json", sb.String())
	blocks, err := readUnits(t, JSON, []string{p}, ReadOptions{TargetBlockBytes: 500}, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseAll(blocks)
	var rows int64
	for _, b := range blocks {
		rows += b.NumRows()
		if RecordBytes(b) > 500 && b.NumRows() != 1 {
			t.Fatalf("block of %d rows, %d bytes", b.NumRows(), RecordBytes(b))
		}
	}
	if rows != 10 {
		t.Fatalf("rows %d", rows)
	}
}

func TestCSVErrors(t *testing.T) {
	mem := checkedMem(t)
	dir := t.TempDir()
	var late strings.Builder
	late.WriteString("a,b\n")
	for i := 0; i < 1500; i++ {
		fmt.Fprintf(&late, "%d,x\n", i)
	}
	late.WriteString("oops,x\n")
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	tests := []struct {
		name, content string
		schema        *arrow.Schema
		want          []string
	}{
		{"bad value with schema", "a,b\n1,x\n2,y\nthree,z\n", schema, []string{"line 4", `column "a"`, `"three"`, "int64"}},
		{"bad value after inference", late.String(), nil, []string{"line 1502", `column "a"`, `"oops"`}},
		{"too many fields", "a,b\n1,x\n2,y,z\n", nil, []string{"line 3", "wrong number of fields"}},
		{"too many fields with schema", "a,b\n1,x\n2,y,z\n", schema, []string{"line 3", "wrong number of fields"}},
		{"bad quote", "a,b\n1,\"x\n", nil, []string{"line 2"}},
		{"header mismatch", "a\n1\n", schema, []string{"header"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeString(t, dir, strings.ReplaceAll(tc.name, " ", "_")+".csv", tc.content)
			_, err := readOne(t, CSV, p, ReadOptions{Schema: tc.schema, BatchRows: 2}, mem)
			if err == nil {
				t.Fatal("no error")
			}
			want := append([]string{"data: reading " + p + ": "}, tc.want...)
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestCSVInference(t *testing.T) {
	mem := checkedMem(t)
	dir := t.TempDir()
	p := writeString(t, dir, "t.csv", "i,f,b,s,n\n1,1,true,a,\n2,2.5,FALSE,3,\n,,,,\n")
	got, err := readOne(t, CSV, p, ReadOptions{}, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	want := "i:int64 f:float64 b:bool s:utf8 n:null"
	var have []string
	for _, f := range got.Schema().Fields() {
		have = append(have, f.Name+":"+f.Type.String())
	}
	if strings.Join(have, " ") != want {
		t.Fatalf("schema %v, want %s", have, want)
	}
	if got.NumRows() != 3 || got.Column(0).NullN() != 1 || got.Column(1).(*array.Float64).Value(1) != 2.5 {
		t.Fatalf("values %v", got)
	}
}

func TestJSONInference(t *testing.T) {
	mem := checkedMem(t)
	dir := t.TempDir()
	tests := []struct {
		name, lines string
		want        string // schema fields, or "error: ..." substrings separated by |
	}{
		{"scalars", `{"i":1,"f":1.5,"s":"x","b":true}`, "i:int64 f:float64 s:utf8 b:bool"},
		{"int then float", "{\"x\":1}\n{\"x\":2.5}\n", "x:float64"},
		{"exponent is float", `{"x":1e3}`, "x:float64"},
		{"null only", "{\"x\":null}\n{\"x\":null}", "x:null"},
		{"null then int", "{\"x\":null}\n{\"x\":3}", "x:int64"},
		{"missing key", "{\"a\":1}\n{\"b\":\"s\"}\n\n{\"a\":2,\"c\":true}", "a:int64 b:utf8 c:bool"},
		{"list", `{"l":[1,2,3],"e":[],"fl":[1,2.5]}`, "l:list<item: int64, nullable> e:list<item: null, nullable> fl:list<item: float64, nullable>"},
		{"list merge", "{\"l\":[]}\n{\"l\":[\"a\"]}", "l:list<item: utf8, nullable>"},
		{"struct", "{\"o\":{\"a\":1,\"b\":{\"c\":\"x\"}}}\n{\"o\":{\"d\":false}}", "o:struct<a: int64, b: struct<c: utf8>, d: bool>"},
		{"list of structs", `{"l":[{"a":1},{"b":2.5}]}`, "l:list<item: struct<a: int64, b: float64>, nullable>"},
		{"mixed", "{\"x\":1}\n{\"x\":\"one\"}", `error: line 2|key "x"|int64 and string|schema`},
		{"mixed nested", "{\"o\":{\"y\":true}}\n{\"o\":{\"y\":[1]}}", `error: line 2|key "o.y"|bool and list|schema`},
		{"mixed list elements", `{"l":[1,"a"]}`, `error: line 1|list elements of "l"|int64 and string`},
		{"not an object", "[1,2]", "error: line 1|expected a JSON object"},
		{"invalid", "{\"x\":1}\n{\"x\":", "error: line 2|invalid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeString(t, dir, strings.ReplaceAll(tc.name, " ", "_")+".json", tc.lines)
			got, err := readOne(t, JSON, p, ReadOptions{}, mem)
			if w, ok := strings.CutPrefix(tc.want, "error: "); ok {
				if err == nil {
					got.Release()
					t.Fatal("no error")
				}
				for _, part := range append(strings.Split(w, "|"), p) {
					if !strings.Contains(err.Error(), part) {
						t.Fatalf("error %q does not contain %q", err, part)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer got.Release()
			var have []string
			for _, f := range got.Schema().Fields() {
				if !f.Nullable {
					t.Fatalf("field %s not nullable", f.Name)
				}
				have = append(have, f.Name+":"+f.Type.String())
			}
			if strings.Join(have, " ") != tc.want {
				t.Fatalf("schema\n got %s\nwant %s", strings.Join(have, " "), tc.want)
			}
		})
	}
}

func TestJSONBadLineAfterInference(t *testing.T) {
	mem := checkedMem(t)
	var sb strings.Builder
	for i := 0; i < 1200; i++ {
		fmt.Fprintf(&sb, "{\"x\": %d}\n", i)
	}
	sb.WriteString("{\"x\": \"str\"}\n")
	p := writeString(t, t.TempDir(), "late.json", sb.String())
	_, err := readOne(t, JSON, p, ReadOptions{BatchRows: 100}, mem)
	if err == nil || !strings.Contains(err.Error(), p+": line 1201:") || !strings.Contains(err.Error(), "schema") {
		t.Fatalf("err = %v", err)
	}
}

func TestCorruptParquet(t *testing.T) {
	mem := checkedMem(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.parquet")
	writeParquetGroups(t, good, 10_000, 1000)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	// Planned while intact, then truncated (a file cut short under a running read).
	units, err := Plan(Parquet, []string{good}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, u := range units[:1] {
		err := Read(context.Background(), u, ReadOptions{Format: Parquet}, mem, func(r arrow.Record) error { r.Release(); return nil })
		if err == nil || !strings.Contains(err.Error(), "data: reading "+good) {
			t.Fatalf("truncated: err = %v", err)
		}
	}
	// Garbage in the data pages, footer intact.
	bad := append([]byte(nil), data...)
	for i := 4; i < len(bad)/2; i += 7 {
		bad[i] ^= 0x5a
	}
	garbled := writeString(t, dir, "garbled.parquet", string(bad))
	err = Read(context.Background(), Unit{Path: garbled, Rows: -1}, ReadOptions{Format: Parquet}, mem, func(r arrow.Record) error { r.Release(); return nil })
	if err == nil || !strings.Contains(err.Error(), "data: reading "+garbled+": row group ") {
		t.Fatalf("garbled: err = %v", err)
	}
	notpq := writeString(t, dir, "text.parquet", "hello")
	err = Read(context.Background(), Unit{Path: notpq, Rows: -1}, ReadOptions{Format: Parquet}, mem, func(r arrow.Record) error { r.Release(); return nil })
	if err == nil || !strings.Contains(err.Error(), notpq) || !strings.Contains(err.Error(), "not a valid Parquet file") {
		t.Fatalf("not parquet: err = %v", err)
	}
}

func TestUnreadableFile(t *testing.T) {
	mem := checkedMem(t)
	dir := t.TempDir()
	p := writeString(t, dir, "secret.csv", "a\n1\n")
	want := "permission denied"
	if os.Getuid() == 0 {
		// root reads a chmod 000 file: use a directory to get a read error instead.
		p = filepath.Join(dir, "adir.csv")
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		want = "is a directory"
	} else if err := os.Chmod(p, 0); err != nil {
		t.Fatal(err)
	}
	for _, f := range []Format{CSV, JSON, Parquet, Binary} {
		err := Read(context.Background(), Unit{Path: p, Rows: -1}, ReadOptions{Format: f}, mem, func(r arrow.Record) error { r.Release(); return nil })
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: err = %v, want the path and %q", f, err, want)
		}
	}
}

func TestCancel(t *testing.T) {
	mem := checkedMem(t)
	p := filepath.Join(t.TempDir(), "c.parquet")
	writeParquetGroups(t, p, 100_000, 10_000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	err := Read(ctx, Unit{Path: p, Rows: -1}, ReadOptions{Format: Parquet, BatchRows: 1000, TargetBlockBytes: 1000 * 18}, mem, func(r arrow.Record) error {
		r.Release()
		n++
		if n == 2 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || n > 3 {
		t.Fatalf("err = %v after %d blocks", err, n)
	}
	// An emit error stops the read and comes back as is.
	stop := errors.New("stop")
	err = Read(context.Background(), Unit{Path: p, Rows: -1}, ReadOptions{Format: Parquet, BatchRows: 1000, TargetBlockBytes: 1000 * 18}, mem, func(r arrow.Record) error {
		r.Release()
		return stop
	})
	if err != stop {
		t.Fatalf("emit error: %v", err)
	}
}

// flakyFile fails reads with a transient error while *fails > 0.
type flakyFile struct {
	fileHandle
	fails *atomic.Int32
}

func (f flakyFile) Read(b []byte) (int, error) {
	if f.fails.Add(-1) >= 0 {
		return 0, syscall.EAGAIN
	}
	return f.fileHandle.Read(b)
}

func (f flakyFile) ReadAt(b []byte, off int64) (int, error) {
	if f.fails.Add(-1) >= 0 {
		return 0, &os.PathError{Op: "read", Path: "x", Err: syscall.EINTR}
	}
	return f.fileHandle.ReadAt(b, off)
}

func TestTransientRetry(t *testing.T) {
	mem := checkedMem(t)
	dir := t.TempDir()
	pq := filepath.Join(dir, "r.parquet")
	writeParquetGroups(t, pq, 1000, 100)
	csvPath := writeString(t, dir, "r.csv", "a\n1\n2\n")
	fails := &atomic.Int32{}
	old, oldBackoff := openFile, retryBackoff
	openFile = func(path string) (fileHandle, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		return flakyFile{f, fails}, nil
	}
	retryBackoff = 0
	defer func() { openFile, retryBackoff = old, oldBackoff }()

	for _, tc := range []struct {
		f    Format
		path string
		rows int64
	}{{Parquet, pq, 1000}, {CSV, csvPath, 2}, {Binary, csvPath, 1}} {
		fails.Store(3) // three failures, then success: retried
		var rows int64
		err := Read(context.Background(), Unit{Path: tc.path, Rows: -1}, ReadOptions{Format: tc.f}, mem, func(r arrow.Record) error {
			rows += r.NumRows()
			r.Release()
			return nil
		})
		if err != nil || rows != tc.rows {
			t.Fatalf("%s: err %v, rows %d", tc.f, err, rows)
		}
		fails.Store(100) // always failing: gives up with a transient error
		err = Read(context.Background(), Unit{Path: tc.path, Rows: -1}, ReadOptions{Format: tc.f}, mem, func(r arrow.Record) error { r.Release(); return nil })
		if err == nil || !IsTransient(err) || !strings.Contains(err.Error(), tc.path) {
			t.Fatalf("%s: always failing: err = %v, transient %v", tc.f, err, IsTransient(err))
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string { return "i/o timeout" }
func (timeoutErr) Timeout() bool { return true }

func TestIsTransient(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{syscall.EINTR, true},
		{syscall.EAGAIN, true},
		{fmt.Errorf("data: reading x: %w", &os.PathError{Op: "read", Path: "x", Err: syscall.EAGAIN}), true},
		{os.ErrDeadlineExceeded, true},
		{timeoutErr{}, true},
		{io.ErrUnexpectedEOF, false},
		{fmt.Errorf("x: %w", io.ErrUnexpectedEOF), false},
		{io.EOF, false},
		{context.DeadlineExceeded, false},
		{context.Canceled, false},
		{syscall.EACCES, false},
		{errors.New("boom"), false},
	} {
		if got := IsTransient(tc.err); got != tc.want {
			t.Errorf("IsTransient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestFormatNames(t *testing.T) {
	for _, tc := range []struct {
		f         Format
		name, ext string
	}{{Parquet, "parquet", ".parquet"}, {CSV, "csv", ".csv"}, {JSON, "json", ".json"}, {Binary, "binary", ""}} {
		if tc.f.String() != tc.name || tc.f.Ext() != tc.ext {
			t.Errorf("%d: %q %q", tc.f, tc.f.String(), tc.f.Ext())
		}
	}
	if got := FileName("part", 12, Parquet); got != "part_000012.parquet" {
		t.Errorf("FileName = %q", got)
	}
	if err := Read(context.Background(), Unit{Path: "x"}, ReadOptions{}, nil, func(arrow.Record) error { return nil }); err == nil || !strings.Contains(err.Error(), "unknown format") {
		t.Errorf("zero format: %v", err)
	}
}

// TestParquetUnitOneBatch: with the default batch size, a Parquet unit of several row groups
// that fits one block is decoded as one batch (one block, emitted without concatenation),
// and a larger unit in batches of about the target; explicit BatchRows and row groups that
// are not consecutive keep the row-group-at-a-time path. Rows always arrive complete and in
// order.
func TestParquetUnitOneBatch(t *testing.T) {
	p := filepath.Join(t.TempDir(), "groups.parquet")
	writeParquetGroups(t, p, 200_000, 10_000) // 20 row groups, 16 bytes per row
	rdr, err := file.OpenParquetFile(p, false)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]int, 20)
	for i := range all {
		all[i] = i
	}
	if got := unitBatchRows(rdr.MetaData(), all, nil, 128<<20); got != 200_000 {
		t.Errorf("batch of a unit that fits a block: %d rows, want 200000", got)
	}
	if got := unitBatchRows(rdr.MetaData(), all, nil, 1<<20); got < DefaultBatchRows || got > 1<<20/16 {
		t.Errorf("batch for 1 MiB blocks: %d rows, want about %d", got, 1<<20/16)
	}
	if got := unitBatchRows(rdr.MetaData(), all[:3], []int{0}, 128<<20); got != 30_000 {
		t.Errorf("batch of 3 groups, one column: %d rows", got)
	}
	rdr.Close()

	for _, tc := range []struct {
		name   string
		unit   Unit
		opt    ReadOptions
		blocks int
	}{
		{"whole file, default batches", Unit{Path: p, Rows: -1}, ReadOptions{}, 1},
		{"some row groups", Unit{Path: p, RowGroups: []int{3, 4, 5}, Rows: 30_000}, ReadOptions{}, 1},
		{"not consecutive", Unit{Path: p, RowGroups: []int{3, 5, 4}, Rows: 30_000}, ReadOptions{}, 1},
		{"small blocks", Unit{Path: p, Rows: -1}, ReadOptions{TargetBlockBytes: 1 << 20}, -1},
		{"explicit batches", Unit{Path: p, Rows: -1}, ReadOptions{BatchRows: 7000}, 1},
		{"projection", Unit{Path: p, Rows: -1}, ReadOptions{Columns: []string{"f"}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := checkedMem(t)
			tc.opt.Format = Parquet
			want := []int64{}
			groups := tc.unit.RowGroups
			if groups == nil {
				groups = all
			}
			for _, g := range groups {
				for i := int64(g) * 10_000; i < int64(g+1)*10_000; i++ {
					want = append(want, i)
				}
			}
			var got []int64
			blocks := 0
			err := Read(context.Background(), tc.unit, tc.opt, mem, func(r arrow.Record) error {
				defer r.Release()
				if r.NumRows() == 0 {
					return nil
				}
				blocks++
				if tc.opt.TargetBlockBytes > 0 && RecordBytes(r) > tc.opt.TargetBlockBytes {
					t.Errorf("block of %d bytes > target %d", RecordBytes(r), tc.opt.TargetBlockBytes)
				}
				if isSparse(r) {
					t.Errorf("sparse block")
				}
				f := r.Column(r.Schema().FieldIndices("f")[0]).(*array.Float64)
				for i := 0; i < f.Len(); i++ {
					got = append(got, int64(f.Value(i)*2))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if tc.blocks > 0 && blocks != tc.blocks {
				t.Errorf("%d blocks, want %d", blocks, tc.blocks)
			}
			if tc.blocks < 0 && blocks < 2 {
				t.Errorf("%d blocks, want several", blocks)
			}
			if !slices.Equal(got, want) {
				t.Errorf("rows: got %d (first %v), want %d", len(got), got[:min(3, len(got))], len(want))
			}
		})
	}
}

// TestNullColumns: a CSV column empty in every row and a JSON key always null are of type
// null; a value after the rows inference looked at is an error that asks for a schema.
func TestNullColumns(t *testing.T) {
	mem := checkedMem(t)
	dir := t.TempDir()
	p := writeString(t, dir, "n.csv", "id,opt\n1,\n2,NULL\n3,\n")
	got, err := readOne(t, CSV, p, ReadOptions{}, mem)
	if err != nil {
		t.Fatal(err)
	}
	if got.NumRows() != 3 || got.Column(1).DataType().ID() != arrow.NULL || got.Column(1).NullN() != 3 {
		t.Fatalf("csv: %v", got)
	}
	got.Release()
	j := writeString(t, dir, "n.json", "{\"id\":1,\"opt\":null,\"l\":[]}\n{\"id\":2}\n")
	got, err = readOne(t, JSON, j, ReadOptions{}, mem)
	if err != nil {
		t.Fatal(err)
	}
	if s := got.Schema().String(); got.NumRows() != 2 || got.Column(1).DataType().ID() != arrow.NULL || got.Column(2).DataType().String() != "list<item: null, nullable>" {
		t.Fatalf("json: %s %v", s, got)
	}
	got.Release()
	var b strings.Builder
	b.WriteString("id,opt\n")
	for i := 0; i < csvInferRows+5; i++ {
		fmt.Fprintf(&b, "%d,\n", i)
	}
	b.WriteString("9999,2.5\n")
	late := writeString(t, dir, "late.csv", b.String())
	_, err = readOne(t, CSV, late, ReadOptions{}, mem)
	if err == nil || !strings.Contains(err.Error(), `column "opt": value "2.5" in a column read as null`) || !strings.Contains(err.Error(), "schema") {
		t.Fatalf("a late value in a null CSV column: %v", err)
	}
}
