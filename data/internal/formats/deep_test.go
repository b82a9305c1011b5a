package formats

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/array"
)

// TestJSONDeepNesting: a value nested deeper than encoding/json allows, in a key the
// schema does not have (skipped), is an error; skipping it used to recurse once per
// level, and a line of some millions of '[' exhausted the goroutine's 1 GB stack, a fatal
// error that no recover catches.
func TestJSONDeepNesting(t *testing.T) {
	mem := checkedMem(t)
	rb := array.NewRecordBuilder(mem, fullSchema)
	defer rb.Release()
	line := append([]byte(`{"deep": `), bytes.Repeat([]byte("["), 20_000_000)...)
	err := newLineDecoder(rb).decode(line)
	if err == nil || !strings.Contains(err.Error(), "nested more than 10000 levels") {
		t.Fatalf("20 million levels: %v", err)
	}
	ok := append(append([]byte(`{"i": 1, "deep": `), bytes.Repeat([]byte("["), 1000)...), append(bytes.Repeat([]byte("]"), 1000), '}')...)
	if err := newLineDecoder(rb).decode(ok); err != nil {
		t.Fatalf("1000 levels: %v", err)
	}
	rec := rb.NewRecord()
	defer rec.Release()
}
