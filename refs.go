package ray

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/objects/codec"
)

// Refs inside values. An ObjectRef may sit anywhere inside a value passed to a task, put in
// the object store, returned by a task or held by an actor: it is encoded as the object's
// ID and its owner's address (a CBOR tag, codec.RefTag). The process that decodes it holds
// the object like the owner's own refs do: it registers with the owner as a borrower before
// the decoding returns, and lets go when its last copy of the ref is garbage-collected or
// released. The object lives while the owner or any borrower holds a ref (Ray's ownership
// protocol). See internal/assembly/core/borrow.go for the protocol.

// RefPayload implements codec.Ref: the ref's wire form (object ID and owner).
func (r ObjectRef[T]) RefPayload() []byte {
	if r.h == nil || r.h.err != nil {
		return nil
	}
	return core.RefPayload(r.h.id, r.h.ownerPID())
}

// MarshalCBOR encodes the ref inside a value (see codec.Ref). The zero ref encodes as
// CBOR null; a failed or released ref cannot be encoded.
func (r ObjectRef[T]) MarshalCBOR() ([]byte, error) {
	switch {
	case r.h == nil:
		return []byte{0xf6}, nil
	case r.h.err != nil:
		return nil, rayErrorf("ray: a failed ObjectRef cannot be passed inside a value: %w", r.h.err)
	case r.h.gone.Load():
		return nil, fmt.Errorf("ray: ObjectRef %s was released and cannot be passed inside a value", r.h.id)
	}
	return codec.AppendRef(nil, r.RefPayload()), nil
}

// UnmarshalCBOR decodes a ref encoded by MarshalCBOR. The ref is bound to the runtime that
// decodes it (it registers as a borrower) when the value reaches user code through Get or
// as a task argument.
func (r *ObjectRef[T]) UnmarshalCBOR(b []byte) error {
	if len(b) == 1 && b[0] == 0xf6 {
		r.h = nil
		return nil
	}
	p, err := codec.ParseRef(b)
	if err != nil {
		return err
	}
	nested, err := core.ParseNested([][]byte{p})
	if err != nil {
		return err
	}
	r.h = &handle{id: nested[0].ID, owner: nested[0].Owner}
	return nil
}

// errRefJSON is the error of encoding/json asked to encode or decode an ObjectRef.
var errRefJSON = errors.New("ray: an ObjectRef cannot be encoded with encoding/json: pass it as a task argument " +
	"or inside a value the ray codec encodes (Put, a task's argument or result, an actor's state)")

// MarshalJSON refuses to encode a ref with encoding/json, which would write {} and lose it
// without a word (a ref lives only inside values the runtime encodes: it registers the
// borrower with the owner). The zero ref, which refers to nothing, encodes as null.
func (r ObjectRef[T]) MarshalJSON() ([]byte, error) {
	if r.h == nil {
		return []byte("null"), nil
	}
	return nil, fmt.Errorf("%w (ref %s)", errRefJSON, r.h.id)
}

// UnmarshalJSON decodes null as the zero ref and refuses anything else (see MarshalJSON).
func (r *ObjectRef[T]) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		r.h = nil
		return nil
	}
	return errRefJSON
}

// errHandleJSON is the error of encoding/json asked to encode or decode an ActorHandle.
var errHandleJSON = errors.New("ray: an ActorHandle cannot be encoded with encoding/json: pass it as a task argument " +
	"or inside a value the ray codec encodes (Put, a task's argument or result, an actor's state), or pass its " +
	"name (a named actor: GetActor)")

// MarshalJSON refuses to encode a handle with encoding/json, which would write {} and
// lose it without a word (as ObjectRef's). The zero handle encodes as null.
func (h ActorHandle[T]) MarshalJSON() ([]byte, error) {
	if h.err == nil && h.id.IsZero() {
		return []byte("null"), nil
	}
	return nil, fmt.Errorf("%w (actor %s)", errHandleJSON, h.id)
}

// UnmarshalJSON decodes null as the zero handle and refuses anything else.
func (h *ActorHandle[T]) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*h = ActorHandle[T]{}
		return nil
	}
	return errHandleJSON
}

// bind implements binder.
func (r ObjectRef[T]) bind(c *core.Core) {
	if r.h != nil {
		r.h.bind(c)
	}
}

// binder is implemented by ObjectRef types (bindRefs finds them by reflection).
type binder interface{ bind(c *core.Core) }

var binderType = reflect.TypeFor[binder]()

// ownerPID is the owner of h's object.
func (h *handle) ownerPID() *pb.PID {
	if h.owner != nil {
		return h.owner
	}
	if h.core != nil {
		return h.core.OwnerPID()
	}
	return nil
}

// bind attaches a decoded handle to runtime c: c takes a reference (a borrow when another
// runtime owns the object) until the handle is collected or released.
func (h *handle) bind(c *core.Core) {
	if h.core != nil || h.err != nil || c == nil {
		return
	}
	h.core = c
	c.Hold(h.id, h.owner)
	toNursery(h)
}

// bindRefs binds every ObjectRef inside v to the runtime of ctx and returns v. Only types
// that may hold refs are walked. It takes and returns a value, not a pointer, so that the
// caller's variable stays on its stack for the types that cannot hold refs (every Get and
// task argument would otherwise move its value to the heap); binding mutates the handles
// the refs point to, which a copy shares.
func bindRefs[T any](ctx context.Context, v T) T {
	if !codec.MayHoldRefs(reflect.TypeFor[T]()) {
		return v
	}
	tc, ok := core.FromContext(ctx)
	if !ok {
		return v
	}
	p := new(T)
	*p = v
	walkBind(reflect.ValueOf(p).Elem(), tc.Core, 0)
	return *p
}

func walkBind(v reflect.Value, c *core.Core, depth int) {
	if depth > 64 || !v.IsValid() {
		return
	}
	t := v.Type()
	if t.Implements(binderType) {
		if v.CanInterface() {
			v.Interface().(binder).bind(c)
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkBind(v.Elem(), c, depth+1)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if t.Field(i).IsExported() {
				walkBind(v.Field(i), c, depth+1)
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return
		}
		if !codec.MayHoldRefs(t.Elem()) {
			return
		}
		for i := range v.Len() {
			walkBind(v.Index(i), c, depth+1)
		}
	case reflect.Map:
		if !codec.MayHoldRefs(t.Elem()) {
			return
		}
		it := v.MapRange()
		for it.Next() {
			walkBind(it.Value(), c, depth+1)
		}
	}
}

// escapeRefs registers the task's owner as a borrower of the refs inside the task's return
// value, before the result is sent (see core.Escape).
func escapeRefs(ctx context.Context, payloads [][]byte) error {
	tc, ok := core.FromContext(ctx)
	if !ok || tc.Spec == nil || tc.Spec.Owner == nil {
		return nil
	}
	nested, err := core.ParseNested(payloads)
	if err != nil {
		return fmt.Errorf("%w: result: %v", ErrEncode, err)
	}
	tc.Nested = append(tc.Nested, tc.Core.Escape(nested, tc.Spec.Owner)...)
	return nil
}

// nestedOf parses the refs MarshalRefs found.
func nestedOf(payloads [][]byte) ([]core.Nested, error) {
	if len(payloads) == 0 {
		return nil, nil
	}
	n, err := core.ParseNested(payloads)
	if err != nil {
		return nil, errors.Join(ErrEncode, err)
	}
	return n, nil
}
