package codec

import (
	"errors"
	"fmt"
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
