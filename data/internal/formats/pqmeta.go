package formats

import (
	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// pqarrow tags every field it reads with "PARQUET:field_id" = "-1" when the file has no field
// ids, which makes the schema read differ from the schema written. These helpers remove that tag
// (real field ids are kept).

const fieldIDKey = "PARQUET:field_id"

func cleanMeta(md arrow.Metadata) (arrow.Metadata, bool) {
	i := md.FindKey(fieldIDKey)
	if i < 0 || md.Values()[i] != "-1" {
		return md, false
	}
	var keys, vals []string
	for k := range md.Keys() {
		if k != i {
			keys = append(keys, md.Keys()[k])
			vals = append(vals, md.Values()[k])
		}
	}
	return arrow.NewMetadata(keys, vals), true
}

func cleanField(f arrow.Field) (arrow.Field, bool) {
	md, c1 := cleanMeta(f.Metadata)
	dt, c2 := cleanType(f.Type)
	if !c1 && !c2 {
		return f, false
	}
	f.Metadata, f.Type = md, dt
	return f, true
}

func cleanType(dt arrow.DataType) (arrow.DataType, bool) {
	switch t := dt.(type) {
	case *arrow.StructType:
		fields := t.Fields()
		changed := false
		for i, f := range fields {
			var c bool
			if fields[i], c = cleanField(f); c {
				changed = true
			}
		}
		if changed {
			return arrow.StructOf(fields...), true
		}
	case *arrow.ListType:
		if f, c := cleanField(t.ElemField()); c {
			return arrow.ListOfField(f), true
		}
	case *arrow.LargeListType:
		if f, c := cleanField(t.ElemField()); c {
			return arrow.LargeListOfField(f), true
		}
	case *arrow.FixedSizeListType:
		if f, c := cleanField(t.ElemField()); c {
			return arrow.FixedSizeListOfField(t.Len(), f), true
		}
	}
	return dt, false
}

// cleanSchema returns the schema without the placeholder field ids, or nil if it has none.
func cleanSchema(s *arrow.Schema) *arrow.Schema {
	fields := s.Fields()
	changed := false
	for i, f := range fields {
		var c bool
		if fields[i], c = cleanField(f); c {
			changed = true
		}
	}
	if !changed {
		return nil
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

// retype views d with the equivalent type dt (same layout, other field metadata).
func retype(d arrow.ArrayData, dt arrow.DataType) arrow.ArrayData {
	var children []arrow.ArrayData
	switch t := dt.(type) {
	case *arrow.StructType:
		for i, c := range d.Children() {
			children = append(children, retype(c, t.Field(i).Type))
		}
	case arrow.ListLikeType:
		children = []arrow.ArrayData{retype(d.Children()[0], t.Elem())}
	default:
		children = d.Children()
		for _, c := range children {
			c.Retain()
		}
	}
	out := array.NewData(dt, d.Len(), d.Buffers(), children, d.NullN(), d.Offset())
	for _, c := range children {
		c.Release()
	}
	return out
}

// withSchema returns rec (owned) under the equivalent schema s, releasing rec.
func withSchema(rec arrow.Record, s *arrow.Schema) arrow.Record {
	cols := make([]arrow.Array, rec.NumCols())
	for i, c := range rec.Columns() {
		ft := s.Field(i).Type
		if ft == c.DataType() {
			c.Retain()
			cols[i] = c
			continue
		}
		d := retype(c.Data(), ft)
		cols[i] = array.MakeFromData(d)
		d.Release()
	}
	out := array.NewRecord(s, cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	rec.Release()
	return out
}
