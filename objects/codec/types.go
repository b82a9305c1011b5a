package codec

import (
	"encoding"
	"fmt"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/fxamacker/cbor/v2"
	"google.golang.org/protobuf/proto"
)

// rawKind says which raw fast path a type takes.
type rawKind uint8

const (
	rawNone rawKind = iota
	rawBytes
	rawString
	rawNum
)

// typeInfo is what the codec knows about one Go type, computed once per type.
type typeInfo struct {
	t     reflect.Type
	err   *UnsupportedTypeError // non-nil: no value of this type can be encoded
	raw   rawKind               // a raw fast path for named slice and string types
	num   numKind               // element kind when raw == rawNum
	proto bool                  // a protobuf message pointer: ProtoCodec by default
	walk  bool                  // values must be walked before encoding: interfaces or recursion inside
	refs  bool                  // the encoding may hold refs: an interface or a custom CBOR marshaler inside
	// scalar: a named boolean or integer type (time.Duration, a user's enum) with no
	// marshaler or unmarshaler of its own, which CBOR encodes exactly as its underlying
	// type: encodeSlow and decodeCBOR write and read it by hand (encodeScalar,
	// decodeScalar), not through the CBOR library's reflection.
	scalar bool

	fieldsOnce sync.Once
	fields     []int // struct types: indexes of encoded fields whose type needs a walk
}

var infoCache sync.Map // reflect.Type -> *typeInfo

// infoSlots is a direct-mapped cache in front of infoCache, indexed by the address of the
// type's descriptor: a value's type is looked up once or more per encode and decode, and
// a slot's load and compare cost a few nanoseconds where the sync.Map's hashing of the
// interface key costs tens. A slot holds the last type that mapped to it.
var infoSlots [256]atomic.Pointer[typeInfo]

func infoSlot(t reflect.Type) *atomic.Pointer[typeInfo] {
	p := uintptr((*[2]unsafe.Pointer)(unsafe.Pointer(&t))[1]) // the *rtype inside the interface
	return &infoSlots[(p>>4^p>>12)&uintptr(len(infoSlots)-1)]
}

func info(t reflect.Type) *typeInfo {
	slot := infoSlot(t)
	if ti := slot.Load(); ti != nil && ti.t == t {
		return ti
	}
	var ti *typeInfo
	if v, ok := infoCache.Load(t); ok {
		ti = v.(*typeInfo)
	} else {
		v, _ := infoCache.LoadOrStore(t, analyze(t))
		ti = v.(*typeInfo)
	}
	slot.Store(ti)
	return ti
}

