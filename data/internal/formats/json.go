package formats

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// jsonInferLines is how many non-empty lines JSON schema inference looks at.
const jsonInferLines = 1000

// lineReader yields the lines of a file with their 1-based numbers, without the line end.
type lineReader struct {
	r    *bufio.Reader
	line int
	buf  []byte
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 1<<20)}
}

// next returns the next line (valid until the next call), or io.EOF.
func (l *lineReader) next() ([]byte, error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		l.buf = append(l.buf, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && len(l.buf) > 0 {
			err = nil
		}
		if err != nil {
			return nil, err
		}
		l.line++
		return bytes.TrimRight(l.buf, "\r\n"), nil
	}
}

// each calls fn with every line of the file at path that is not blank, in order, and
// returns fn's first error, or a read error with the line it happened at.
func (l *lineReader) each(path string, fn func(line []byte) error) error {
	for {
		line, err := l.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("data: reading %s: line %d: %w", path, l.line+1, err)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			return err
		}
	}
}

func readJSON(ctx context.Context, path string, opt ReadOptions, mem memory.Allocator, sink func(arrow.Record) error) error {
	schema := opt.Schema
	if schema == nil {
		var err error
		schema, err = inferJSON(path)
		if err != nil || schema == nil {
			return err // schema nil: no lines
		}
	}
	f, err := open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	dec := newLineDecoder(b)
	lr := newLineReader(f)
	rows := 0
	if err := sink(b.NewRecord()); err != nil { // the schema, in case there are no rows
		return err
	}
	err = lr.each(path, func(line []byte) error {
		if err := dec.decode(line); err != nil {
			return fmt.Errorf("data: reading %s: line %d: %v (pass a schema, data.Schema(...), if the types differ from the first %d lines)", path, lr.line, err, jsonInferLines)
		}
		if rows++; rows == opt.BatchRows {
			rows = 0
			if err := sink(b.NewRecord()); err != nil {
				return err
			}
			return ctx.Err()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if rows > 0 {
		return sink(b.NewRecord())
	}
	return nil
}

// jkind is an inferred JSON type.
type jkind int

const (
	jNull jkind = iota
	jBool
	jInt
	jFloat
	jString
	jList
	jStruct
)

func (k jkind) String() string {
	return [...]string{"null", "bool", "int64", "float64", "string", "list", "object"}[k]
}

// jtype is the inferred type of a JSON value.
type jtype struct {
	kind   jkind
	elem   *jtype            // jList
	names  []string          // jStruct, first-seen order
	fields map[string]*jtype // jStruct
}

// inferJSON infers a schema from the first jsonInferLines non-empty lines of a file; nil if it
// has none.
func inferJSON(path string) (*arrow.Schema, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	lr := newLineReader(f)
	root := &jtype{kind: jStruct, fields: map[string]*jtype{}}
	n := 0
	for n < jsonInferLines {
		line, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("data: reading %s: line %d: %w", path, lr.line+1, err)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		n++
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		t, err := decodeType(dec, "")
		var mixed *mixedError
		if errors.As(err, &mixed) {
			return nil, fmt.Errorf("data: reading %s: line %d: %w; pass an explicit schema, data.Schema(...), to read this file", path, lr.line, err)
		}
		if err != nil {
			return nil, fmt.Errorf("data: reading %s: line %d: invalid JSON: %v", path, lr.line, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("data: reading %s: line %d: more than one JSON value on the line (the format is one object per line)", path, lr.line)
		}
		if t.kind != jStruct {
			return nil, fmt.Errorf("data: reading %s: line %d: expected a JSON object, got a %s (the format is one object per line)", path, lr.line, t.kind)
		}
		if err := merge(root, t, ""); err != nil {
			return nil, fmt.Errorf("data: reading %s: line %d: %w; pass an explicit schema, data.Schema(...), to read this file", path, lr.line, err)
		}
	}
	if n == 0 {
		return nil, nil
	}
	return arrow.NewSchema(structFields(root), nil), nil
}

// decodeType reads one JSON value from dec and returns its type; name is its key path.
func decodeType(dec *json.Decoder, name string) (*jtype, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case nil:
		return &jtype{kind: jNull}, nil
	case bool:
		return &jtype{kind: jBool}, nil
	case string:
		return &jtype{kind: jString}, nil
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			return &jtype{kind: jFloat}, nil
		}
		if _, err := v.Int64(); err != nil {
			return &jtype{kind: jFloat}, nil
		}
		return &jtype{kind: jInt}, nil
	case json.Delim:
		switch v {
		case '[':
			lt := &jtype{kind: jList, elem: &jtype{kind: jNull}}
			for dec.More() {
				et, err := decodeType(dec, listName(name))
				if err != nil {
					return nil, err
				}
				if err := merge(lt.elem, et, listName(name)); err != nil {
					return nil, err
				}
			}
			_, err := dec.Token()
			return lt, err
		case '{':
			st := &jtype{kind: jStruct, fields: map[string]*jtype{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key is not a string")
				}
				sub := k
				if name != "" {
					sub = name + "." + k
				}
				ft, err := decodeType(dec, sub)
				if err != nil {
					return nil, err
				}
				if old, dup := st.fields[k]; dup {
					if err := merge(old, ft, sub); err != nil {
						return nil, err
					}
					continue
				}
				st.names = append(st.names, k)
				st.fields[k] = ft
			}
			_, err := dec.Token()
			return st, err
		}
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// merge widens dst to also hold values of type src; name is the key path for errors.
func merge(dst, src *jtype, name string) error {
	switch {
	case src.kind == jNull:
		return nil
	case dst.kind == jNull:
		*dst = *src
		return nil
	case dst.kind == src.kind:
	case dst.kind == jInt && src.kind == jFloat:
		dst.kind = jFloat
		return nil
	case dst.kind == jFloat && src.kind == jInt:
		return nil
	default:
		return &mixedError{name: name, a: dst.kind, b: src.kind}
	}
	switch dst.kind {
	case jList:
		return merge(dst.elem, src.elem, listName(name))
	case jStruct:
		for _, k := range src.names {
			sub := k
			if name != "" {
				sub = name + "." + k
			}
			if old, ok := dst.fields[k]; ok {
				if err := merge(old, src.fields[k], sub); err != nil {
					return err
				}
				continue
			}
			dst.names = append(dst.names, k)
			dst.fields[k] = src.fields[k]
		}
	}
	return nil
}

// mixedError says that a key holds values of two types.
type mixedError struct {
	name string
	a, b jkind
}

func (e *mixedError) Error() string {
	what := fmt.Sprintf("key %q", e.name)
	if strings.HasSuffix(e.name, "[]") {
		what = fmt.Sprintf("the list elements of %q", strings.TrimSuffix(e.name, "[]"))
	}
	return fmt.Sprintf("%s has values of two types, %s and %s", what, e.a, e.b)
}

func listName(name string) string {
	if strings.HasSuffix(name, "[]") {
		return name
	}
	return name + "[]"
}

// arrowType maps an inferred type to Arrow; every field is nullable (as in pyarrow), so that
// files whose first lines happen to have no nulls still get the same schema as the others.
func arrowType(t *jtype) arrow.DataType {
	switch t.kind {
	case jBool:
		return arrow.FixedWidthTypes.Boolean
	case jInt:
		return arrow.PrimitiveTypes.Int64
	case jFloat:
		return arrow.PrimitiveTypes.Float64
	case jList:
		return arrow.ListOf(arrowType(t.elem))
	case jStruct:
		return arrow.StructOf(structFields(t)...)
	case jNull:
		// Keys that were always null (and elements of lists always empty): null, as
		// pyarrow; Ray Data unifies it with the type other files or blocks give them.
		return arrow.Null
	}
	return arrow.BinaryTypes.String
}

func structFields(t *jtype) []arrow.Field {
	fields := make([]arrow.Field, 0, len(t.names))
	for _, k := range t.names {
		fields = append(fields, arrow.Field{Name: k, Type: arrowType(t.fields[k]), Nullable: true})
	}
	return fields
}
