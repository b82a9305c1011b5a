package ray

import (
	"strings"
	"testing"
)

// TestCallWithTheWrongResultType: Call[R] with an R the function does not return fails
// naming the function and its registered return type, not with the codec's error alone
// ("cannot decode CBOR unsigned integer into string").
func TestCallWithTheWrongResultType(t *testing.T) {
	ctx := timeout(t)
	_, err := Get(ctx, Call[string](ctx, "test.square", []any{3}))
	if err == nil {
		t.Fatal("Call[string] of a function returning int: no error")
	}
	msg := err.Error()
	for _, want := range []string{"test.square", "registered to return int", "as string", "ray.Call[R]"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error %q does not say %q", msg, want)
		}
	}
	if n := strings.Count(msg, "ray: "); n != 1 {
		t.Errorf("the error %q says \"ray: \" %d times", msg, n)
	}
	t.Log(msg)
	// A Put object read as another type: no function to name, the codec's error as before.
	p, err := Put(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Get(ctx, ObjectRef[string](p))
	if err == nil || strings.Contains(err.Error(), "registered to return") {
		t.Errorf("a Put int read as a string: %v, want the codec's error without a function", err)
	}
}
