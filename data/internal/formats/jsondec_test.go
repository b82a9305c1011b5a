package formats

import (
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// TestFastJSONMatchesArrow decodes the same lines with the fast decoder and with Arrow's
// RecordBuilder.UnmarshalJSON and compares the records.
func TestFastJSONMatchesArrow(t *testing.T) {
	mem := checkedMem(t)
	lines := []string{
		`{"i": 1, "f": 1.5, "s": "plain", "b": true, "l": [1, 2], "st": {"a": 1, "b": "x"}}`,
		`{"i":null,"f":null,"s":null,"b":null,"l":null,"st":null}`,
		`{}`,
		`  { "s" : "esc \" \\ \/ \b \f \n \r \t \u00e9 \ud83d\ude00 end" , "i" : -9223372036854775808 }  `,
		`{"f": -1.25e-3, "l": [], "st": {}, "unknown": {"deep": [1, {"x": "y\"}"}], "z": null}, "b": false}`,
		`{"s": "ünïcödé ✓", "f": 7, "l": [null, 3], "st": {"b": null, "a": 5, "extra": [true]}}`,
		`{"i": 123456789, "f": 1e308, "s": "", "other": "x\u0041"}`,
	}
	rbFast := array.NewRecordBuilder(mem, fullSchema)
	defer rbFast.Release()
	rbRef := array.NewRecordBuilder(mem, fullSchema)
	defer rbRef.Release()
	dec := newLineDecoder(rbFast)
	if dec.fast == nil {
		t.Fatal("the fast decoder must handle the inferred types")
	}
	for _, l := range lines {
		if err := dec.decode([]byte(l)); err != nil {
			t.Fatalf("fast decoder on %s: %v", l, err)
		}
		if err := rbRef.UnmarshalJSON([]byte(l)); err != nil {
			t.Fatalf("arrow decoder on %s: %v", l, err)
		}
	}
	got, want := rbFast.NewRecord(), rbRef.NewRecord()
	defer got.Release()
	defer want.Release()
	for c := range fullSchema.Fields() {
		if !array.Equal(got.Column(c), want.Column(c)) {
			t.Errorf("column %s:\n fast  %v\n arrow %v", fullSchema.Field(c).Name, got.Column(c), want.Column(c))
		}
	}
	// Beyond 2^53 Arrow's decoder goes through float64; the fast one is exact.
	if err := dec.decode([]byte(`{"i": 9223372036854775807}`)); err != nil {
		t.Fatal(err)
	}
	big := rbFast.NewRecord()
	defer big.Release()
	if v := big.Column(0).(*array.Int64).Value(0); v != 9223372036854775807 {
		t.Errorf("max int64 decoded as %d", v)
	}
	if s := got.Column(2).(*array.String).Value(3); !strings.Contains(s, "é 😀 end") {
		t.Errorf("escapes decoded as %q", s)
	}
}

func TestFastJSONErrors(t *testing.T) {
	mem := checkedMem(t)
	for _, tc := range []struct{ line, want string }{
		{`{"i": 1.5}`, `key "i": expected an int64`},
		{`{"i": "1"}`, `key "i": expected an int64`},
		{`{"b": 1}`, `key "b": expected a bool`},
		{`{"l": 1}`, `key "l": expected a list`},
		{`{"st": [1]}`, `key "st": expected an object`},
		{`{"s": "open`, `unterminated string`},
		{`{"i": 1 "f": 2}`, `expected ',' or '}'`},
		{`{"i": 1} trailing`, `unexpected text after the object`},
		{`[1]`, `expected a JSON object`},
		{`{"i": 1, "i": 2}`, `key "i" appears twice`},
		{`{"x": [1, }`, `expected a value`},
	} {
		rb := array.NewRecordBuilder(mem, fullSchema)
		err := newLineDecoder(rb).decode([]byte(tc.line))
		rb.Release()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.line, err, tc.want)
		}
	}
	// Types the fast decoder does not handle fall back to Arrow's decoder.
	other := arrow.NewSchema([]arrow.Field{{Name: "t", Type: arrow.FixedWidthTypes.Date32}}, nil)
	rb := array.NewRecordBuilder(mem, other)
	defer rb.Release()
	d := newLineDecoder(rb)
	if d.fast != nil {
		t.Fatal("date32 should use the fallback")
	}
	if err := d.decode([]byte(`{"t": "2024-01-02"}`)); err != nil {
		t.Fatal(err)
	}
	rec := rb.NewRecord()
	defer rec.Release()
	if rec.NumRows() != 1 || rec.Column(0).IsNull(0) {
		t.Fatalf("fallback: %v", rec)
	}
}
