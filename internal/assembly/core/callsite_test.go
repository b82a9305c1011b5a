package core

import (
	"context"
	"strings"
	"testing"
)

// Call sites per object: off by default (nothing noted, no call_site); on, a Put and a
// task's return show the line of the test that created them, and a freed object's site is
// dropped.
func TestCallSites(t *testing.T) {
	ctx := context.Background()
	siteOf := func(h *harness, id string) string {
		t.Helper()
		rep, err := h.c.ListObjects(ctx, ObjectQuery{ObjectID: id})
		if err != nil || len(rep.Objects) != 1 {
			t.Fatalf("object %s: %+v, %v", id, rep, err)
		}
		return rep.Objects[0].CallSite
	}

	off := newHarness(t)
	if off.c.sites != nil {
		t.Fatal("call sites are on by default")
	}
	id, err := off.tc.PutNested([]byte("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := siteOf(off, id.String()); s != "" {
		t.Errorf("call site with recording off: %q", s)
	}

	h := newHarness(t)
	h.c.sites = newCallSites(true)
	put, err := h.tc.PutNested([]byte("y"), nil) // the put's line
	if err != nil {
		t.Fatal(err)
	}
	if s := siteOf(h, put.String()); !strings.HasSuffix(s, "callsite_test.go:37") {
		t.Errorf("the put's call site: %q, want callsite_test.go:37", s)
	}
	ret := h.submit() // the task's: its line in the helper (a _test.go file counts as the user's)
	if s := siteOf(h, ret.String()); !strings.Contains(s, "core_test.go:") {
		t.Errorf("the task's call site: %q, want the harness's submit in core_test.go", s)
	}
	if n := len(h.c.sites.of); n != 2 {
		t.Errorf("%d call sites kept, want 2", n)
	}
	h.c.ReleaseRef(put, false)
	if s := h.c.sites.get(put); s != "" {
		t.Errorf("the freed put's call site is still kept: %q", s)
	}
}
