package codec

import (
	"encoding"
	"fmt"
	"reflect"

	"github.com/fxamacker/cbor/v2"
)

// LossError says why values of a type do not survive an encoding and a decoding whole:
// the codec can encode them, but what it decodes is not all of what it encoded.
type LossError struct {
	Type   reflect.Type // the type asked about
	Path   string       // where the lossy part sits inside Type (".Field", "[]", "[key]"); "" for Type itself
	Leaf   reflect.Type // the lossy part's type
	Reason string
}

func (e *LossError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("codec: %v does not round-trip: %s", e.Type, e.Reason)
	}
	return fmt.Sprintf("codec: %v does not round-trip: %s (%v): %s", e.Type, e.Path, e.Leaf, e.Reason)
}

var (
	typeCBORUnmarshaler   = reflect.TypeFor[cbor.Unmarshaler]()
	typeBinaryUnmarshaler = reflect.TypeFor[encoding.BinaryUnmarshaler]()
)

// Lossless reports (nil) whether every value of type t comes back whole from Marshal and
// Unmarshal: every field of every struct inside is encoded (exported, not tagged "-"), no
// interface sits inside (it would decode as a generic value, not the type it held), and a
// type that encodes itself also decodes itself. What the codec always changes is allowed,
// as its doc says: pointers shared by two fields come back as two copies, time.Time loses
// its monotonic reading and its Location's name, NaN payloads are canonical, and a nil
// and an empty slice or map stay apart. The actor runtime asks it to decide whether it can
// checkpoint an actor's state by itself.
func Lossless(t reflect.Type) error {
	ti := info(t)
	if ti.err != nil && ti.err.Reason != unexportedReason {
		return ti.err
	} else if ti.proto {
		return nil
	}
	// An unexported field is a loss, reported as such (an actor's state is not sent as
	// an argument is: it only has to come back whole).
	l := lossCheck{top: t, seen: make(map[reflect.Type]bool)}
	if err := l.visit(t, ""); err != nil || ti.err == nil {
		return err
	}
	return ti.err
}

type lossCheck struct {
	top  reflect.Type
	seen map[reflect.Type]bool // visited (or being visited: a type that holds itself is fine)
}

func (l *lossCheck) fail(path string, leaf reflect.Type, reason string) error {
	return &LossError{Type: l.top, Path: path, Leaf: leaf, Reason: reason}
}

func (l *lossCheck) visit(t reflect.Type, path string) error {
	if l.seen[t] {
		return nil
	}
	l.seen[t] = true
	if t == typeTime || t == typeBigInt {
		return nil
	}
	if implements(t, typeCBORMarshaler) {
		if !implements(t, typeCBORUnmarshaler) {
			return l.fail(path, t, "it implements cbor.Marshaler but not cbor.Unmarshaler")
		}
		return nil
	}
	if implements(t, typeBinaryMarshaler) {
		if !implements(t, typeBinaryUnmarshaler) {
			return l.fail(path, t, "it implements encoding.BinaryMarshaler but not encoding.BinaryUnmarshaler")
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Interface:
		return l.fail(path, t, "an interface decodes as a generic value, not as the type it held")
	case reflect.Pointer:
		return l.visit(t.Elem(), path)
	case reflect.Slice, reflect.Array:
		return l.visit(t.Elem(), path+"[]")
	case reflect.Map:
		if err := l.visit(t.Key(), path+"[key]"); err != nil {
			return err
		}
		return l.visit(t.Elem(), path+"[]")
	case reflect.Struct:
		return l.fields(t, path)
	}
	return nil
}

// fields checks a struct's fields, following embedded structs as the encoder does.
func (l *lossCheck) fields(t reflect.Type, path string) error {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !fieldEncoded(f) {
			why := "unexported fields are not encoded"
			if f.IsExported() {
				why = `a field tagged "-" is not encoded`
			}
			return l.fail(path+"."+f.Name, f.Type, why)
		}
		et := f.Type
		for et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
		if promoted(f) && et.Kind() == reflect.Struct && !leafStruct(et) {
			if l.seen[et] {
				continue
			}
			l.seen[et] = true
			if err := l.fields(et, path); err != nil {
				return err
			}
			continue
		}
		if err := l.visit(f.Type, path+"."+f.Name); err != nil {
			return err
		}
	}
	return nil
}
