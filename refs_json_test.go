package ray

import (
	"encoding/json"
	"strings"
	"testing"
)

// An ObjectRef inside a struct the program encodes with encoding/json refuses it, saying
// how refs travel: it encoded as {} with no error and decoded to the zero ref, so the ref
// was lost silently (Get then said only that the zero ref refers to no object). The zero
// ref, which refers to nothing, is null both ways; the ray codec still carries the ref.
func TestObjectRefJSON(t *testing.T) {
	ctx := timeout(t)
	r, err := Put(ctx, []byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	type msg struct {
		Name string
		Data ObjectRef[[]byte]
	}
	b, err := json.Marshal(msg{"m", r})
	if err == nil || !strings.Contains(err.Error(), "cannot be encoded with encoding/json") || !strings.Contains(err.Error(), "task argument") {
		t.Fatalf("json.Marshal of a struct with a ref: %s, %v; want an error saying how refs travel", b, err)
	}
	var m msg
	if err := json.Unmarshal([]byte(`{"Name":"m","Data":{}}`), &m); err == nil || !strings.Contains(err.Error(), "encoding/json") {
		t.Fatalf("json.Unmarshal of a ref: %v, want an error", err)
	}
	if b, err := json.Marshal(msg{Name: "zero"}); err != nil || string(b) != `{"Name":"zero","Data":null}` {
		t.Fatalf("json.Marshal of the zero ref: %s, %v; want null", b, err)
	}
	if err := json.Unmarshal([]byte(`{"Name":"zero","Data":null}`), &m); err != nil || m.Data.h != nil {
		t.Fatalf("json.Unmarshal of null: %v, %+v; want the zero ref", err, m.Data)
	}
	// The ray codec still carries it: a Put of the struct reads back a ref to the payload.
	box, err := Put(ctx, msg{"m", r})
	if err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, ctx, box)
	if v := mustGet(t, ctx, got.Data); string(v) != "payload" {
		t.Fatalf("the ref through the ray codec: %q", v)
	}
}

// encoding/json refuses an ActorHandle too (it wrote {}, and a decoded handle was the zero
// one: calls through it failed far from the cause); the ray codec still carries it.
func TestActorHandleJSON(t *testing.T) {
	ctx := timeout(t)
	h := clockClass.Remote(ctx, AtMostOnce())
	if h.Err() != nil {
		t.Fatal(h.Err())
	}
	type msg struct {
		Name  string
		Clock ActorHandle[clock]
	}
	b, err := json.Marshal(msg{"m", h})
	if err == nil || !strings.Contains(err.Error(), "ActorHandle cannot be encoded with encoding/json") || !strings.Contains(err.Error(), h.ID()) {
		t.Fatalf("json.Marshal of a struct with an actor handle: %s, %v; want an error naming the actor and saying how handles travel", b, err)
	}
	var m msg
	if err := json.Unmarshal([]byte(`{"Name":"m","Clock":{}}`), &m); err == nil || !strings.Contains(err.Error(), "encoding/json") {
		t.Fatalf("json.Unmarshal of a handle: %v, want an error", err)
	}
	if b, err := json.Marshal(msg{Name: "zero"}); err != nil || string(b) != `{"Name":"zero","Clock":null}` {
		t.Fatalf("json.Marshal of the zero handle: %s, %v; want null", b, err)
	}
	box, err := Put(ctx, msg{"m", h})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, ctx, box); got.Clock.ID() != h.ID() {
		t.Fatalf("the handle through the ray codec: %q, want %q", got.Clock.ID(), h.ID())
	}
}