var (
	typeCBORMarshaler   = reflect.TypeFor[cbor.Marshaler]()
	typeBinaryMarshaler = reflect.TypeFor[encoding.BinaryMarshaler]()
	typeProtoMessage    = reflect.TypeFor[proto.Message]()
	typeArrowArray      = reflect.TypeFor[arrow.Array]()
	typeRefPayloader    = reflect.TypeFor[interface{ RefPayload() []byte }]()
	typeTime            = reflect.TypeFor[time.Time]()
	typeBigInt          = reflect.TypeFor[big.Int]()
	typeTextMarshaler   = reflect.TypeFor[encoding.TextMarshaler]()
	typeTextUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// basicTypes holds, by kind, the predeclared types that cannot hold a reference (no
// methods, no elements): MayHoldRefs answers for them without the cache.
var basicTypes = func() (b [reflect.UnsafePointer + 1]reflect.Type) {
	for _, t := range []reflect.Type{reflect.TypeFor[bool](), reflect.TypeFor[int](), reflect.TypeFor[int8](),
		reflect.TypeFor[int16](), reflect.TypeFor[int32](), reflect.TypeFor[int64](), reflect.TypeFor[uint](),
		reflect.TypeFor[uint8](), reflect.TypeFor[uint16](), reflect.TypeFor[uint32](), reflect.TypeFor[uint64](),
		reflect.TypeFor[uintptr](), reflect.TypeFor[float32](), reflect.TypeFor[float64](),
		reflect.TypeFor[complex64](), reflect.TypeFor[complex128](), reflect.TypeFor[string]()} {
		b[t.Kind()] = t
	}
	return b
}()

// implements reports whether t or *t implements iface (the encoder takes the address of
// addressable values, as fxamacker/cbor does).
func implements(t, iface reflect.Type) bool {
	return t.Implements(iface) || t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && reflect.PointerTo(t).Implements(iface)
}

func analyze(t reflect.Type) *typeInfo {
	ti := &typeInfo{t: t}
	if t.Kind() == reflect.Pointer && t.Implements(typeProtoMessage) {
		ti.proto = true
		return ti
	}
	a := analyzer{top: t, state: make(map[reflect.Type]uint8)}
	if err := a.visit(t, ""); err != nil {
		ti.err = err
		return ti
	}
	ti.walk = a.iface || a.cycle
	ti.refs = a.iface || a.marshaler
	if implements(t, typeCBORMarshaler) || implements(t, typeBinaryMarshaler) {
		return ti
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		ti.scalar = !implements(t, typeCBORUnmarshaler) && !implements(t, typeBinaryUnmarshaler) &&
			!implements(t, typeTextMarshaler) && !implements(t, typeTextUnmarshaler)
	case reflect.String:
		ti.raw = rawString
	case reflect.Slice:
		et := t.Elem()
		if et.Kind() == reflect.Uint8 {
			ti.raw = rawBytes // as fxamacker/cbor: any slice of uint8-kind is a byte string
		} else if k, ok := kindOf(et.Kind()); ok && !implements(et, typeCBORMarshaler) && !implements(et, typeBinaryMarshaler) {
			ti.raw, ti.num = rawNum, k
		}
	}
	return ti
}

// analyzer walks the graph of types reachable from top, as the CBOR encoder would.
type analyzer struct {
	top       reflect.Type
	state     map[reflect.Type]uint8 // 1 on the DFS stack, 2 done
	iface     bool                   // an interface type is reachable
	cycle     bool                   // a type is reachable from itself
	marshaler bool                   // a type with its own MarshalCBOR is reachable
}

func (a *analyzer) fail(path string, leaf reflect.Type, reason string) *UnsupportedTypeError {
	return &UnsupportedTypeError{Type: a.top, Path: path, Leaf: leaf, Reason: reason}
}

const arrowNested = "Arrow values can only be encoded as the top-level value (pass the arrow.Record or arrow.Table itself)"

func (a *analyzer) visit(t reflect.Type, path string) *UnsupportedTypeError {
	switch a.state[t] {
	case 1:
		a.cycle = true
		return nil
	case 2:
		return nil
	}
	a.state[t] = 1
	defer func() { a.state[t] = 2 }()

	if t.Implements(typeArrowRecord) || t.Implements(typeArrowTable) || t.Implements(typeArrowArray) {
		return a.fail(path, t, arrowNested)
	}
	if implements(t, typeProtoMessage) {
		if path == "" && t.Kind() == reflect.Struct {
			return a.fail(path, t, "protobuf messages are encoded by pointer; pass *"+t.String())
		}
		return a.fail(path, t, "protobuf messages can only be encoded as the top-level value "+
			"(inside CBOR they would lose oneofs and unknown fields); register a Codec for the enclosing type")
	}
	if t == typeTime || t == typeBigInt {
		return nil
	}
	if t.Kind() == reflect.Interface {
		a.iface = true
		return nil
	}
	if implements(t, typeCBORMarshaler) {
		a.marshaler = true
		return nil
	}
	if implements(t, typeRefPayloader) {
		return a.fail(path, t, "it has a RefPayload method but no MarshalCBOR; a codec.Ref must implement both")
	}
	if implements(t, typeBinaryMarshaler) {
		return nil
	}
	switch t.Kind() {
	case reflect.Chan:
		return a.fail(path, t, "channels cannot be sent to another process")
	case reflect.Func:
		return a.fail(path, t, "functions cannot be sent to another process (register a task or pass data)")
	case reflect.UnsafePointer:
		return a.fail(path, t, "unsafe.Pointer cannot be sent to another process")
	case reflect.Uintptr:
		return a.fail(path, t, "uintptr holds an address, meaningless in another process")
	case reflect.Complex64, reflect.Complex128:
		return a.fail(path, t, "CBOR has no complex numbers (use two floats)")
	case reflect.Pointer:
		return a.visit(t.Elem(), path)
	case reflect.Slice, reflect.Array:
		return a.visit(t.Elem(), path+"[]")
	case reflect.Map:
		if err := a.visit(t.Key(), path+"[key]"); err != nil {
			return err
		}
		return a.visit(t.Elem(), path+"[]")
	case reflect.Struct:
		return a.visitFields(t, path, map[reflect.Type]bool{t: true})
	}
	return nil
}

// unexportedReason is why a struct with an unexported field that holds data cannot be
// encoded: the field would silently arrive as its zero value.
const unexportedReason = "unexported fields are not encoded, so the receiving process would see its zero value; " +
	"export the field, or tag it `cbor:\"-\"` to leave it out on purpose " +
	"(or give the type MarshalCBOR and UnmarshalCBOR methods, or register a Codec for it)"

// visitFields visits the fields the CBOR encoder would write, following embedded structs.
// An unexported field that holds data and is not tagged "-" is an error: the encoder
// would drop it without a word. embedding holds the embedded struct types being expanded,
// to stop on a struct that embeds itself through a pointer.
func (a *analyzer) visitFields(t reflect.Type, path string, embedding map[reflect.Type]bool) *UnsupportedTypeError {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !fieldEncoded(f) {
			if droppedSilently(f) {
				return a.fail(path+"."+f.Name, f.Type, unexportedReason)
			}
			continue
		}
		if promoted(f) {
			et := f.Type
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct && !leafStruct(et) {
				if embedding[et] {
					a.cycle = true
					continue
				}
				embedding[et] = true
				err := a.visitFields(et, path, embedding)
				delete(embedding, et)
				if err != nil {
					return err
				}
				continue
			}
		}
		if err := a.visit(f.Type, path+"."+f.Name); err != nil {
			return err
		}
	}
	return nil
}

