package formats

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// A direct decoder from JSON lines into Arrow builders, for schemas made of bool, int64,
// float64, utf8, lists and structs (all that inference produces). It is several times faster
// than array.NewJSONReader, which goes through a token stream (see BenchmarkReadJSON and
// BenchmarkPlainJSONReader). Other schemas use RecordBuilder.UnmarshalJSON.

// scan is a cursor over one line.
type scan struct {
	b   []byte
	i   int
	tmp []byte // scratch for skipped strings
}

func (s *scan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte (0 at the end).
func (s *scan) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scan) expect(c byte) error {
	if s.peek() != c {
		return s.errf("expected %q", c)
	}
	s.i++
	return nil
}

func (s *scan) errf(format string, args ...any) error {
	got := "end of line"
	if s.i < len(s.b) {
		end := min(s.i+20, len(s.b))
		got = strconv.Quote(string(s.b[s.i:end]))
	}
	return fmt.Errorf("%s at column %d, found %s", fmt.Sprintf(format, args...), s.i+1, got)
}

// literal consumes word (true, false, null) if it is next.
func (s *scan) literal(word string) bool {
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return true
	}
	return false
}

// str parses the string at the cursor. Without escapes it returns a part of the line, else it
// decodes into *scratch (kept for reuse) and returns that: either is valid until the next call
// with the same scratch.
func (s *scan) str(scratch *[]byte) ([]byte, error) {
	if s.peek() != '"' {
		return nil, s.errf("expected a string")
	}
	s.i++
	start := s.i
	// Fast path: no escapes.
	high := false
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '"' {
			s.i++
			str := s.b[start : s.i-1]
			if high && !utf8.Valid(str) {
				*scratch = appendValidUTF8((*scratch)[:0], str)
				return *scratch, nil
			}
			return str, nil
		}
		high = high || c >= utf8.RuneSelf
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return nil, s.errf("control character 0x%02x in a string (JSON escapes them)", c)
		}
		s.i++
	}
	buf := append((*scratch)[:0], s.b[start:s.i]...)
	defer func() { *scratch = buf }()
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			if !utf8.Valid(buf) {
				buf = appendValidUTF8(nil, buf)
			}
			return buf, nil
		case c < 0x20:
			return nil, s.errf("control character 0x%02x in a string (JSON escapes them)", c)
		case c != '\\':
			buf = append(buf, c)
			s.i++
			continue
		}
		s.i++
		if s.i >= len(s.b) {
			break
		}
		e := s.b[s.i]
		s.i++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return nil, s.errf("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				// A pair takes the next escape only if it completes it; otherwise the lone
				// half becomes U+FFFD and the next escape is read on its own (as
				// encoding/json does).
				pair := utf8.RuneError
				if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					save := s.i
					s.i += 2
					if lo, ok := s.hex4(); ok {
						pair = utf16.DecodeRune(r, lo)
					}
					if pair == utf8.RuneError {
						s.i = save
					}
				}
				r = pair
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return nil, s.errf("bad escape \\%c", e)
		}
	}
	return nil, s.errf("unterminated string")
}

// appendValidUTF8 appends b to dst with every byte that is not part of valid UTF-8
// replaced by U+FFFD, as encoding/json decodes strings: Arrow strings are UTF-8.
func appendValidUTF8(dst, b []byte) []byte {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, b[:n]...)
		}
		b = b[n:]
	}
	return dst
}

