package formats

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/ray-go/ray/internal/base/fuzzing"
)

func jsonLineSeeds() [][]any {
	lines := []string{
		`{"i": 1, "f": 1.5, "s": "plain", "b": true, "l": [1, 2], "st": {"a": 1, "b": "x"}}`,
		`{"i":null,"f":null,"s":null,"b":null,"l":null,"st":null}`,
		`{}`,
		`  { "s" : "esc \" \\ \/ \b \f \n \r \t \u00e9 \ud83d\ude00 end" , "i" : -9223372036854775808 }  `,
		`{"f": -1.25e-3, "l": [], "st": {}, "unknown": {"deep": [1, {"x": "y\"}"}], "z": null}, "b": false}`,
		`{"i": 9223372036854775808}`, // past int64
		`{"i": 1, "i": 2}`,
		`{"s": "\ud800"}`, // a lone surrogate
		`{"s": "\ud800\u0041"}`,
		`{"s": "\ud83d\ude00 \udc00\ud800"}`,
		"{\"s\": \"tab\there\"}",
		"{\"s\": \"bad \xf3 utf-8 \xed\xa0\x80\"}",
		`{"s": "open`,
		`{"l": [1, 2,]}`,
		`{"f": 1e400}`,
		`{"i": 01}`,
		`[1, 2]`,
		``,
	}
	var seeds [][]any
	for _, l := range lines {
		seeds = append(seeds, []any{[]byte(l)})
	}
	return seeds
}

func TestFuzzJSONLineCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzJSONLine", jsonLineSeeds()) }

// FuzzJSONLine feeds arbitrary lines to the JSON reader's own decoder (it parses the
// bytes itself, for speed), with a schema of every type it handles. It must fail or
// append one row; never panic or leak Arrow memory; allocate in proportion to the line;
// accept only what encoding/json accepts as JSON; and the row it decoded, written by the
// JSON writer, must decode to the same row.
func FuzzJSONLine(f *testing.F) {
	f.Fuzz(func(t *testing.T, line []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		decodeOne := func(line []byte) (arrow.Record, error) {
			rb := array.NewRecordBuilder(mem, fullSchema)
			defer rb.Release()
			if err := newLineDecoder(rb).decode(line); err != nil {
				return nil, err
			}
			return rb.NewRecord(), nil
		}
		var (
			rec arrow.Record
			err error
		)
		fuzzing.CheckAlloc(t, 64*uint64(len(line))+1<<20, "the JSON line decoder", func() { rec, err = decodeOne(line) })
		if err != nil {
			return
		}
		defer rec.Release()
		if !json.Valid(line) {
			t.Fatalf("accepted a line that is not JSON: %q", line)
		}
		if rec.NumRows() != 1 {
			t.Fatalf("%d rows from one line", rec.NumRows())
		}
		// Strings decode as encoding/json decodes them (escapes, surrogate pairs, invalid
		// UTF-8 replaced).
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(line, &fields); err == nil {
			var want *string
			if raw, ok := fields["s"]; ok {
				_ = json.Unmarshal(raw, &want)
			}
			col := rec.Column(2).(*array.String)
			if got := col.Value(0); (want == nil) != col.IsNull(0) || want != nil && got != *want {
				t.Fatalf("%q: string %q, encoding/json says %v", line, got, want)
			}
		}
		var out bytes.Buffer
		if err := writeJSON(&out, fullSchema, []arrow.Record{rec}); err != nil {
			t.Fatalf("writing the row: %v", err)
		}
		again, err := decodeOne(bytes.TrimRight(out.Bytes(), "\n"))
		if err != nil {
			t.Fatalf("the row written as %q does not decode: %v", out.Bytes(), err)
		}
		defer again.Release()
		if !array.RecordEqual(rec, again) {
			t.Fatalf("%q decodes, written as %q, to another row", line, out.Bytes())
		}
	})
}

func readFileSeeds() [][]any {
	return [][]any{
		{[]byte("a,b,c\n1,2.5,x\n3,,y\n"), true},
		{[]byte("a,b\n1\n"), true},   // a short row
		{[]byte("a,\"b\nc\n"), true}, // an open quote
		{[]byte("\xff\xfe,\x00\n1,2\n"), true},
		{[]byte(""), true},
		{[]byte(`{"i": 1, "s": "x", "l": [1, 2], "st": {"a": 1}}` + "\n" + `{"i": 2}` + "\n"), false},
		{[]byte(`{"i": 1}` + "\n" + `{"i": "x"}` + "\n"), false}, // mixed types
		{[]byte(`[1]` + "\n"), false},
		{[]byte("\n\n"), false},
	}
}

func TestFuzzReadFileCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzReadFile", readFileSeeds()) }

// FuzzReadFile reads arbitrary files as CSV or JSON lines, schema inferred, as Dataset
// reads do. It must fail or emit blocks of one schema; never panic (Arrow's CSV reader
// panics on some input; the reader turns that into an error); leak no Arrow memory; and
// allocate in proportion to the file.
func FuzzReadFile(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, csv bool) {
		path := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		format := JSON
		if csv {
			format = CSV
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		var blocks []arrow.Record
		defer func() { releaseAll(blocks) }()
		var err error
		fuzzing.CheckAllocOnce(t, 256*uint64(len(data))+8<<20, "reading a file", func() {
			var units []Unit
			if units, err = Plan(format, []string{path}, 1); err != nil {
				return
			}
			for _, u := range units {
				if err = Read(context.Background(), u, ReadOptions{Format: format, BatchRows: 256}, mem, func(r arrow.Record) error {
					blocks = append(blocks, r)
					return nil
				}); err != nil {
					return
				}
			}
		})
		if err != nil || len(blocks) == 0 {
			return
		}
		for _, b := range blocks[1:] {
			if !b.Schema().Equal(blocks[0].Schema()) {
				t.Fatalf("blocks of two schemas: %s and %s", blocks[0].Schema(), b.Schema())
			}
		}
	})
}
