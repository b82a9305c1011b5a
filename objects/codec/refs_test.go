package codec

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// testRef stands in for the runtime's ObjectRef[T].
type testRef[T any] struct{ id []byte }

func (r testRef[T]) RefPayload() []byte           { return r.id }
func (r testRef[T]) MarshalCBOR() ([]byte, error) { return AppendRef(nil, r.id), nil }
func (r *testRef[T]) UnmarshalCBOR(b []byte) error {
	p, err := ParseRef(b)
	if err != nil {
		return err
	}
	r.id = p
	return nil
}

var _ Ref = testRef[int]{}

type holder struct {
	Name   string
	One    testRef[int]
	Many   []testRef[string]
	ByKey  map[string]testRef[int]
	Ptr    *testRef[int]
	Any    any
	Nested []any
}

func TestRefs(t *testing.T) {
	r := func(s string) testRef[int] { return testRef[int]{id: []byte(s)} }
	rs := func(s string) testRef[string] { return testRef[string]{id: []byte(s)} }
	p := r("ptr")
	h := holder{
		Name:   "h",
		One:    r("one"),
		Many:   []testRef[string]{rs("m1"), rs("m2")},
		ByKey:  map[string]testRef[int]{"b": r("kb"), "a": r("ka")},
		Ptr:    &p,
		Any:    r("any"),
		Nested: []any{1, []any{r("deep")}, map[string]any{"x": r("inmap")}},
	}
	data, refs, err := MarshalRefs(h)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ref := range refs {
		got = append(got, string(ref))
	}
	// encoding order: fields sorted by encoded name, map keys sorted
	want := []string{"any", "one", "ptr", "ka", "kb", "m1", "m2", "deep", "inmap"}
	if !reflect.DeepEqual(sorted(got), sorted(want)) {
		t.Fatalf("refs %q, want (in some order) %q", got, want)
	}
	scanned, err := ScanRefs(data)
	if err != nil || !reflect.DeepEqual(scanned, refs) {
		t.Fatalf("ScanRefs = %q, %v; MarshalRefs gave %q", scanned, err, refs)
	}
	// the values decode back, with refs typed where the type says so ...
	back, err := Unmarshal[holder](data)
	if err != nil {
		t.Fatal(err)
	}
	if string(back.One.id) != "one" || string(back.Many[1].id) != "m2" || string(back.Ptr.id) != "ptr" || string(back.ByKey["a"].id) != "ka" {
		t.Fatalf("decoded refs wrong: %+v", back)
	}
	// ... and as cbor.Tag inside interfaces
	tag, ok := back.Any.(cbor.Tag)
	if !ok || tag.Number != RefTag || !bytes.Equal(tag.Content.([]byte), []byte("any")) {
		t.Fatalf("ref in any decoded as %#v", back.Any)
	}
	// a top-level ref
	data, refs, err = MarshalRefs(r("top"))
	if err != nil || len(refs) != 1 || string(refs[0]) != "top" {
		t.Fatalf("top-level ref: %q, %v", refs, err)
	}
	if top, err := Unmarshal[testRef[int]](data); err != nil || string(top.id) != "top" {
		t.Fatalf("top-level ref decode: %v, %v", top, err)
	}
	// []testRef of 10k: the benchmark's shape
	many := make([]testRef[int], 10_000)
	for i := range many {
		many[i] = r(fmt.Sprintf("obj-%05d", i))
	}
	_, refs, err = MarshalRefs(many)
	if err != nil || len(refs) != 10_000 || string(refs[9999]) != "obj-09999" {
		t.Fatalf("10k refs: %d, %v", len(refs), err)
	}
}

func sorted(s []string) []string {
	out := append([]string{}, s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestRefsSkipScanForPlainTypes(t *testing.T) {
	type plain struct {
		A int
		B []string
		C map[string]float64
	}
	if info(reflect.TypeFor[plain]()).refs {
		t.Fatal("plain struct marked as possibly holding refs")
	}
	if !info(reflect.TypeFor[holder]()).refs || !info(reflect.TypeFor[[]any]()).refs {
		t.Fatal("ref-bearing types not marked")
	}
	for _, v := range []any{plain{A: 1}, []int64{1}, "s", nil} {
		_, refs, err := MarshalValueRefs(v)
		if err != nil || refs != nil {
			t.Fatalf("MarshalValueRefs(%T) = %v, %v", v, refs, err)
		}
	}
	// non-CBOR data holds no refs
	if refs, err := ScanRefs(mustMarshal(t, []int64{1})); err != nil || refs != nil {
		t.Fatalf("ScanRefs(raw) = %v, %v", refs, err)
	}
}

func TestRefEncoding(t *testing.T) {
	for _, n := range []int{0, 1, 23, 24, 255, 256, 65535, 65536, 100_000} {
		payload := bytes.Repeat([]byte{0xab}, n)
		enc := AppendRef([]byte("prefix"), payload)[len("prefix"):]
		got, err := ParseRef(enc)
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("payload of %d bytes: %v", n, err)
		}
		// the encoding is what fxamacker/cbor would write for the same tag
		want, err := cbor.Marshal(cbor.Tag{Number: RefTag, Content: payload})
		if err != nil || !bytes.Equal(enc, want) {
			t.Fatalf("payload of %d bytes: AppendRef % x, cbor % x", n, enc[:8], want[:8])
		}
	}
	for _, bad := range [][]byte{nil, {0x01}, {0xc1, 0x41, 0}, AppendRef(nil, []byte("x"))[:6], append(AppendRef(nil, []byte("x")), 0)} {
		if _, err := ParseRef(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("ParseRef(% x) = %v", bad, err)
		}
	}
	ref := AppendRef(nil, []byte("x"))
	for _, bad := range [][]byte{
		{'C', 0x9f},                     // indefinite
		{'C', 0x82, 0x01},               // truncated array
		append([]byte{'C'}, ref[:5]...), // tag without content
		append(append([]byte{'C'}, ref[:5]...), 0x01), // ref tag around an int
		{'C', 0x01, 0x01}, // trailing
		append([]byte{'C'}, bytes.Repeat([]byte{0x81}, maxNesting+2)...),
	} {
		if _, err := ScanRefs(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("ScanRefs(% x) = %v", bad, err)
		}
	}
}
