package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

type (
	arrowRecord = arrow.Record
	arrowTable  = arrow.Table
)

// decodeRelease decodes into T and releases the result.
func decodeRelease[T interface{ Release() }](data []byte) error {
	v, err := Unmarshal[T](data)
	if err == nil && any(v) != nil {
		v.Release()
	}
	return err
}

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String},
	{Name: "tags", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
	{Name: "when", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
}, nil)

// testRecord builds an n-row record with every column type in testSchema.
func testRecord(mem memory.Allocator, n int) arrow.Record {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	b := array.NewRecordBuilder(mem, testSchema)
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%3 == 0 {
			b.Field(1).(*array.Float64Builder).AppendNull()
		} else {
			b.Field(1).(*array.Float64Builder).Append(float64(i) / 2)
		}
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("row-%d", i))
		lb := b.Field(3).(*array.ListBuilder)
		lb.Append(true)
		for j := 0; j < i%4; j++ {
			lb.ValueBuilder().(*array.Int32Builder).Append(int32(j))
		}
		b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(i) * 1000))
	}
	return b.NewRecord()
}

func testTable(mem memory.Allocator) arrow.Table {
	r1, r2 := testRecord(mem, 5), testRecord(mem, 7)
	defer r1.Release()
	defer r2.Release()
	return array.NewTableFromRecords(testSchema, []arrow.Record{r1, r2})
}

func TestArrowRecordRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	rec := testRecord(mem, 100)
	defer rec.Release()
	data, err := Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if Format(data[0]) != FormatArrowRecord {
		t.Fatalf("format %v", Format(data[0]))
	}
	got, err := UnmarshalRecord(data, mem)
	if err != nil {
		t.Fatal(err)
	}
	if !array.RecordEqual(rec, got) || !got.Schema().Equal(rec.Schema()) {
		t.Fatal("decoded record differs")
	}
	got.Release()

	// the generic and interface forms, with the default allocator
	got2, err := Unmarshal[arrow.Record](data)
	if err != nil || !array.RecordEqual(rec, got2) {
		t.Fatalf("Unmarshal[arrow.Record]: %v", err)
	}
	got2.Release()
	anyGot, err := Unmarshal[any](data)
	if err != nil {
		t.Fatal(err)
	}
	anyGot.(arrow.Record).Release()

	// a sliced record encodes just its rows
	sl := rec.NewSlice(10, 20)
	defer sl.Release()
	data, err = MarshalValue(sl)
	if err != nil {
		t.Fatal(err)
	}
	got3, err := UnmarshalRecord(data, mem)
	if err != nil || !array.RecordEqual(sl, got3) {
		t.Fatalf("sliced record: %v", err)
	}
	got3.Release()

	// a record decodes as a one-batch table too
	tbl, err := UnmarshalTable(data, mem)
	if err != nil || tbl.NumRows() != 10 {
		t.Fatalf("record as table: %v", err)
	}
	tbl.Release()
}

func TestArrowTableRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	tbl := testTable(mem)
	defer tbl.Release()
	data, err := Marshal(tbl)
	if err != nil {
		t.Fatal(err)
	}
	if Format(data[0]) != FormatArrowTable {
		t.Fatalf("format %v", Format(data[0]))
	}
	got, err := UnmarshalTable(data, mem)
	if err != nil {
		t.Fatal(err)
	}
	if !array.TableEqual(tbl, got) {
		t.Fatal("decoded table differs")
	}
	got.Release()

	// an empty table (schema only, no batches)
	empty := array.NewTableFromRecords(testSchema, nil)
	defer empty.Release()
	data, err = Marshal[arrow.Table](empty)
	if err != nil {
		t.Fatal(err)
	}
	got, err = UnmarshalTable(data, mem)
	if err != nil || got.NumRows() != 0 || !got.Schema().Equal(testSchema) {
		t.Fatalf("empty table: %v", err)
	}
	got.Release()

	// a table is not a record
	if _, err := UnmarshalRecord(mustMarshal(t, tbl), mem); !errors.Is(err, ErrTypeMismatch) {
		t.Fatalf("table into record: %v", err)
	}
}

func TestArrowErrors(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := testRecord(mem, 3)
	defer rec.Release()
	data := mustMarshal(t, rec)

	// mismatches both ways
	if err := decodeErr[int](data); !errors.Is(err, ErrTypeMismatch) || !contains(err, "Arrow IPC record", "into int") {
		t.Fatalf("record into int: %v", err)
	}
	if _, err := UnmarshalRecord(mustMarshal(t, 5), mem); !errors.Is(err, ErrTypeMismatch) || !contains(err, "CBOR unsigned integer") {
		t.Fatalf("int into record: %v", err)
	}
	if err := decodeErr[arrow.Record](mustMarshal(t, "x")); !errors.Is(err, ErrTypeMismatch) {
		t.Fatalf("string into record: %v", err)
	}
	// a nil record round-trips as nil
	var nilRec arrow.Record
	got, err := Unmarshal[arrow.Record](mustMarshal(t, nilRec))
	if err != nil || got != nil {
		t.Fatalf("nil record: %v, %v", got, err)
	}
	// nested Arrow values are refused
	if _, err := Marshal(struct{ R arrow.Record }{rec}); !errors.Is(err, ErrUnsupportedType) || !contains(err, "top-level") {
		t.Fatalf("nested record: %v", err)
	}
	if _, err := Marshal([]any{rec}); !errors.Is(err, ErrUnsupportedType) {
		t.Fatalf("record in []any: %v", err)
	}
	// corrupt bytes in the body: every single-byte change is an error or a valid record, never a panic or leak
	for i := 1; i < len(data); i++ {
		bad := append([]byte{}, data...)
		bad[i] ^= 0xff
		if r, err := UnmarshalRecord(bad, mem); err == nil {
			r.Release()
		}
	}
}

