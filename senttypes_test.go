package ray

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ray-go/ray/objects/codec"
)

// halfExported has a field the codec would drop: the other process would see 0 in it.
type halfExported struct {
	hidden int
	Shown  int
}

// skipsHidden leaves its unexported field out on purpose.
type skipsHidden struct {
	hidden int `cbor:"-"`
	Shown  int
}

// withCodec has unexported fields and a Codec registered after its task.
type withCodec struct{ n int }

type withCodecCodec struct{}

func (withCodecCodec) Name() string { return "ray_test.withCodec" }
func (withCodecCodec) MarshalAppend(dst []byte, v any) ([]byte, error) {
	return append(dst, byte(v.(withCodec).n)), nil
}
func (withCodecCodec) Unmarshal(data []byte, ptr any) error {
	if len(data) != 1 {
		return errors.New("one byte expected")
	}
	ptr.(*withCodec).n = int(data[0])
	return nil
}

var readSkipsHidden = Task1("ray_test.readSkipsHidden", func(_ context.Context, p skipsHidden) ([2]int, error) {
	return [2]int{p.hidden, p.Shown}, nil
})

// keepSent makes the test forget, when it ends, what it added to badSent, so that the other tests'
// Inits do not fail on the types it registered on purpose.
func keepSent(t *testing.T) {
	sentTypesMu.Lock()
	n := len(badSent)
	sentTypesMu.Unlock()
	t.Cleanup(func() {
		sentTypesMu.Lock()
		badSent = badSent[:n]
		sentTypesMu.Unlock()
	})
}

// TestInitRejectsUnexportedFields: a remote function, actor constructor or method whose
// argument or result type has an unexported field that holds data makes Init fail before
// anything is sent, naming the function, the argument, the type, the field and what to
// do; nothing of this runtime starts. Without the check the task silently saw hidden=0.
func TestInitRejectsUnexportedFields(t *testing.T) {
	keepSent(t)
	Task1("ray_test.halfExportedArg", func(_ context.Context, p halfExported) (int, error) { return p.hidden, nil })
	cls := Actor1("ray_test.halfExportedActor", func(_ context.Context, n int) (*struct{ N int }, error) { return &struct{ N int }{n}, nil })
	Method0(cls, "Get", func(_ *struct{ N int }, _ context.Context) ([]halfExported, error) { return nil, nil })
	_, err := Init(context.Background(), WithNumCPUs(1))
	if err == nil {
		t.Fatal("Init succeeded with a task whose argument loses a field")
	}
	msg := err.Error()
	for _, want := range []string{
		`ray: Init: cannot encode value: remote function "ray_test.halfExportedArg": argument 1 (ray.halfExported) cannot be sent to another process: ` +
			`codec: cannot encode ray.halfExported: .hidden (int): unexported fields are not encoded, so the receiving process would see its zero value; ` +
			"export the field, or tag it `cbor:\"-\"` to leave it out on purpose",
		`actor method "ray_test.halfExportedActor.Get": result ([]ray.halfExported) cannot be sent to another process: codec: cannot encode []ray.halfExported: [].hidden (int)`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("Init's error\n%s\ndoes not contain\n%s", msg, want)
		}
	}
	if !errors.Is(err, ErrEncode) || !errors.Is(err, codec.ErrUnsupportedType) {
		t.Errorf("Init's error matches ErrEncode %v, codec.ErrUnsupportedType %v; want both", errors.Is(err, ErrEncode), errors.Is(err, codec.ErrUnsupportedType))
	}
}

// TestInitAcceptsCodecRegisteredLater: a type with a Codec is fine, although the Codec is
// registered after the function (as an init function runs after the package-level
// variables that register functions).
func TestInitAcceptsCodecRegisteredLater(t *testing.T) {
	keepSent(t)
	Task1("ray_test.withCodecArg", func(_ context.Context, w withCodec) (int, error) { return w.n, nil })
	if err := sentTypesErr(); err == nil {
		t.Fatal("no error for withCodec before its Codec is registered")
	}
	codec.Register[withCodec](withCodecCodec{})
	if err := sentTypesErr(); err != nil {
		t.Fatalf("withCodec has a Codec now: %v", err)
	}
}

// TestUnexportedFieldsAtFirstSend: what registration cannot see (a value passed as any,
// to Call or Put) fails when it is sent, with the same error; a field tagged "-" is left
// out on purpose, the others arrive.
func TestUnexportedFieldsAtFirstSend(t *testing.T) {
	ctx := timeout(t)
	_, err := Put[any](ctx, halfExported{hidden: 7, Shown: 8})
	if !errors.Is(err, ErrEncode) || err == nil || !strings.Contains(err.Error(), ".hidden (int): unexported fields are not encoded") {
		t.Errorf("Put of a value with an unexported field: %v; want ErrEncode naming .hidden", err)
	}
	_, err = Get(ctx, Call[[2]int](ctx, "ray_test.readSkipsHidden", []any{halfExported{hidden: 7, Shown: 8}}))
	if !errors.Is(err, ErrEncode) || !strings.Contains(err.Error(), "argument 1: cannot encode value: codec: cannot encode ray.halfExported: .hidden (int)") {
		t.Errorf("Call with a value with an unexported field: %v; want ErrEncode naming argument 1 and .hidden", err)
	}
	got, err := Get(ctx, readSkipsHidden.Remote(ctx, V(skipsHidden{hidden: 7, Shown: 8})))
	if err != nil || got != [2]int{0, 8} {
		t.Errorf("a field tagged \"-\": %v, %v; want [0 8] (hidden left out on purpose)", got, err)
	}
	if err := codec.CheckType(reflect.TypeFor[skipsHidden]()); err != nil {
		t.Errorf("CheckType(skipsHidden): %v", err)
	}
}
