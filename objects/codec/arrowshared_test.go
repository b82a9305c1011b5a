package codec

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/decimal128"
	"github.com/apache/arrow/go/v15/arrow/float16"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// within reports whether b lies inside data.
func within(b, data []byte) bool {
	if len(b) == 0 || len(data) == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	return p >= lo && p+uintptr(len(b)) <= lo+uintptr(len(data))
}

// aliased counts the non-empty buffers of rec's arrays (children too) inside data, and
// all non-empty buffers.
func aliased(rec arrow.Record, data []byte) (in, all int) {
	var walk func(d arrow.ArrayData)
	walk = func(d arrow.ArrayData) {
		for _, b := range d.Buffers() {
			if b != nil && b.Len() > 0 {
				all++
				if within(b.Bytes(), data) {
					in++
				}
			}
		}
		for _, c := range d.Children() {
			walk(c)
		}
	}
	for _, c := range rec.Columns() {
		walk(c.Data())
	}
	return in, all
}

// allShared reports whether the in-place loader builds every column of schema (records
// of other schemas come from arrow/ipc's reader, whose arrays this package does not check).
func allShared(schema *arrow.Schema) bool {
	for _, f := range schema.Fields() {
		if !sharedType(f.Type, 0) {
			return false
		}
	}
	return true
}

// touch reads every value of every column (offsets, data, validity, children), which
// panics if an array's buffers do not hold what its length and offsets say.
func touch(rec arrow.Record) (n int) {
	if !allShared(rec.Schema()) {
		return 0
	}
	for _, c := range rec.Columns() {
		for i := 0; i < c.Len(); i++ {
			n += len(c.ValueStr(i))
		}
	}
	return n
}

// wideSchema has every layout the in-place loader builds, with nulls.
var wideSchema = arrow.NewSchema([]arrow.Field{
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8},
	{Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
	{Name: "f16", Type: arrow.FixedWidthTypes.Float16},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32},
	{Name: "d32", Type: arrow.FixedWidthTypes.Date32},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 20, Scale: 2}},
	{Name: "fsb", Type: &arrow.FixedSizeBinaryType{ByteWidth: 3}, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "ls", Type: arrow.BinaryTypes.LargeString},
	{Name: "ll", Type: arrow.LargeListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "fsl", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int16)},
	{Name: "st", Type: arrow.StructOf(
		arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		arrow.Field{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
	), Nullable: true},
}, nil)

func wideRecord(n int) arrow.Record {
	b := array.NewRecordBuilder(memory.DefaultAllocator, wideSchema)
	defer b.Release()
	for i := 0; i < n; i++ {
		null := i%5 == 1
		if null {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.BooleanBuilder).Append(i%3 == 0)
		}
		b.Field(1).(*array.Int8Builder).Append(int8(i))
		if null {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Uint16Builder).Append(uint16(i * 7))
		}
		b.Field(3).(*array.Float16Builder).Append(float16.New(float32(i) / 4))
		b.Field(4).(*array.Float32Builder).Append(float32(i) * 1.5)
		b.Field(5).(*array.Date32Builder).Append(arrow.Date32(i))
		b.Field(6).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i) * 101))
		if null {
			b.Field(7).AppendNull()
			b.Field(8).AppendNull()
		} else {
			b.Field(7).(*array.FixedSizeBinaryBuilder).Append([]byte{byte(i), 1, 2})
			b.Field(8).(*array.BinaryBuilder).Append([]byte(fmt.Sprint(i)))
		}
		b.Field(9).(*array.LargeStringBuilder).Append(fmt.Sprintf("s%d", i*i))
		ll := b.Field(10).(*array.LargeListBuilder)
		if null {
			ll.AppendNull()
		} else {
			ll.Append(true)
			for j := 0; j < i%3; j++ {
				ll.ValueBuilder().(*array.StringBuilder).Append(fmt.Sprint(j))
			}
		}
		fl := b.Field(11).(*array.FixedSizeListBuilder)
		fl.Append(true)
		fl.ValueBuilder().(*array.Int16Builder).AppendValues([]int16{int16(i), int16(-i)}, nil)
		sb := b.Field(12).(*array.StructBuilder)
		if i%7 == 3 {
			sb.AppendNull()
		} else {
			sb.Append(true)
			if null {
				sb.FieldBuilder(0).AppendNull()
			} else {
				sb.FieldBuilder(0).(*array.Float64Builder).Append(float64(i))
			}
			lb := sb.FieldBuilder(1).(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.Int64Builder).Append(int64(i))
		}
	}
	return b.NewRecord()
}

