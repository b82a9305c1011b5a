package ray

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ray-go/ray/internal/base/pb"
)

// codeErr is an error type registered with RegisterError (pointer receiver).
type codeErr struct {
	Code   int
	Detail string
}

func (e *codeErr) Error() string { return fmt.Sprintf("code %d: %s", e.Code, e.Detail) }

// valErr is a registered error type with a value receiver.
type valErr struct{ Reason string }

func (e valErr) Error() string { return "val: " + e.Reason }

// plainErr is an error type not registered.
type plainErr struct{ Code int }

func (e *plainErr) Error() string { return fmt.Sprintf("plain %d", e.Code) }

func init() {
	RegisterError[*codeErr]("ray_test.codeErr")
	RegisterError[valErr]("ray_test.valErr")
}

type typedErrActor struct{ Calls int }

var (
	failTyped = Task1("ray_test.failTyped", func(_ context.Context, code int) (int, error) {
		return 0, &codeErr{Code: code, Detail: "typed"}
	})
	failWrapped = Task1("ray_test.failWrapped", func(_ context.Context, code int) (int, error) {
		return 0, fmt.Errorf("while working: %w", &codeErr{Code: code, Detail: "wrapped"})
	})
	failJoined = Task0("ray_test.failJoined", func(_ context.Context) (int, error) {
		return 0, errors.Join(errors.New("first"), valErr{Reason: "second"})
	})
	failPlain = Task0("ray_test.failPlain", func(_ context.Context) (int, error) {
		return 0, &plainErr{Code: 5}
	})
	failTypedCancelled = Task0("ray_test.failTypedCancelled", func(_ context.Context) (int, error) {
		return 0, fmt.Errorf("%w (%w)", &codeErr{Code: 9, Detail: "with a sentinel"}, ErrCancelled)
	})
	// passTyped returns the error of the failTyped task it waited for: unchanged, or wrapped.
	passTyped = Task2("ray_test.passTyped", func(ctx context.Context, code int, wrap bool) (int, error) {
		_, err := Get(ctx, failTyped.Remote(ctx, V(code)))
		if wrap {
			err = fmt.Errorf("passed on: %w", err)
		}
		return 0, err
	})
	// passTwice is one level more: passTyped's error, returned again.
	passTwice = Task1("ray_test.passTwice", func(ctx context.Context, code int) (int, error) {
		_, err := Get(ctx, passTyped.Remote(ctx, V(code), V(true)))
		return 0, err
	})
	typedErrClass  = Actor("ray_test.typedErrActor", func() *typedErrActor { return &typedErrActor{} })
	typedErrMethod = Method1(typedErrClass, "Fail", func(a *typedErrActor, _ context.Context, code int) (string, error) {
		a.Calls++
		return "", &codeErr{Code: code, Detail: fmt.Sprintf("call %d", a.Calls)}
	})
)

// wantCode checks that err, a failed Get's error, is a *TaskError of function fn that
// carries a *codeErr of code and detail.
func wantCode(t *testing.T, what string, err error, fn string, code int, detail string) {
	t.Helper()
	var te *TaskError
	if !errors.As(err, &te) || te.Function != fn {
		t.Errorf("%s: %v (%T); want a *TaskError of %s", what, err, err, fn)
		return
	}
	var ce *codeErr
	if !errors.As(err, &ce) {
		t.Errorf("%s: errors.As(%v, *codeErr) is false", what, err)
		return
	}
	if ce.Code != code || ce.Detail != detail {
		t.Errorf("%s: *codeErr %+v; want Code %d, Detail %q", what, *ce, code, detail)
	}
	if !strings.Contains(err.Error(), ce.Error()) {
		t.Errorf("%s: message %q lacks the error's own %q", what, err, ce.Error())
	}
}

