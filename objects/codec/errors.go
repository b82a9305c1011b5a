package codec

import (
	"errors"
	"fmt"
	"reflect"
)

// Sentinel errors to branch on with errors.Is. Every error this package returns for one of
// these conditions wraps the matching sentinel.
var (
	// ErrUnsupportedType: the value's type (or something inside it) cannot be encoded.
	ErrUnsupportedType = errors.New("codec: unsupported type")
	// ErrTypeMismatch: the data is well formed but holds something that cannot be decoded
	// into the requested Go type.
	ErrTypeMismatch = errors.New("codec: type mismatch")
	// ErrCorrupt: the data is truncated, malformed, or exceeds a decoding limit.
	ErrCorrupt = errors.New("codec: corrupt data")
)

// UnsupportedTypeError reports a value that cannot be encoded, found before any bytes were
// written: "codec: cannot encode chan int: channels cannot be sent to another process".
type UnsupportedTypeError struct {
	Type   reflect.Type // the type given to Marshal (the dynamic type for MarshalValue)
	Path   string       // where the offending type sits inside Type (".Field", "[]", "[3]"); "" for Type itself
	Leaf   reflect.Type // the offending type; equal to Type when Path is ""
	Reason string       // why it cannot be encoded
}

func (e *UnsupportedTypeError) Error() string {
	if e.Path == "" && e.Leaf == e.Type {
		return fmt.Sprintf("codec: cannot encode %v: %s", e.Type, e.Reason)
	}
	if e.Path == "" {
		return fmt.Sprintf("codec: cannot encode %v: %v: %s", e.Type, e.Leaf, e.Reason)
	}
	return fmt.Sprintf("codec: cannot encode %v: %s (%v): %s", e.Type, e.Path, e.Leaf, e.Reason)
}

// Is makes errors.Is(err, ErrUnsupportedType) true.
func (e *UnsupportedTypeError) Is(target error) bool { return target == ErrUnsupportedType }

// TypeMismatchError reports data that holds something the requested type cannot receive:
// "codec: cannot decode raw []int64 data into string".
type TypeMismatchError struct {
	Stored string       // what the data holds, e.g. "raw []int64 data", "CBOR map", "Arrow IPC record"
	Want   reflect.Type // the Go type asked for
	Err    error        // the underlying decoder's error, if any
}

func (e *TypeMismatchError) Error() string {
	s := fmt.Sprintf("codec: cannot decode %s into %v", e.Stored, e.Want)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is makes errors.Is(err, ErrTypeMismatch) true.
func (e *TypeMismatchError) Is(target error) bool { return target == ErrTypeMismatch }

// Unwrap returns the underlying decoder error.
func (e *TypeMismatchError) Unwrap() error { return e.Err }

// corruptError wraps ErrCorrupt with what was being decoded and why it failed.
type corruptError struct {
	msg string
	err error
}

func (e *corruptError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

func (e *corruptError) Is(target error) bool { return target == ErrCorrupt }
func (e *corruptError) Unwrap() error        { return e.err }

// corruptf builds a corrupt-data error; what names the format ("" for none).
func corruptf(what, format string, args ...any) error {
	msg := "codec: corrupt data: "
	if what != "" {
		msg = "codec: corrupt " + what + " data: "
	}
	return &corruptError{msg: msg + fmt.Sprintf(format, args...)}
}

// corruptWrap wraps a decoder's error as corrupt data.
func corruptWrap(what string, err error) error {
	return &corruptError{msg: "codec: corrupt " + what + " data", err: err}
}
