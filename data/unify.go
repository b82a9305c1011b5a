package data

import (
	"fmt"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// Null-typed columns and schema unification.
//
// A column that is null in every row of a block (a Map that returns nil for it, an empty
// CSV column, a JSON key that is always null) has the Arrow type null, as in pyarrow, and
// so do the null parts of nested types (list<null>, a struct field of type null). Where
// blocks meet (the executor's output and Union, batches cut across blocks, TakeBatch,
// aggregates, writers), schemas are unified as pyarrow's unify_schemas does by default: the
// same column names in the same order, and per column the same type, or null and any type
// (recursively inside lists and structs), which then becomes that type. Other differences,
// int64 against float64 included, stay a schema mismatch: nothing else is promoted.

// hasNull reports whether dt is null or holds null (list elements, struct fields).
func hasNull(dt arrow.DataType) bool {
	switch t := dt.(type) {
	case *arrow.NullType:
		return true
	case *arrow.ListType:
		return hasNull(t.Elem())
	case *arrow.LargeListType:
		return hasNull(t.Elem())
	case *arrow.FixedSizeListType:
		return hasNull(t.Elem())
	case *arrow.StructType:
		for _, f := range t.Fields() {
			if hasNull(f.Type) {
				return true
			}
		}
	}
	return false
}

// schemaHasNull reports whether a column of s is null or holds null.
func schemaHasNull(s *arrow.Schema) bool {
	for _, f := range s.Fields() {
		if hasNull(f.Type) {
			return true
		}
	}
	return false
}

// unifyTypes returns the type that values of a and b both convert to: a if they are equal,
// the other one if one is null, and lists and structs unified element by element.
func unifyTypes(a, b arrow.DataType) (arrow.DataType, bool) {
	if arrow.TypeEqual(a, b) {
		return a, true
	}
	if a.ID() == arrow.NULL {
		return b, true
	}
	if b.ID() == arrow.NULL {
		return a, true
	}
	switch ta := a.(type) {
	case *arrow.ListType:
		tb, ok := b.(*arrow.ListType)
		if !ok {
			return nil, false
		}
		e, ok := unifyTypes(ta.Elem(), tb.Elem())
		if !ok {
			return nil, false
		}
		return arrow.ListOfField(arrow.Field{Name: ta.ElemField().Name, Type: e, Nullable: true}), true
	case *arrow.LargeListType:
		tb, ok := b.(*arrow.LargeListType)
		if !ok {
			return nil, false
		}
		e, ok := unifyTypes(ta.Elem(), tb.Elem())
		if !ok {
			return nil, false
		}
		return arrow.LargeListOfField(arrow.Field{Name: ta.ElemField().Name, Type: e, Nullable: true}), true
	case *arrow.FixedSizeListType:
		tb, ok := b.(*arrow.FixedSizeListType)
		if !ok || ta.Len() != tb.Len() {
			return nil, false
		}
		e, ok := unifyTypes(ta.Elem(), tb.Elem())
		if !ok {
			return nil, false
		}
		return arrow.FixedSizeListOfField(ta.Len(), arrow.Field{Name: ta.ElemField().Name, Type: e, Nullable: true}), true
	case *arrow.StructType:
		tb, ok := b.(*arrow.StructType)
		if !ok || ta.NumFields() != tb.NumFields() {
			return nil, false
		}
		fs := make([]arrow.Field, ta.NumFields())
		for i := range fs {
			fa, fb := ta.Field(i), tb.Field(i)
			if fa.Name != fb.Name {
				return nil, false
			}
			t, ok := unifyTypes(fa.Type, fb.Type)
			if !ok {
				return nil, false
			}
			fs[i] = arrow.Field{Name: fa.Name, Type: t, Nullable: fa.Nullable || fb.Nullable || t.ID() != fa.Type.ID()}
		}
		return arrow.StructOf(fs...), true
	}
	return nil, false
}

// unifySchemas returns the schema both a and b convert to (see unifyTypes), or false when
// their column names or types differ otherwise. Nil stands for "not known" and unifies with
// anything.
func unifySchemas(a, b *arrow.Schema) (*arrow.Schema, bool) {
	switch {
	case a == nil:
		return b, true
	case b == nil, a == b:
		return a, true
	case a.NumFields() != b.NumFields():
		return nil, false
	}
	var fields []arrow.Field
	for i := 0; i < a.NumFields(); i++ {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Name != fb.Name {
			return nil, false
		}
		if arrow.TypeEqual(fa.Type, fb.Type) {
			if fields != nil {
				fields = append(fields, fa)
			}
			continue
		}
		t, ok := unifyTypes(fa.Type, fb.Type)
		if !ok {
			return nil, false
		}
		if fields == nil {
			fields = append(fields, a.Fields()[:i]...)
		}
		f := fa
		if fa.Type.ID() == arrow.NULL {
			f = fb
		}
		f.Type, f.Nullable = t, true
		fields = append(fields, f)
	}
	if fields == nil {
		return a, true
	}
	md := a.Metadata()
	return arrow.NewSchema(fields, &md), true
}

// conform returns rec with its null (and partly null) columns cast to the types of want
// (rec retained when nothing changes). want must unify with rec's schema; columns are matched
// by position.
func conform(rec arrow.Record, want *arrow.Schema) (arrow.Record, error) {
	have := rec.Schema()
	if want == nil || want == have || !schemaHasNull(have) || rec.NumRows() == 0 {
		// (Blocks of no rows may have any schema: they are skipped where blocks meet.)
		rec.Retain()
		return rec, nil
	}
	if want.NumFields() != have.NumFields() {
		return nil, schemaMismatch(want, have, -1)
	}
	var cols []arrow.Array
	var fields []arrow.Field
	for i, f := range have.Fields() {
		wt := want.Field(i).Type
		if arrow.TypeEqual(f.Type, wt) || !hasNull(f.Type) {
			continue
		}
		if _, ok := unifyTypes(f.Type, wt); !ok || f.Name != want.Field(i).Name {
			releaseAll(cols)
			return nil, schemaMismatch(want, have, -1)
		}
		if cols == nil {
			cols = make([]arrow.Array, have.NumFields())
			fields = append([]arrow.Field(nil), have.Fields()...)
		}
		cols[i] = castNulls(rec.Column(i), wt)
		fields[i] = arrow.Field{Name: f.Name, Type: wt, Nullable: true, Metadata: f.Metadata}
	}
	if cols == nil {
		rec.Retain()
		return rec, nil
	}
	for i := range cols {
		if cols[i] == nil {
			cols[i] = rec.Column(i)
			cols[i].Retain()
		}
	}
	md := have.Metadata()
	out := array.NewRecord(arrow.NewSchema(fields, &md), cols, rec.NumRows())
	releaseAll(cols)
	return out, nil
}

func releaseAll(as []arrow.Array) {
	for _, a := range as {
		if a != nil {
			a.Release()
		}
	}
}

// castNulls converts a, whose type unifies with to, to type to: null arrays become arrays of
// nulls of type to, and lists and structs are rebuilt over converted children. The result is
// a new reference.
func castNulls(a arrow.Array, to arrow.DataType) arrow.Array {
	if arrow.TypeEqual(a.DataType(), to) {
		a.Retain()
		return a
	}
	if a.DataType().ID() == arrow.NULL {
		return array.MakeArrayOfNull(mem, to, a.Len())
	}
	d := a.Data()
	switch t := to.(type) {
	case *arrow.ListType:
		return rebuild(d, to, []arrow.Array{a.(*array.List).ListValues()}, []arrow.DataType{t.Elem()})
	case *arrow.LargeListType:
		return rebuild(d, to, []arrow.Array{a.(*array.LargeList).ListValues()}, []arrow.DataType{t.Elem()})
	case *arrow.FixedSizeListType:
		return rebuild(d, to, []arrow.Array{a.(*array.FixedSizeList).ListValues()}, []arrow.DataType{t.Elem()})
	case *arrow.StructType:
		// A struct's Field(i) is already cut to the struct's offset and length: rebuild
		// over the children of the data instead, which the offset applies to.
		children := make([]arrow.Array, len(d.Children()))
		types := make([]arrow.DataType, len(children))
		for i, c := range d.Children() {
			children[i] = array.MakeFromData(c)
			types[i] = t.Field(i).Type
		}
		out := rebuild(d, to, children, types)
		releaseAll(children)
		return out
	}
	// unifyTypes admits no other difference.
	panic(fmt.Sprintf("data: castNulls: %s to %s", a.DataType(), to))
}

// rebuild makes an array of type to over d's buffers, offset and length, with children
// converted to types.
func rebuild(d arrow.ArrayData, to arrow.DataType, children []arrow.Array, types []arrow.DataType) arrow.Array {
	kids := make([]arrow.ArrayData, len(children))
	conv := make([]arrow.Array, len(children))
	for i, c := range children {
		conv[i] = castNulls(c, types[i])
		kids[i] = conv[i].Data()
	}
	nd := array.NewData(to, d.Len(), d.Buffers(), kids, d.NullN(), d.Offset())
	out := array.MakeFromData(nd)
	nd.Release()
	releaseAll(conv)
	return out
}

// unifyRecords returns the schema all records convert to, or a schema mismatch naming the
// first that does not fit the ones before it.
func unifyRecords(recs []arrow.Record) (*arrow.Schema, error) {
	var s *arrow.Schema
	for i, r := range recs {
		u, ok := unifySchemas(s, r.Schema())
		if !ok {
			return nil, schemaMismatch(s, r.Schema(), i)
		}
		s = u
	}
	return s, nil
}