// TestRegisteredErrorTypes: the error a task or actor method returns reaches its caller
// with its type and fields when its type is registered (RegisterError), returned as is,
// wrapped with %w or inside errors.Join, and through tasks that return it again; an error
// of a type not registered stays text; the *TaskError and its sentinels are as before.
// Before RegisterError, errors.As found nothing and Code was lost.
func TestRegisteredErrorTypes(t *testing.T) {
	ctx := timeout(t)
	_, err := Get(ctx, failTyped.Remote(ctx, V(42)))
	wantCode(t, "returned", err, "ray_test.failTyped", 42, "typed")
	_, err = Get(ctx, failWrapped.Remote(ctx, V(43)))
	wantCode(t, "wrapped", err, "ray_test.failWrapped", 43, "wrapped")
	if err != nil && !strings.Contains(err.Error(), "while working: code 43: wrapped") {
		t.Errorf("wrapped: message %q lacks the wrapping text", err)
	}
	_, err = Get(ctx, passTyped.Remote(ctx, V(44), V(false)))
	wantCode(t, "nested, unchanged", err, "ray_test.passTyped", 44, "typed")
	_, err = Get(ctx, passTyped.Remote(ctx, V(45), V(true)))
	wantCode(t, "nested, wrapped", err, "ray_test.passTyped", 45, "typed")
	_, err = Get(ctx, passTwice.Remote(ctx, V(46)))
	wantCode(t, "nested twice", err, "ray_test.passTwice", 46, "typed")
	_, err = Get(ctx, typedErrMethod.Remote(ctx, typedErrClass.Remote(ctx), V(47)))
	wantCode(t, "actor method", err, "ray_test.typedErrActor.Fail", 47, "call 1")

	_, err = Get(ctx, failJoined.Remote(ctx))
	var ve valErr
	if !errors.As(err, &ve) || ve.Reason != "second" {
		t.Errorf("joined: errors.As(%v, valErr) = %v, %+v; want Reason second", err, errors.As(err, &ve), ve)
	}

	_, err = Get(ctx, failTypedCancelled.Remote(ctx))
	wantCode(t, "with a sentinel", err, "ray_test.failTypedCancelled", 9, "with a sentinel")
	if !errors.Is(err, ErrCancelled) || errors.Is(err, ErrObjectLost) {
		t.Errorf("with a sentinel: errors.Is ErrCancelled %v, ErrObjectLost %v; want true, false", errors.Is(err, ErrCancelled), errors.Is(err, ErrObjectLost))
	}

	_, err = Get(ctx, failPlain.Remote(ctx))
	var pe *plainErr
	var te *TaskError
	if errors.As(err, &pe) || !errors.As(err, &te) || te.Unwrap() != nil || !strings.Contains(err.Error(), "plain 5") {
		t.Errorf("not registered: %v; want a *TaskError with the text only", err)
	}
}

// TestTypedErrorWire: the encoding of a registered error in the wire form of a failure,
// and what the caller makes of wire forms it cannot rebuild.
func TestTypedErrorWire(t *testing.T) {
	name, data := typedError(fmt.Errorf("a: %w", errors.Join(errors.New("b"), &codeErr{Code: 1, Detail: "d"})))
	if name != "ray_test.codeErr" || len(data) == 0 {
		t.Fatalf("typedError: %q, %d bytes", name, len(data))
	}
	info := &pb.ErrorInfo{Kind: pb.ErrorInfo_APPLICATION, Function: "f", Message: "m", ErrorType: name, ErrorData: data}
	var ce *codeErr
	if err := fromInfo(info); !errors.As(err, &ce) || ce.Code != 1 || ce.Detail != "d" {
		t.Errorf("fromInfo: %v", err)
	}
	if n, _ := typedError(&plainErr{}); n != "" {
		t.Errorf("an error not registered is sent as %q", n)
	}
	if n, _ := typedError(&codeErr{Detail: strings.Repeat("x", maxErrorData)}); n != "" {
		t.Errorf("an error of more than %d bytes is sent as %q", maxErrorData, n)
	}
	// A type this process does not know (another build of the program): the text, and why.
	info.ErrorType = "ray_test.unknown"
	err := fromInfo(info)
	if errors.As(err, &ce) || !strings.Contains(err.Error(), `m (its error type "ray_test.unknown" is not registered in this process (ray.RegisterError))`) {
		t.Errorf("unknown type: %v", err)
	}
	info.ErrorType, info.ErrorData = "ray_test.codeErr", []byte{'C', 0xff}
	if err := fromInfo(info); errors.As(err, &ce) || !strings.Contains(err.Error(), "cannot be decoded") {
		t.Errorf("corrupt data: %v", err)
	}
}

// TestRegisterErrorMisuse: RegisterError panics on a taken name, a type registered twice
// and an interface type.
func TestRegisterErrorMisuse(t *testing.T) {
	for what, f := range map[string]func(){
		"taken name": func() { RegisterError[*plainErr]("ray_test.codeErr") },
		"twice":      func() { RegisterError[*codeErr]("ray_test.codeErr2") },
		"interface":  func() { RegisterError[error]("ray_test.iface") },
		"no name":    func() { RegisterError[*plainErr]("") },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", what)
				}
			}()
			f()
		}()
	}
}