// droppedSilently reports whether f is a field the encoder skips although it may hold
// data, and nobody said to skip it: unexported, not tagged "-" (cbor, or json when there
// is no cbor tag, as fieldEncoded reads them), not the blank field and not of a zero-size
// type (struct{}, [0]func(): markers that hold nothing).
func droppedSilently(f reflect.StructField) bool {
	if f.IsExported() || f.Name == "_" || f.Type.Size() == 0 {
		return false
	}
	tag := f.Tag.Get("cbor")
	if tag == "" {
		tag = f.Tag.Get("json")
	}
	return tag != "-"
}

// leafStruct reports whether the encoder treats struct type t as a whole rather than by
// its fields.
func leafStruct(t reflect.Type) bool {
	return t == typeTime || t == typeBigInt || implements(t, typeCBORMarshaler) || implements(t, typeBinaryMarshaler) ||
		implements(t, typeProtoMessage) || t.Implements(typeArrowRecord) || t.Implements(typeArrowTable) || t.Implements(typeArrowArray)
}

// fieldEncoded reports whether fxamacker/cbor encodes field f: exported or an embedded
// struct, and not tagged "-".
func fieldEncoded(f reflect.StructField) bool {
	ft := f.Type
	for ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	if !f.IsExported() && !(f.Anonymous && ft.Kind() == reflect.Struct) {
		return false
	}
	tag := f.Tag.Get("cbor")
	if tag == "" {
		tag = f.Tag.Get("json")
	}
	return tag != "-"
}

// promoted reports whether an encoded field is an embedded struct whose fields are
// promoted (no name in its tag).
func promoted(f reflect.StructField) bool {
	if !f.Anonymous {
		return false
	}
	tag := f.Tag.Get("cbor")
	if tag == "" {
		tag = f.Tag.Get("json")
	}
	name, _, _ := strings.Cut(tag, ",")
	return name == ""
}

// walkFields returns, for a struct type, the indexes of encoded fields worth walking.
func (ti *typeInfo) walkFields() []int {
	ti.fieldsOnce.Do(func() {
		for i := 0; i < ti.t.NumField(); i++ {
			f := ti.t.Field(i)
			if fieldEncoded(f) && info(f.Type).walk {
				ti.fields = append(ti.fields, i)
			}
		}
	})
	return ti.fields
}

// cycleCheckDepth is the nesting depth after which the walk tracks the pointers it is
// inside of, to tell a cycle from merely deep data (encoding/json does the same).
const cycleCheckDepth = 256

// walker checks a value whose type holds interfaces or is recursive, before the CBOR
// encoder sees it: the dynamic types inside interfaces must be encodable, and the value
// must be acyclic and no deeper than the decoder accepts (the encoder itself would recurse
// until the stack overflows, which no recover can catch).
type walker struct {
	top  reflect.Type
	seen map[ptrKey]struct{}

	lastT    reflect.Type // one-entry cache for dynamic types: []any tends to repeat them
	lastInfo *typeInfo
}

func (w *walker) info(t reflect.Type) *typeInfo {
	if t != w.lastT {
		w.lastT, w.lastInfo = t, info(t)
	}
	return w.lastInfo
}

type ptrKey struct {
	p uintptr
	n int
	t reflect.Type
}

func walkValue(ti *typeInfo, v reflect.Value) error {
	w := walker{top: ti.t}
	return w.walk(v, ti, 0)
}

