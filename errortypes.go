package ray

import (
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/objects/codec"
	"github.com/ray-go/ray/tasks/worker"
)

// errorTypes is the registry of RegisterError: the error types a task's failure carries
// to its caller, by Go type and by registered name.
var errorTypes struct {
	sync.RWMutex
	byType map[reflect.Type]string
	byName map[string]reflect.Type
}

// RegisterError registers error type E under name, so that a task or actor method whose
// function returns an E (or an error that wraps one, with %w or errors.Join, at any
// depth) fails with a *TaskError that carries it: the worker encodes the E with the codec
// (as a result is encoded: exported fields), the caller decodes it, and errors.As(err,
// &e) on the error Get returns finds it, its fields as the task set them; TaskError.Unwrap
// returns it. It survives nesting: a task that returns the error of a task it waited for
// (unchanged or wrapped) passes it on. Everything else about the *TaskError is as for any
// other failure (its message, errors.Is with the sentinel errors). The error of a type
// not registered reaches the caller as its text only (TaskError.Message).
//
// E is the type the function returns: a pointer type such as *MyErr when its Error method
// has a pointer receiver (errors.As(err, &target) then needs a target of type *MyErr).
// name identifies the type in every process (like a remote function's name, it survives
// refactors): register it at package level, in an init function, so that every process
// of the job has it. A type that the codec cannot encode (one with an unexported field
// that holds data, say) makes Init fail, saying why. The first registered error found in
// the chain (in errors.As's order) is the one carried; its encoding must stay within 100
// KiB (larger: its text only). RegisterError panics if name is empty or taken, E is an
// interface type, or E is registered already.
func RegisterError[E error](name string) {
	t := reflect.TypeFor[E]()
	switch {
	case name == "":
		panic("ray: RegisterError of " + t.String() + " needs a name")
	case t.Kind() == reflect.Interface:
		panic("ray: RegisterError needs a concrete error type, not interface " + t.String())
	}
	errorTypes.Lock()
	defer errorTypes.Unlock()
	if old, ok := errorTypes.byName[name]; ok {
		panic(fmt.Sprintf("ray: RegisterError %v: name %q is taken by %v", t, name, old))
	}
	if old, ok := errorTypes.byType[t]; ok {
		panic(fmt.Sprintf("ray: RegisterError %v: registered already, as %q", t, old))
	}
	if errorTypes.byType == nil {
		errorTypes.byType, errorTypes.byName = make(map[reflect.Type]string), make(map[string]reflect.Type)
	}
	errorTypes.byType[t], errorTypes.byName[name] = name, t
	noteSent("error type", name, "its value", t)
}

// maxErrorData bounds the encoding of a registered error that a failure carries (a
// failed result travels in one message with others; see pb.InlineArgBytes).
const maxErrorData = pb.InlineArgBytes

// typedError finds the first error in err's chain whose type is registered
// (RegisterError) and encodes it: what a worker puts in the failure's ErrorInfo
// (error_type, error_data). "" if there is none, or it cannot be encoded within
// maxErrorData.
func typedError(err error) (string, []byte) {
	errorTypes.RLock()
	n := len(errorTypes.byType)
	errorTypes.RUnlock()
	if n == 0 {
		return "", nil
	}
	var name string
	var found error
	walkErrors(err, func(e error) bool {
		errorTypes.RLock()
		nm, ok := errorTypes.byType[reflect.TypeOf(e)]
		errorTypes.RUnlock()
		if ok {
			name, found = nm, e
		}
		return ok
	})
	if found == nil {
		return "", nil
	}
	data, encErr := codec.MarshalValue(found)
	if encErr != nil || len(data) > maxErrorData {
		return "", nil
	}
	return name, data
}

// walkErrors calls f with err and the errors it wraps, depth first, in errors.As's
// order, until f returns true.
func walkErrors(err error, f func(error) bool) bool {
	for depth := 0; err != nil && depth < 1000; depth++ {
		if f(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if walkErrors(e, f) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// decodeTypedError rebuilds the registered error a failure carries (ErrorInfo.error_type
// and error_data); nil and no error when it carries none.
func decodeTypedError(info *pb.ErrorInfo) (error, error) {
	if info.ErrorType == "" {
		return nil, nil
	}
	errorTypes.RLock()
	t, ok := errorTypes.byName[info.ErrorType]
	errorTypes.RUnlock()
	if !ok {
		return nil, fmt.Errorf("its error type %q is not registered in this process (ray.RegisterError)", info.ErrorType)
	}
	p := reflect.New(t)
	if err := codec.UnmarshalInto(info.ErrorData, p.Interface()); err != nil {
		return nil, fmt.Errorf("its error of type %q cannot be decoded: %w", info.ErrorType, err)
	}
	e, _ := p.Elem().Interface().(error)
	if e == nil {
		return nil, errors.New("its error of type " + info.ErrorType + " decodes as nil")
	}
	return e, nil
}

// The workers of this process encode the registered errors task functions return.
func init() { worker.TypedError = typedError }
