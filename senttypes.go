package ray

import (
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/ray-go/ray/objects/codec"
)

// sentType is a type that a registered remote function, actor constructor or method
// sends between processes (an argument, a result, a generator's item) and that the codec
// could not encode when it was registered.
type sentType struct {
	what, name, role string
	t                reflect.Type
}

var (
	sentTypesMu sync.Mutex
	badSent     []sentType
)

// checkSent checks, when a function or method is registered, that the codec can encode
// its argument and result types (codec.CheckType: a channel, a function, an unexported
// field that holds data, ... anywhere inside cannot be sent). What it cannot encode is
// remembered for Init to report (sentTypesErr): a Codec for the type may still be
// registered after this (in an init function: package-level variables, where functions
// are registered, are initialised first). The codec caches its answer per type, so the
// encode of every call pays nothing for it.
func checkSent(what, name string, args []reflect.Type, results ...reflect.Type) {
	for i, t := range args {
		noteSent(what, name, fmt.Sprintf("argument %d", i+1), t)
	}
	for i, t := range results {
		role := "result"
		if len(results) > 1 {
			role = fmt.Sprintf("result %d", i+1)
		}
		noteSent(what, name, role, t)
	}
}

// noteSent remembers t, the role (argument, result) of what name sends, for Init to
// report if the codec cannot encode it (see checkSent).
func noteSent(what, name, role string, t reflect.Type) {
	if codec.CheckType(t) == nil {
		return
	}
	sentTypesMu.Lock()
	badSent = append(badSent, sentType{what: what, name: name, role: role, t: t})
	sentTypesMu.Unlock()
}

// sentTypesErr is the error of Init for the registered functions and methods whose
// arguments or results the codec cannot encode (checkSent), one for each, joined; nil if
// there are none. It matches ErrEncode and codec.ErrUnsupportedType, and each says which
// function, which argument, the type, where inside it the problem is and what to do.
func sentTypesErr() error {
	sentTypesMu.Lock()
	defer sentTypesMu.Unlock()
	var errs []error
	for _, s := range badSent {
		if err := codec.CheckType(s.t); err != nil {
			errs = append(errs, fmt.Errorf("%w: %s %q: %s (%v) cannot be sent to another process: %w", ErrEncode, s.what, s.name, s.role, s.t, err))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return rayErrorf("ray: Init: %w", errors.Join(errs...))
}
