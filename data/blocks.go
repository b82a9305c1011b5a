package data

import (
	"fmt"
	"hash/fnv"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/arrow/util"
)

var mem = memory.DefaultAllocator

// recBytes is a block's size: the bytes of its buffers.
func recBytes(r arrow.Record) int64 {
	if r == nil {
		return 0
	}
	return util.TotalRecordSize(r)
}

// fingerprint identifies a schema by its field names and types (not nullability: a column
// that may hold nulls and one that happens to hold none concatenate fine).
func fingerprint(s *arrow.Schema) uint64 {
	h := fnv.New64a()
	for _, f := range s.Fields() {
		fmt.Fprintf(h, "%s\x00%s\x01", f.Name, f.Type)
	}
	return h.Sum64()
}

func schemaString(s *arrow.Schema) string {
	parts := make([]string, len(s.Fields()))
	for i, f := range s.Fields() {
		parts[i] = f.Name + ": " + f.Type.String()
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func columnNames(s *arrow.Schema) []string {
	out := make([]string, len(s.Fields()))
	for i, f := range s.Fields() {
		out[i] = f.Name
	}
	return out
}

// emptyRecord is a record of no rows and no columns.
func emptyRecord() arrow.Record {
	return array.NewRecord(arrow.NewSchema(nil, nil), nil, 0)
}

// concatRecords concatenates records into a new record (the inputs stay owned by the
// caller). Their schemas must unify (see unifySchemas): null columns take the type the other
// records give them.
func concatRecords(recs []arrow.Record) (arrow.Record, error) {
	if len(recs) == 0 {
		return emptyRecord(), nil
	}
	schema, err := unifyRecords(recs)
	if err != nil {
		return nil, err
	}
	if len(recs) == 1 {
		return conform(recs[0], schema)
	}
	var rows int64
	conv := make([]arrow.Record, 0, len(recs))
	defer func() {
		for _, r := range conv {
			r.Release()
		}
	}()
	for _, r := range recs {
		c, err := conform(r, schema)
		if err != nil {
			return nil, err
		}
		conv = append(conv, c)
		rows += r.NumRows()
	}
	cols := make([]arrow.Array, schema.NumFields())
	for c := range cols {
		parts := make([]arrow.Array, len(conv))
		for i, r := range conv {
			parts[i] = r.Column(c)
		}
		a, err := array.Concatenate(parts, mem)
		if err != nil {
			releaseAll(cols[:c])
			return nil, fmt.Errorf("data: concatenating column %q: %w", schema.Field(c).Name, err)
		}
		cols[c] = a
	}
	out := array.NewRecord(schema, cols, rows)
	releaseAll(cols)
	return out, nil
}

func schemaMismatch(want, got *arrow.Schema, i int) error {
	what := "a block"
	if i >= 0 {
		what = fmt.Sprintf("block %d", i)
	}
	return fmt.Errorf("data: schema mismatch: %s has schema %s but earlier blocks have %s (all blocks of a dataset, and all inputs of a Union, need the same columns and types; a column null in every row of a block takes the others' type, no other type is promoted; use SelectColumns or a map to align them)",
		what, schemaString(got), schemaString(want))
}

// selectColumns projects rec to cols (in that order).
func selectColumns(rec arrow.Record, cols []string) (arrow.Record, error) {
	schema := rec.Schema()
	fields := make([]arrow.Field, len(cols))
	arrs := make([]arrow.Array, len(cols))
	for i, c := range cols {
		idx := schema.FieldIndices(c)
		if len(idx) == 0 {
			return nil, fmt.Errorf("data: SelectColumns: no column %q; the columns are: %s", c, strings.Join(columnNames(schema), ", "))
		}
		fields[i] = schema.Field(idx[0])
		arrs[i] = rec.Column(idx[0])
	}
	return array.NewRecord(arrow.NewSchema(fields, nil), arrs, rec.NumRows()), nil
}

func dropColumns(rec arrow.Record, cols []string) (arrow.Record, error) {
	schema := rec.Schema()
	for _, c := range cols {
		if !schema.HasField(c) {
			return nil, fmt.Errorf("data: DropColumns: no column %q; the columns are: %s", c, strings.Join(columnNames(schema), ", "))
		}
	}
	var keep []string
	for _, f := range schema.Fields() {
		if !slices.Contains(cols, f.Name) {
			keep = append(keep, f.Name)
		}
	}
	return selectColumns(rec, keep)
}

// withColumn returns rec with column name set to a (replaced in place or appended).
func withColumn(rec arrow.Record, name string, a arrow.Array) arrow.Record {
	schema := rec.Schema()
	fields := slices.Clone(schema.Fields())
	arrs := slices.Clone(rec.Columns())
	f := arrow.Field{Name: name, Type: a.DataType(), Nullable: true}
	if idx := schema.FieldIndices(name); len(idx) > 0 {
		fields[idx[0]], arrs[idx[0]] = f, a
	} else {
		fields, arrs = append(fields, f), append(arrs, a)
	}
	return array.NewRecord(arrow.NewSchema(fields, nil), arrs, rec.NumRows())
}

// ---- rows ----

// rowsOf converts a record to rows.
func rowsOf(rec arrow.Record) []Row {
	n := int(rec.NumRows())
	rows := make([]Row, n)
	for i := range rows {
		rows[i] = make(Row, rec.NumCols())
	}
	for c, f := range rec.Schema().Fields() {
		col := rec.Column(c)
		for i := 0; i < n; i++ {
			rows[i][f.Name] = valueAt(col, i)
		}
	}
	return rows
}

// isNull reports whether a's value i is null (an array of type null has no validity
// bitmap, and its IsNull says false).
func isNull(a arrow.Array, i int) bool {
	return a.DataType().ID() == arrow.NULL || a.IsNull(i)
}

func valueAt(a arrow.Array, i int) any {
	if isNull(a, i) {
		return nil
	}
	switch a := a.(type) {
	case *array.Int64:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Int16:
		return a.Value(i)
	case *array.Int8:
		return a.Value(i)
	case *array.Uint64:
		return a.Value(i)
	case *array.Uint32:
		return a.Value(i)
	case *array.Uint16:
		return a.Value(i)
	case *array.Uint8:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.Float32:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Binary:
		return slices.Clone(a.Value(i))
	case *array.LargeBinary:
		return slices.Clone(a.Value(i))
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return a.Value(i).ToTime(unit)
	case *array.Date32:
		return a.Value(i).ToTime()
	case *array.Date64:
		return a.Value(i).ToTime()
	case *array.List:
		start, end := a.ValueOffsets(i)
		vals := a.ListValues()
		out := make([]any, 0, end-start)
		for j := start; j < end; j++ {
			out = append(out, valueAt(vals, int(j)))
		}
		return out
	case *array.LargeList:
		start, end := a.ValueOffsets(i)
		vals := a.ListValues()
		out := make([]any, 0, end-start)
		for j := start; j < end; j++ {
			out = append(out, valueAt(vals, int(j)))
		}
		return out
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		out := make(Row, a.NumField())
		for k := 0; k < a.NumField(); k++ {
			out[st.Field(k).Name] = valueAt(a.Field(k), i)
		}
		return out
	}
	return a.GetOneForMarshal(i)
}

// rowsToRecord builds a record from rows. Columns in hint come first, in hint's order (with
// hint's type when the values fit it); other keys follow in sorted order. Types are inferred
// from the first non-nil value of each key.
func rowsToRecord(rows []Row, hint *arrow.Schema) (arrow.Record, error) {
	seen := map[string]bool{}
	var names []string
	if hint != nil {
		for _, f := range hint.Fields() {
			for _, r := range rows {
				if _, ok := r[f.Name]; ok {
					names = append(names, f.Name)
					seen[f.Name] = true
					break
				}
			}
		}
	}
	var extra []string
	for _, r := range rows {
		for k := range r {
			if !seen[k] {
				seen[k] = true
				extra = append(extra, k)
			}
		}
	}
	slices.Sort(extra)
	names = append(names, extra...)
	fields := make([]arrow.Field, len(names))
	for i, name := range names {
		// The first non-nil value's type; while it holds null (an empty list, a nil
		// struct field), later values may tell more.
		var dt arrow.DataType
		for _, r := range rows {
			if v := r[name]; v != nil {
				t, err := inferType(v)
				if err != nil {
					return nil, fmt.Errorf("data: column %q: %w", name, err)
				}
				if dt == nil {
					dt = t
				} else if u, ok := unifyTypes(dt, t); ok {
					dt = u
				}
				if !hasNull(dt) {
					break
				}
			}
		}
		if hint != nil {
			if idx := hint.FieldIndices(name); len(idx) > 0 {
				if ht := hint.Field(idx[0]).Type; dt == nil || sameKind(ht, dt) {
					dt = ht
				}
			}
		}
		if dt == nil {
			dt = arrow.Null // only nulls, as pyarrow: unified with other blocks' type where they meet
		}
		fields[i] = arrow.Field{Name: name, Type: dt, Nullable: true}
	}
	schema := arrow.NewSchema(fields, nil)
	if len(fields) == 0 { // rows without columns (a Map that returns Row{}): as many rows still
		return array.NewRecord(schema, nil, int64(len(rows))), nil
	}
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for ri, r := range rows {
		for i, name := range names {
			if err := appendValue(b.Field(i), r[name]); err != nil {
				return nil, fmt.Errorf("data: row %d, column %q: %w", ri, name, err)
			}
		}
	}
	return b.NewRecord(), nil
}

// sameKind: a hint type is kept when the inferred type is the same or a numeric type that
// converts (an int64 value into an int32 column of the input, for example).
func sameKind(hint, got arrow.DataType) bool {
	if arrow.TypeEqual(hint, got) {
		return true
	}
	return arrow.IsInteger(hint.ID()) && arrow.IsInteger(got.ID()) || arrow.IsFloating(hint.ID()) && arrow.IsFloating(got.ID())
}

var timeType = reflect.TypeFor[time.Time]()

func inferType(v any) (arrow.DataType, error) {
	switch v := v.(type) {
	case int, int64:
		return arrow.PrimitiveTypes.Int64, nil
	case int32:
		return arrow.PrimitiveTypes.Int32, nil
	case int16:
		return arrow.PrimitiveTypes.Int16, nil
	case int8:
		return arrow.PrimitiveTypes.Int8, nil
	case uint, uint64:
		return arrow.PrimitiveTypes.Uint64, nil
	case uint32:
		return arrow.PrimitiveTypes.Uint32, nil
	case uint16:
		return arrow.PrimitiveTypes.Uint16, nil
	case uint8:
		return arrow.PrimitiveTypes.Uint8, nil
	case float64:
		return arrow.PrimitiveTypes.Float64, nil
	case float32:
		return arrow.PrimitiveTypes.Float32, nil
	case bool:
		return arrow.FixedWidthTypes.Boolean, nil
	case string:
		return arrow.BinaryTypes.String, nil
	case []byte:
		return arrow.BinaryTypes.Binary, nil
	case time.Time:
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		fs := make([]arrow.Field, len(keys))
		for i, k := range keys {
			var t arrow.DataType = arrow.Null
			if v[k] != nil {
				var err error
				if t, err = inferType(v[k]); err != nil {
					return nil, err
				}
			}
			fs[i] = arrow.Field{Name: k, Type: t, Nullable: true}
		}
		return arrow.StructOf(fs...), nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array {
		for i := 0; i < rv.Len(); i++ {
			if e := rv.Index(i).Interface(); e != nil {
				t, err := inferType(e)
				if err != nil {
					return nil, err
				}
				return arrow.ListOf(t), nil
			}
		}
		if et := rv.Type().Elem(); et.Kind() != reflect.Interface {
			t, err := inferType(reflect.Zero(et).Interface())
			if err == nil {
				return arrow.ListOf(t), nil
			}
		}
		return arrow.ListOf(arrow.Null), nil
	}
	return nil, fmt.Errorf("unsupported value type %T (use numbers, strings, []byte, bool, time.Time, slices or map[string]any)", v)
}

func toInt64(v any) (int64, bool) {
	switch v := v.(type) {
	case int:
		return int64(v), true
	case int64:
		return v, true
	case int32:
		return int64(v), true
	case int16:
		return int64(v), true
	case int8:
		return int64(v), true
	case uint:
		return int64(v), true
	case uint64:
		return int64(v), true
	case uint32:
		return int64(v), true
	case uint16:
		return int64(v), true
	case uint8:
		return int64(v), true
	}
	return 0, false
}

func toFloat64(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case float32:
		return float64(v), true
	case uint64: // not through int64, which would turn values from 2^63 negative
		return float64(v), true
	case uint:
		return float64(v), true
	}
	if i, ok := toInt64(v); ok {
		return float64(i), true
	}
	return 0, false
}

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// appendInt appends v, an integer of any Go type, to b; false if v is not an integer.
func appendInt[T integer](b interface{ Append(T) }, v any) bool {
	i, ok := toInt64(v)
	if ok {
		b.Append(T(i))
	}
	return ok
}

// appendFloat appends v, a number of any Go type, to b; false if v is not a number.
func appendFloat[T ~float32 | ~float64](b interface{ Append(T) }, v any) bool {
	f, ok := toFloat64(v)
	if ok {
		b.Append(T(f))
	}
	return ok
}

// appendExact appends v to b if it is a T.
func appendExact[T any](b interface{ Append(T) }, v any) bool {
	x, ok := v.(T)
	if ok {
		b.Append(x)
	}
	return ok
}

func appendValue(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	bad := func() error { return fmt.Errorf("value %v of type %T does not fit column type %s", v, v, b.Type()) }
	switch b := b.(type) {
	case *array.Int64Builder:
		if !appendInt(b, v) {
			return bad()
		}
	case *array.Int32Builder:
		if !appendInt(b, v) {
			return bad()
		}
	case *array.Int16Builder:
		if !appendInt(b, v) {
			return bad()
		}
	case *array.Int8Builder:
		if !appendInt(b, v) {
			return bad()
		}
	case *array.Uint64Builder:
		if !appendInt(b, v) {
			return bad()
		}
	case *array.Uint32Builder:
		if !appendInt(b, v) {
			return bad()
		}
	case *array.Uint16Builder:
		if !appendInt(b, v) {
			return bad()
		}
	case *array.Uint8Builder:
		if !appendInt(b, v) {
			return bad()
		}
	case *array.Float64Builder:
		if !appendFloat(b, v) {
			return bad()
		}
	case *array.Float32Builder:
		if !appendFloat(b, v) {
			return bad()
		}
	case *array.BooleanBuilder:
		if !appendExact[bool](b, v) {
			return bad()
		}
	case *array.StringBuilder:
		if !appendExact[string](b, v) {
			return bad()
		}
	case *array.LargeStringBuilder:
		if !appendExact[string](b, v) {
			return bad()
		}
	case *array.BinaryBuilder:
		switch x := v.(type) {
		case []byte:
			b.Append(x)
		case string:
			b.AppendString(x)
		default:
			return bad()
		}
	case *array.TimestampBuilder:
		t, ok := v.(time.Time)
		if !ok {
			return bad()
		}
		ts, err := arrow.TimestampFromTime(t, b.Type().(*arrow.TimestampType).Unit)
		if err != nil {
			return err
		}
		b.Append(ts)
	case *array.Date32Builder:
		t, ok := v.(time.Time)
		if !ok {
			return bad()
		}
		b.Append(arrow.Date32FromTime(t))
	case *array.ListBuilder:
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
			return bad()
		}
		b.Append(true)
		for i := 0; i < rv.Len(); i++ {
			if err := appendValue(b.ValueBuilder(), rv.Index(i).Interface()); err != nil {
				return err
			}
		}
	case *array.StructBuilder:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		st := b.Type().(*arrow.StructType)
		b.Append(true)
		for k := 0; k < b.NumField(); k++ {
			if err := appendValue(b.FieldBuilder(k), m[st.Field(k).Name]); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("column type %s cannot be built from rows", b.Type())
	}
	return nil
}

var _ = timeType
