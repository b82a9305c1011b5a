package ray

import (
	"context"
	"strings"
	"testing"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/assembly/taskstate"
)

// The objects a local runtime owns, as `rayctl list objects` gets them through the GCS: a
// 1 MiB Put in the node's store, a small one inline, a task's result, each READY with its
// size and a local reference; a filter by ID prefix, the limit, and the summary.
func TestListObjects(t *testing.T) {
	ctx := timeout(t)
	n := nodeOf(ctx)
	big, err := Put(ctx, make([]byte, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	small, err := Put(ctx, "a small value")
	if err != nil {
		t.Fatal(err)
	}
	sq := mxSquare.Remote(ctx, V(7))
	if v := mustGet(t, ctx, sq); v != 49 {
		t.Fatalf("square: %d", v)
	}
	byID := func(id string) core.ObjectInfo {
		t.Helper()
		res, err := taskstate.GatherObjects(ctx, n.GCS(), "", core.ObjectQuery{ObjectID: id}, taskstate.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Missing) > 0 || len(res.Objects) != 1 || res.Total != 1 {
			t.Fatalf("object %s: %d found (total %d), missing %v", id, len(res.Objects), res.Total, res.Missing)
		}
		return res.Objects[0]
	}
	b := byID(big.ID())
	if b.State != core.ObjectReady || b.Size < 1<<20 || b.Location != string(n.ID) || b.RefType != core.RefLocal || b.Owner != string(n.ID) {
		t.Errorf("the 1 MiB Put: %+v", b)
	}
	s := byID(small.ID())
	if s.State != core.ObjectReady || s.Size == 0 || s.Size > 1024 || s.Location != core.LocationInline || s.RefType != core.RefLocal {
		t.Errorf("the small Put: %+v", s)
	}
	if r := byID(sq.ID()); r.State != core.ObjectReady || r.Location != core.LocationInline {
		t.Errorf("the task's result: %+v", r)
	}

	// Puts of one task share their ID's prefix (the putting task's ID).
	if res, err := taskstate.GatherObjects(ctx, n.GCS(), "", core.ObjectQuery{ObjectID: small.ID()[:20]}, taskstate.Options{}); err != nil || res.Total < 2 {
		t.Errorf("prefix of the Puts' task: %v, %v", res, err)
	}
	res, err := taskstate.GatherObjects(ctx, n.GCS(), "", core.ObjectQuery{Limit: 2, Summary: true, State: core.ObjectReady}, taskstate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Objects) != 2 || res.Total < 3 || res.Objects[0].ObjectID > res.Objects[1].ObjectID {
		t.Errorf("limit 2: %d objects of %d, %+v", len(res.Objects), res.Total, res.Objects)
	}
	counted, bytes := 0, int64(0)
	for _, c := range res.Summary {
		if c.State != core.ObjectReady {
			t.Errorf("summary of READY objects has %+v", c)
		}
		counted += c.Count
		bytes += c.Bytes
	}
	if counted != res.Total || bytes < 1<<20 {
		t.Errorf("summary counts %d objects of %d bytes, total %d", counted, bytes, res.Total)
	}
	big.Release()
	small.Release()
}

// TestCallSitesFromTheEnvironment: a runtime started with RAY_record_ref_creation_sites=1
// in its environment records where each object was created (this file and line); one
// started without it records none.
func TestCallSitesFromTheEnvironment(t *testing.T) {
	for _, on := range []bool{true, false} {
		if on {
			t.Setenv(core.CallSitesEnv, "1")
		} else {
			t.Setenv(core.CallSitesEnv, "")
		}
		ctx, err := Init(context.Background(), WithNumCPUs(1))
		if err != nil {
			t.Fatal(err)
		}
		ref, err := Put(ctx, "where am I from")
		if err != nil {
			Shutdown(ctx)
			t.Fatal(err)
		}
		objs, _, err := ListObjects(ctx, ObjectFilter{ObjectID: ref.ID()})
		Shutdown(ctx)
		if err != nil || len(objs) != 1 {
			t.Fatalf("on=%v: ListObjects: %v, %v", on, objs, err)
		}
		site := objs[0].CallSite
		if on && !strings.Contains(site, "objectstate_test.go:") {
			t.Fatalf("call site with %s=1: %q, want this test's file and line", core.CallSitesEnv, site)
		}
		if !on && site != "" {
			t.Fatalf("call site without %s: %q, want none", core.CallSitesEnv, site)
		}
	}
}