func (w *walker) walk(v reflect.Value, ti *typeInfo, depth int) error {
	if depth > maxNesting {
		return &UnsupportedTypeError{Type: w.top, Leaf: ti.t,
			Reason: fmt.Sprintf("the value is nested more than %d levels deep", maxNesting)}
	}
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return nil
		}
		e := v.Elem()
		eti := w.info(e.Type())
		if eti.err != nil {
			return &UnsupportedTypeError{Type: w.top, Path: eti.err.Path, Leaf: eti.err.Leaf, Reason: eti.err.Reason}
		}
		if eti.proto {
			return &UnsupportedTypeError{Type: w.top, Leaf: e.Type(),
				Reason: "protobuf messages can only be encoded as the top-level value"}
		}
		if !eti.walk {
			return nil
		}
		return w.walk(e, eti, depth+1)
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		if depth > cycleCheckDepth {
			k := ptrKey{v.Pointer(), 0, v.Type()}
			if err := w.enter(k, v.Type()); err != nil {
				return err
			}
			defer delete(w.seen, k)
		}
		eti := info(v.Type().Elem())
		if !eti.walk {
			return nil
		}
		return w.walk(v.Elem(), eti, depth+1)
	case reflect.Struct:
		for _, i := range ti.walkFields() {
			f := v.Field(i)
			if err := w.walk(f, info(f.Type()), depth+1); err != nil {
				return w.prefix(err, "."+ti.t.Field(i).Name)
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice {
			if v.IsNil() {
				return nil
			}
			if depth > cycleCheckDepth {
				k := ptrKey{v.Pointer(), v.Len(), v.Type()}
				if err := w.enter(k, v.Type()); err != nil {
					return err
				}
				defer delete(w.seen, k)
			}
		}
		eti := info(v.Type().Elem())
		if !eti.walk {
			return nil
		}
		for i, n := 0, v.Len(); i < n; i++ {
			if err := w.walk(v.Index(i), eti, depth+1); err != nil {
				return w.prefix(err, "["+strconv.Itoa(i)+"]")
			}
		}
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		if depth > cycleCheckDepth {
			k := ptrKey{v.Pointer(), 0, v.Type()}
			if err := w.enter(k, v.Type()); err != nil {
				return err
			}
			defer delete(w.seen, k)
		}
		kti, eti := info(v.Type().Key()), info(v.Type().Elem())
		if !kti.walk && !eti.walk {
			return nil
		}
		it := v.MapRange()
		for it.Next() {
			if kti.walk {
				if err := w.walk(it.Key(), kti, depth+1); err != nil {
					return w.prefix(err, "[key]")
				}
			}
			if eti.walk {
				if err := w.walk(it.Value(), eti, depth+1); err != nil {
					return w.prefix(err, fmt.Sprintf("[%v]", it.Key()))
				}
			}
		}
	}
	return nil
}

func (w *walker) enter(k ptrKey, t reflect.Type) error {
	if w.seen == nil {
		w.seen = make(map[ptrKey]struct{})
	}
	if _, ok := w.seen[k]; ok {
		return &UnsupportedTypeError{Type: w.top, Leaf: t, Reason: "the value is cyclic (it contains itself)"}
	}
	w.seen[k] = struct{}{}
	return nil
}

// prefix adds a path segment to errors found below; cycle and depth errors keep no path
// (it would be thousands of segments long).
func (w *walker) prefix(err error, seg string) error {
	if e, ok := err.(*UnsupportedTypeError); ok && e.Leaf != nil && !strings.HasPrefix(e.Reason, "the value is") {
		if strings.Count(e.Path, ".")+strings.Count(e.Path, "[") < 32 {
			e.Path = seg + e.Path
		}
	}
	return err
}

// MayHoldRefs reports whether values of type t may hold object references (see Ref): t
// has an interface or a type with its own CBOR marshaler somewhere inside. The runtime
// looks for refs in a decoded value only then.
func MayHoldRefs(t reflect.Type) bool {
	if t == nil {
		return false
	}
	if k := t.Kind(); k < reflect.Kind(len(basicTypes)) && basicTypes[k] == t {
		return false // every Get and task argument of a plain number or string asks
	}
	return info(t).refs
}

// CheckType reports whether values of static type t can be encoded: nil when they can,
// else the *UnsupportedTypeError that Marshal of such a value returns (a channel, a
// function, an unexported field that holds data, ... anywhere inside). It answers as
// Marshal decides: a type with a registered Codec, a protobuf message pointer and a
// top-level Arrow record or table are fine. The answer is computed once per type and
// cached, as Marshal's is; for an interface type it is nil, the dynamic types inside
// being checked when a value is encoded. A function registry calls it for the argument
// and result types of the functions it registers, to report a type that cannot be sent
// before any value is.
func CheckType(t reflect.Type) error {
	if lookupCodec(t) != nil || t.Implements(typeArrowRecord) || t.Implements(typeArrowTable) {
		return nil
	}
	if ti := info(t); ti.err != nil {
		return ti.err
	}
	return nil
}
