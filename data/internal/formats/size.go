package formats

import (
	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// RecordBytes returns the logical size in bytes of rec: the bytes its rows occupy in compact Arrow
// buffers (values, offsets and one validity bit per row per column), counting only the sliced
// range of a sliced record. Read cuts blocks so that RecordBytes(block) <= TargetBlockBytes
// (unless a single row is larger). The size of a concatenation is at most the sum of the sizes of
// its parts.
func RecordBytes(rec arrow.Record) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += rangeBytes(c.Data(), 0, int64(c.Len()))
	}
	return n
}

// ArrayBytes is RecordBytes for one array.
func ArrayBytes(a arrow.Array) int64 { return rangeBytes(a.Data(), 0, int64(a.Len())) }

// rangeBytes is the logical size of rows [off, off+n) of d, off relative to d's own offset.
func rangeBytes(d arrow.ArrayData, off, n int64) int64 {
	if n <= 0 {
		return 0
	}
	dt := d.DataType()
	validity := (n + 7) / 8
	abs := int64(d.Offset()) + off
	switch t := dt.(type) {
	case *arrow.NullType:
		return 0
	case *arrow.BooleanType:
		return validity + (n+7)/8
	case *arrow.StringType, *arrow.BinaryType:
		offs := arrow.Int32Traits.CastFromBytes(d.Buffers()[1].Bytes())
		return validity + 4*(n+1) + int64(offs[abs+n]-offs[abs])
	case *arrow.LargeStringType, *arrow.LargeBinaryType:
		offs := arrow.Int64Traits.CastFromBytes(d.Buffers()[1].Bytes())
		return validity + 8*(n+1) + (offs[abs+n] - offs[abs])
	case *arrow.ListType, *arrow.MapType:
		offs := arrow.Int32Traits.CastFromBytes(d.Buffers()[1].Bytes())
		s, e := int64(offs[abs]), int64(offs[abs+n])
		return validity + 4*(n+1) + rangeBytes(d.Children()[0], s, e-s)
	case *arrow.LargeListType:
		offs := arrow.Int64Traits.CastFromBytes(d.Buffers()[1].Bytes())
		s, e := offs[abs], offs[abs+n]
		return validity + 8*(n+1) + rangeBytes(d.Children()[0], s, e-s)
	case *arrow.FixedSizeListType:
		size := int64(t.Len())
		return validity + rangeBytes(d.Children()[0], abs*size, n*size)
	case *arrow.StructType:
		total := validity
		for _, c := range d.Children() {
			total += rangeBytes(c, abs, n)
		}
		return total
	case *arrow.DictionaryType:
		total := validity + n*int64(t.IndexType.(arrow.FixedWidthDataType).BitWidth()/8)
		if dict, ok := d.Dictionary().(*array.Data); ok && dict != nil {
			total += rangeBytes(dict, 0, int64(dict.Len()))
		}
		return total
	case arrow.ExtensionType:
		return rangeBytes(storageData(d, t), off, n)
	case arrow.FixedWidthDataType:
		return validity + n*int64(t.BitWidth())/8
	}
	// Anything else (unions, views): a share of the buffers proportional to the rows.
	var total int64
	for _, b := range d.Buffers() {
		if b != nil {
			total += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		total += rangeBytes(c, 0, int64(c.Len()))
	}
	if l := int64(d.Len()); l > 0 {
		return validity + total*n/l
	}
	return validity
}

// storageData is d seen with the extension type's storage type (same buffers).
func storageData(d arrow.ArrayData, t arrow.ExtensionType) arrow.ArrayData {
	return &storageView{ArrayData: d, dt: t.StorageType()}
}

type storageView struct {
	arrow.ArrayData
	dt arrow.DataType
}

func (s *storageView) DataType() arrow.DataType { return s.dt }