func (s *scan) hex4() (rune, bool) {
	if len(s.b)-s.i < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(s.b[s.i:s.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	s.i += 4
	return rune(v), true
}

// number returns the number at the cursor, as JSON writes them (RFC 8259:
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?), or nil with the cursor unmoved if there
// is none. Only JSON's form is taken: strconv would also accept "+1", "01" or "1_0".
func (s *scan) number() []byte {
	s.ws()
	b, start := s.b, s.i
	i := start
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if i = digitsEnd(b, i); i == -1 {
		return nil
	}
	if i < len(b) && b[i] == '.' {
		if i = digitsEnd(b, i+1); i == -1 {
			return nil
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i = digitsEnd(b, i); i == -1 {
			return nil
		}
	}
	s.i = i
	return b[start:i]
}

// digitsEnd returns the index after the digits that start at b[i], or -1 if there are
// none.
func digitsEnd(b []byte, i int) int {
	j := i
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// maxSkipDepth bounds the nesting of the values skip skips (encoding/json's limit): the
// recursion must not grow the stack without bound on a line of a million '['.
const maxSkipDepth = 10000

// skip skips one value of any kind.
func (s *scan) skip() error { return s.skipNested(0) }

func (s *scan) skipNested(depth int) error {
	if depth > maxSkipDepth {
		return s.errf("nested more than %d levels", maxSkipDepth)
	}
	switch c := s.peek(); c {
	case '"':
		_, err := s.str(&s.tmp)
		return err
	case '{', '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		s.i++
		if s.peek() == closing {
			s.i++
			return nil
		}
		for {
			if c == '{' {
				if _, err := s.str(&s.tmp); err != nil {
					return err
				}
				if err := s.expect(':'); err != nil {
					return err
				}
			}
			if err := s.skipNested(depth + 1); err != nil {
				return err
			}
			switch s.peek() {
			case ',':
				s.i++
			case closing:
				s.i++
				return nil
			default:
				return s.errf("expected ',' or %q", closing)
			}
		}
	case 't':
		if s.literal("true") {
			return nil
		}
	case 'f':
		if s.literal("false") {
			return nil
		}
	case 'n':
		if s.literal("null") {
			return nil
		}
	default:
		if n := s.number(); len(n) > 0 {
			return nil
		}
	}
	return s.errf("expected a value")
}

func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// valueDec decodes one value (or null) at the cursor into its builder.
type valueDec func(s *scan) error

// errUnsupported means the fast decoder does not handle a type.
var errUnsupported = errors.New("unsupported type")

// fieldsDec decodes objects into a set of field builders: the record or a struct.
type fieldsDec struct {
	names  map[string]int
	decs   []valueDec
	blds   []array.Builder
	seen   []bool
	keyBuf []byte
}

func newFieldsDec(fields []arrow.Field, blds []array.Builder) (*fieldsDec, error) {
	d := &fieldsDec{names: make(map[string]int, len(fields)), blds: blds, seen: make([]bool, len(fields))}
	for i, f := range fields {
		dec, err := newValueDec(f.Type, blds[i])
		if err != nil {
			return nil, err
		}
		d.decs = append(d.decs, dec)
		if _, dup := d.names[f.Name]; !dup {
			d.names[f.Name] = i
		}
	}
	return d, nil
}

// object decodes the object at the cursor ('{' not yet consumed).
func (d *fieldsDec) object(s *scan) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	clear(d.seen)
	if s.peek() == '}' {
		s.i++
	} else {
		for {
			key, err := s.str(&d.keyBuf)
			if err != nil {
				return err
			}
			if err := s.expect(':'); err != nil {
				return err
			}
			if i, ok := d.names[bytesString(key)]; ok {
				if d.seen[i] {
					return fmt.Errorf("key %q appears twice", key)
				}
				d.seen[i] = true
				if err := d.decs[i](s); err != nil {
					return fmt.Errorf("key %q: %w", key, err)
				}
			} else if err := s.skip(); err != nil {
				return err
			}
			c := s.peek()
			s.i++
			if c == '}' {
				break
			}
			if c != ',' {
				s.i--
				return s.errf("expected ',' or '}'")
			}
		}
	}
	for i, ok := range d.seen {
		if !ok {
			d.blds[i].AppendNull()
		}
	}
	return nil
}

func newValueDec(dt arrow.DataType, bld array.Builder) (valueDec, error) {
	switch t := dt.(type) {
	case *arrow.NullType:
		b := bld.(*array.NullBuilder)
		return func(s *scan) error {
			if s.peek() == 'n' && s.literal("null") {
				b.AppendNull()
				return nil
			}
			return s.errf("expected null (the key was null in every line schema inference looked at)")
		}, nil
	case *arrow.BooleanType:
		b := bld.(*array.BooleanBuilder)
		return func(s *scan) error {
			switch s.peek() {
			case 't':
				if s.literal("true") {
					b.Append(true)
					return nil
				}
			case 'f':
				if s.literal("false") {
					b.Append(false)
					return nil
				}
			case 'n':
				if s.literal("null") {
					b.AppendNull()
					return nil
				}
			}
			return s.errf("expected a bool")
		}, nil
	case *arrow.Int64Type:
		b := bld.(*array.Int64Builder)
		return func(s *scan) error {
			if s.peek() == 'n' && s.literal("null") {
				b.AppendNull()
				return nil
			}
			start := s.i
			n := s.number()
			v, err := strconv.ParseInt(bytesString(n), 10, 64)
			if err != nil {
				s.i = start
				return s.errf("expected an int64")
			}
			b.Append(v)
			return nil
		}, nil
	case *arrow.Float64Type:
		b := bld.(*array.Float64Builder)
		return func(s *scan) error {
			if s.peek() == 'n' && s.literal("null") {
				b.AppendNull()
				return nil
			}
			start := s.i
			n := s.number()
			v, err := strconv.ParseFloat(bytesString(n), 64)
			if err != nil || len(n) == 0 {
				s.i = start
				return s.errf("expected a number")
			}
			b.Append(v)
			return nil
		}, nil
	case *arrow.StringType:
		b := bld.(*array.StringBuilder)
		var buf []byte
		return func(s *scan) error {
			if s.peek() == 'n' && s.literal("null") {
				b.AppendNull()
				return nil
			}
			v, err := s.str(&buf)
			if err != nil {
				return err
			}
			b.BinaryBuilder.Append(v)
			return nil
		}, nil
	case *arrow.ListType:
		b := bld.(*array.ListBuilder)
		elem, err := newValueDec(t.Elem(), b.ValueBuilder())
		if err != nil {
			return nil, err
		}
		return func(s *scan) error {
			switch s.peek() {
			case 'n':
				if s.literal("null") {
					b.AppendNull()
					return nil
				}
			case '[':
				s.i++
				b.Append(true)
				if s.peek() == ']' {
					s.i++
					return nil
				}
				for {
					if err := elem(s); err != nil {
						return err
					}
					c := s.peek()
					s.i++
					if c == ']' {
						return nil
					}
					if c != ',' {
						s.i--
						return s.errf("expected ',' or ']'")
					}
				}
			}
			return s.errf("expected a list")
		}, nil
	case *arrow.StructType:
		b := bld.(*array.StructBuilder)
		blds := make([]array.Builder, b.NumField())
		for i := range blds {
			blds[i] = b.FieldBuilder(i)
		}
		fd, err := newFieldsDec(t.Fields(), blds)
		if err != nil {
			return nil, err
		}
		return func(s *scan) error {
			switch s.peek() {
			case 'n':
				if s.literal("null") {
					b.AppendNull()
					return nil
				}
			case '{':
				b.Append(true)
				return fd.object(s)
			}
			return s.errf("expected an object")
		}, nil
	}
	return nil, errUnsupported
}

// lineDecoder decodes JSON lines into a RecordBuilder.
type lineDecoder struct {
	rb   *array.RecordBuilder
	fast *fieldsDec // nil: use rb.UnmarshalJSON
	s    scan
}

func newLineDecoder(rb *array.RecordBuilder) *lineDecoder {
	fd, err := newFieldsDec(rb.Schema().Fields(), rb.Fields())
	if err != nil {
		fd = nil
	}
	return &lineDecoder{rb: rb, fast: fd}
}

// decode appends the object on line to the builder.
func (d *lineDecoder) decode(line []byte) error {
	if d.fast == nil {
		return d.rb.UnmarshalJSON(line)
	}
	s := &d.s
	s.b, s.i = line, 0
	if s.peek() != '{' {
		return s.errf("expected a JSON object (the format is one object per line)")
	}
	if err := d.fast.object(s); err != nil {
		return err
	}
	if s.ws(); s.i < len(s.b) { // not peek: it also says 0 for a NUL byte
		return s.errf("unexpected text after the object")
	}
	return nil
}
