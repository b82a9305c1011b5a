package tasks

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ray-go/ray/tasks/sched"
)

func TestRegistry(t *testing.T) {
	body := func(context.Context, [][]byte) ([]byte, error) { return nil, nil }
	tests := []struct {
		name    string
		f       *Function
		wantErr string
	}{
		{"ok", &Function{Name: "registry_test.a", Call: body}, ""},
		{"duplicate", &Function{Name: "registry_test.a", Call: body}, "registered twice"},
		{"no name", &Function{Call: body}, "non-empty name"},
		{"no body", &Function{Name: "registry_test.b"}, "no body"},
		{"nil", nil, "non-empty name"},
	}
	for _, tc := range tests {
		err := Register(tc.f)
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: err=%v, want %q", tc.name, err, tc.wantErr)
		}
	}
	if _, ok := Lookup("registry_test.a"); !ok {
		t.Error("registered function not found")
	}
	if _, ok := Lookup("registry_test.missing"); ok {
		t.Error("missing function found")
	}
	var e error = &UnknownFunctionError{Name: "x"}
	var u *UnknownFunctionError
	if !errors.As(e, &u) || !strings.Contains(e.Error(), `"x"`) {
		t.Errorf("unknown function error: %v", e)
	}
}

func TestResourcesWireRoundTrip(t *testing.T) {
	r, err := sched.FromMap(map[string]float64{"CPU": 0.5, "GPU": 1, "accel": 2})
	if err != nil {
		t.Fatal(err)
	}
	if back := ResourcesFromPB(ResourcesToPB(r)); !back.Equal(r) {
		t.Fatalf("round trip: %v, want %v", back, r)
	}
	if ResourcesToPB(sched.Resources{}) != nil {
		t.Fatal("zero resources should have no wire entries")
	}
}