func contains(err error, subs ...string) bool {
	for _, s := range subs {
		if err == nil || !strings.Contains(err.Error(), s) {
			return false
		}
	}
	return true
}

// TestArrowEncodeExactSize: the encoding is allocated once at exactly its final size, also
// for a small slice of a large record (whose buffers are much larger than what is written)
// and for tables.
func TestArrowEncodeExactSize(t *testing.T) {
	big := testRecord(nil, 20000)
	defer big.Release()
	small := big.NewSlice(100, 110)
	defer small.Release()
	tbl := testTable(nil)
	defer tbl.Release()
	for name, v := range map[string]any{"record": big, "slice": small, "table": tbl} {
		data := mustMarshal(t, v)
		if len(data) != cap(data) {
			t.Errorf("%s: %d bytes in a buffer of %d", name, len(data), cap(data))
		}
	}
	data := mustMarshal(t, small)
	if len(data) > 8<<10 {
		t.Errorf("a 10-row slice encodes into %d bytes", len(data))
	}
	got, err := Unmarshal[arrow.Record](data)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if !array.RecordEqual(got, small) {
		t.Fatalf("slice round trip: got %v, want %v", got, small)
	}
}

// TestArrowDecodeDoesNotAliasInput: the decoder reads message bodies in place (no copy of
// the input), but the record's buffers are its own: overwriting or dropping the input
// afterwards leaves the record intact (the store hands the same bytes to every Get).
func TestArrowDecodeDoesNotAliasInput(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	want := testRecord(nil, 500)
	defer want.Release()
	data := mustMarshal(t, want)
	rec, err := UnmarshalRecord(data, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	tdata := mustMarshal(t, want)
	tbl, err := UnmarshalTable(tdata, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	for i := range data {
		data[i] = 0xA5
	}
	for i := range tdata {
		tdata[i] = 0x5A
	}
	if !array.RecordEqual(rec, want) {
		t.Fatal("the decoded record changed with its input")
	}
	tr := array.NewTableReader(tbl, -1)
	defer tr.Release()
	for tr.Next() {
		if !array.RecordEqual(tr.Record(), want) {
			t.Fatal("the decoded table changed with its input")
		}
	}
	// The record's buffers come from the allocator, none from the input.
	if mem.CurrentAlloc() == 0 {
		t.Fatal("the decoded record allocated nothing: it aliases its input")
	}
}

// TestSliceMessageReaderBounds: the in-place message reader refuses lengths that overrun
// its input with an error (checkIPCStream catches these first; this is the second line).
func TestSliceMessageReaderBounds(t *testing.T) {
	rec := testRecord(nil, 5)
	defer rec.Release()
	stream := arrowPayload(mustMarshal(t, rec))
	// a valid stream: schema, record batch, then io.EOF
	r := &sliceMessageReader{data: stream, refs: 1}
	var kinds []string
	for {
		m, err := r.Message()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, m.Type().String())
	}
	r.Release()
	if strings.Join(kinds, ",") != "Schema,RecordBatch" {
		t.Fatalf("messages %v", kinds)
	}
	le := func(vs ...uint32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, v)
		}
		return b
	}
	metaLen := int(binary.LittleEndian.Uint32(stream[4:]))
	bad := map[string][]byte{
		"empty":              nil,
		"short-length":       {0xff, 0xff},
		"short-continuation": {0xff, 0xff, 0xff, 0xff, 1},
		"meta-overrun":       le(0xFFFFFFFF, 1000),
		"meta-garbage":       append(le(0xFFFFFFFF, 8), 1, 2, 3, 4, 5, 6, 7, 8),
		"body-overrun":       stream[:8+metaLen], // the schema has no body; cut the next message
	}
	// a record batch message whose body is cut short
	var first int
	{
		rr := &sliceMessageReader{data: stream, refs: 1}
		if _, err := rr.Message(); err != nil {
			t.Fatal(err)
		}
		first = rr.pos
		rr.Release()
	}
	second := int(binary.LittleEndian.Uint32(stream[first+4:]))
	bad["body-cut"] = stream[first : first+8+second+1]
	for name, b := range bad {
		t.Run(name, func(t *testing.T) {
			r := &sliceMessageReader{data: b, refs: 1}
			defer r.Release()
			for i := 0; i < 3; i++ {
				_, err := r.Message()
				if err == io.EOF {
					if name == "body-overrun" && i == 1 {
						t.Fatal("a cut stream read as complete")
					}
					return
				}
				if err != nil {
					return
				}
			}
			t.Fatal("no error")
		})
	}
}

// TestArrowCorruptInPlaceDecode: bit flips and truncations anywhere in record and table
// encodings give an error or a valid value, never a panic, and leak nothing.
func TestArrowCorruptInPlaceDecode(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := testRecord(nil, 40)
	defer rec.Release()
	tbl := testTable(nil)
	defer tbl.Release()
	for _, data := range [][]byte{mustMarshal(t, rec), mustMarshal(t, tbl)} {
		for i := 1; i < len(data); i++ {
			for _, flip := range []byte{0x01, 0x80, 0xff} {
				bad := append([]byte{}, data...)
				bad[i] ^= flip
				if tb, err := UnmarshalTable(bad, mem); err == nil {
					tb.Release()
				} else if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("byte %d ^ %#x: %v, want ErrCorrupt", i, flip, err)
				}
			}
			if _, err := UnmarshalTable(data[:i], mem); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("prefix of %d bytes: %v", i, err)
			}
		}
	}
}