// TestArrowSharedDecode: Unmarshal builds records over the encoded bytes (every buffer
// inside the input: no copy) for every plain layout, equal to what was encoded, also for
// slices, empty records and tables.
func TestArrowSharedDecode(t *testing.T) {
	full := wideRecord(300)
	defer full.Release()
	for name, rec := range map[string]arrow.Record{
		"full": full, "slice": full.NewSlice(37, 211), "empty": wideRecord(0),
		"test": testRecord(nil, 100),
	} {
		t.Run(name, func(t *testing.T) {
			data := mustMarshal(t, rec)
			got, err := Unmarshal[arrow.Record](data)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Release()
			if !array.RecordEqual(got, rec) {
				t.Fatalf("got %v, want %v", got, rec)
			}
			touch(got)
			if in, all := aliased(got, data); in != all {
				t.Fatalf("%d of %d buffers inside the input, want all", in, all)
			}
			// Decoding again with an allocator still copies.
			cp, err := UnmarshalRecord(data, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			defer cp.Release()
			if in, _ := aliased(cp, data); in != 0 || !array.RecordEqual(cp, rec) {
				t.Fatalf("UnmarshalRecord: %d buffers inside the input", in)
			}
		})
	}
	tbl := testTable(nil)
	defer tbl.Release()
	data := mustMarshal(t, tbl)
	got, err := Unmarshal[arrow.Table](data)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if !array.TableEqual(got, tbl) {
		t.Fatal("table round trip differs")
	}
}

// TestArrowSharedMisaligned: input that is not 8-byte aligned (or written before the
// padding) still decodes right: misaligned buffers are copied into aligned memory.
func TestArrowSharedMisaligned(t *testing.T) {
	rec := wideRecord(50)
	defer rec.Release()
	data := mustMarshal(t, rec)
	for shift := 1; shift < 8; shift++ {
		buf := make([]byte, len(data)+shift)
		moved := buf[shift:]
		copy(moved, data)
		got, err := Unmarshal[arrow.Record](moved)
		if err != nil {
			t.Fatalf("shift %d: %v", shift, err)
		}
		if !array.RecordEqual(got, rec) {
			t.Fatalf("shift %d: records differ", shift)
		}
		touch(got)
		got.Release()
	}
	// The layout without the padding (the format byte, then the stream).
	old := append([]byte{data[0]}, data[1+arrowPad:]...)
	got, err := Unmarshal[arrow.Record](old)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if !array.RecordEqual(got, rec) {
		t.Fatal("unpadded layout: records differ")
	}
}

// TestArrowSharedFallback: types the in-place loader does not build (dictionaries, maps,
// unions, null, run-end encoded) decode through arrow/ipc's copying reader.
func TestArrowSharedFallback(t *testing.T) {
	mem := memory.DefaultAllocator
	dict := array.NewDictionaryBuilder(mem, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}).(*array.BinaryDictionaryBuilder)
	defer dict.Release()
	for _, s := range []string{"a", "b", "a"} {
		if err := dict.AppendString(s); err != nil {
			t.Fatal(err)
		}
	}
	dcol := dict.NewArray()
	defer dcol.Release()
	mb := array.NewMapBuilder(mem, arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32, false)
	defer mb.Release()
	for i := 0; i < 3; i++ {
		mb.Append(true)
		mb.KeyBuilder().(*array.StringBuilder).Append(fmt.Sprint(i))
		mb.ItemBuilder().(*array.Int32Builder).Append(int32(i))
	}
	mcol := mb.NewArray()
	defer mcol.Release()
	ncol := array.NewNull(3)
	defer ncol.Release()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "d", Type: dcol.DataType()}, {Name: "m", Type: mcol.DataType()}, {Name: "n", Type: arrow.Null, Nullable: true},
	}, nil)
	rec := array.NewRecord(schema, []arrow.Array{dcol, mcol, ncol}, 3)
	defer rec.Release()
	data := mustMarshal(t, rec)
	got, err := Unmarshal[arrow.Record](data)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if !array.RecordEqual(got, rec) {
		t.Fatalf("got %v, want %v", got, rec)
	}
	if in, _ := aliased(got, data); in != 0 {
		t.Fatalf("%d buffers inside the input from the copying reader", in)
	}
}

// TestArrowSharedOutlivesInput: a record built in place keeps its bytes alive and
// unchanged after every other reference to them is dropped and the heap is churned (the
// object store drops its reference when the object is freed while the consumer still
// holds the record; a reused or freed buffer would show up here as changed values).
func TestArrowSharedOutlivesInput(t *testing.T) {
	want := wideRecord(2000)
	defer want.Release()
	got := func() arrow.Record {
		data := mustMarshal(t, want)
		rec, err := Unmarshal[arrow.Record](data)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}()
	defer got.Release()
	slice := got.NewSlice(100, 200)
	defer slice.Release()
	for i := 0; i < 5; i++ {
		runtime.GC()
		junk := make([][]byte, 64)
		for j := range junk {
			junk[j] = make([]byte, 64<<10)
			for k := range junk[j] {
				junk[j][k] = 0xA5
			}
		}
		runtime.KeepAlive(junk)
	}
	if !array.RecordEqual(got, want) {
		t.Fatal("the record changed after its input was dropped")
	}
	ws := want.NewSlice(100, 200)
	defer ws.Release()
	if !array.RecordEqual(slice, ws) {
		t.Fatal("a slice changed after its input was dropped")
	}
}

// TestArrowSharedCorrupt: bit flips and truncations anywhere in the encodings give an
// error or a record whose every value can be read (for the layouts built in place) (the in-place loader checks lengths,
// buffer bounds and offsets against the input: nothing it returns reads out of bounds
// later), never a panic.
func TestArrowSharedCorrupt(t *testing.T) {
	rec := wideRecord(20)
	defer rec.Release()
	tbl := testTable(nil)
	defer tbl.Release()
	for _, data := range [][]byte{mustMarshal(t, rec), mustMarshal(t, tbl)} {
		for i := 1; i < len(data); i++ {
			for _, flip := range []byte{0x01, 0x10, 0x80, 0xff} {
				bad := append([]byte{}, data...)
				bad[i] ^= flip
				checkDecoded(t, bad, fmt.Sprintf("byte %d ^ %#x", i, flip))
			}
			checkDecoded(t, data[:i], fmt.Sprintf("prefix of %d bytes", i))
		}
	}
}

func checkDecoded(t *testing.T, data []byte, what string) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s: panic reading the decoded value: %v\n%s", what, r, debug.Stack())
		}
	}()
	if Format(data[0]) == FormatArrowRecord {
		r, err := Unmarshal[arrow.Record](data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s: %v, want ErrCorrupt", what, err)
			}
			return
		}
		touch(r)
		r.Release()
		return
	}
	tb, err := Unmarshal[arrow.Table](data)
	if err != nil {
		var tm *TypeMismatchError
		if !errors.Is(err, ErrCorrupt) && !errors.As(err, &tm) {
			t.Fatalf("%s: %v, want ErrCorrupt", what, err)
		}
		return
	}
	tr := array.NewTableReader(tb, -1)
	for tr.Next() {
		touch(tr.Record())
	}
	tr.Release()
	tb.Release()
}
