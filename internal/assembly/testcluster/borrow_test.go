// Named to run before failover_test.go (file order), which stops nodes.
package testcluster_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	ray "github.com/ray-go/ray"
	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/ids"
)

// box holds a ref inside a value.
type box struct {
	Ref ray.ObjectRef[[]byte]
	Tag string
}

var (
	boxLen = ray.Task1("testcluster.BoxLen", func(ctx context.Context, b box) (int, error) {
		v, err := ray.Get(ctx, b.Ref)
		return len(v), err
	})
	makeBoxed = ray.Task1("testcluster.MakeBoxed", func(ctx context.Context, n int) (box, error) {
		r, err := ray.Put(ctx, make([]byte, n))
		return box{Ref: r, Tag: "made"}, err
	})

	keeperClass = ray.Actor("testcluster.Keeper", func() *keeper { return &keeper{} })
	keeperKeep  = ray.Method1(keeperClass, "Keep", (*keeper).Keep)
	keeperRead  = ray.Method0(keeperClass, "Read", (*keeper).Read)
	keeperDrop  = ray.Method0(keeperClass, "Drop", (*keeper).Drop)
	keeperWhere = ray.Method0(keeperClass, "Where", func(_ *keeper, ctx context.Context) (string, error) { return ray.NodeID(ctx) })
)

type keeper struct{ held []ray.ObjectRef[[]byte] }

func (k *keeper) Keep(_ context.Context, b box) (int, error) {
	k.held = append(k.held, b.Ref)
	return len(k.held), nil
}

func (k *keeper) Read(ctx context.Context) (int, error) {
	total := 0
	for _, r := range k.held {
		v, err := ray.Get(ctx, r)
		if err != nil {
			return 0, err
		}
		total += len(v)
	}
	return total, nil
}

func (k *keeper) Drop(context.Context) (int, error) {
	n := len(k.held)
	k.held = nil
	return n, nil
}

func objectID(t *testing.T, id string) ids.ObjectID {
	t.Helper()
	o, err := ids.ParseObjectID(id)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func known(c *core.Core, id ids.ObjectID) bool {
	_, _, ok := c.Refs().Counts(id)
	return ok
}

// ownerAwayFromKeeper returns the first running node, to own what a test makes, and node 1,
// the one with the "keeper" resource (TestMain), where the test's actor runs: two nodes.
func ownerAwayFromKeeper(t *testing.T) (owner, keeper int) {
	t.Helper()
	owner, keeper = alive(t)[0], nodeKeeper
	if owner == keeper || cluster.Stopped(keeper) {
		t.Fatal("node 1 must be running and not be the first running node")
	}
	return owner, keeper
}

// TestBorrowedRefs: refs nested in values keep their objects alive exactly as long as a
// holder anywhere in the cluster does (a table of cases); the object lives on another node's
// runtime (the owner) while tasks and actors on another node use it.
func TestBorrowedRefs(t *testing.T) {
	base, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Node 1 has the "keeper" resource the actor case needs: the owner is another node.
	ownerIdx, other := ownerAwayFromKeeper(t)
	ctx := cluster.Context(base, ownerIdx)
	owner := cluster.Nodes[ownerIdx].Core
	there := ray.NodeAffinity(string(cluster.Nodes[other].ID), false)
	const size = 300 << 10 // above the inline limit: the bytes live in the owner node's store

	t.Run("nested in a task argument", func(t *testing.T) {
		r, err := ray.Put(ctx, make([]byte, size))
		if err != nil {
			t.Fatal(err)
		}
		id := objectID(t, r.ID())
		n, err := ray.Get(ctx, boxLen.Options(there).Remote(ctx, ray.V(box{Ref: r})))
		if err != nil || n != size {
			t.Fatalf("the task read %d bytes, err %v", n, err)
		}
		r.Release()
		eventually.AfterGC(t, 10*time.Second, "freed after the task and the owner's ref are gone", func() bool { return !known(owner, id) })
	})

	t.Run("nested in a Put value", func(t *testing.T) {
		inner, err := ray.Put(ctx, make([]byte, size))
		if err != nil {
			t.Fatal(err)
		}
		id := objectID(t, inner.ID())
		outer, err := ray.Put(ctx, box{Ref: inner, Tag: "outer"})
		if err != nil {
			t.Fatal(err)
		}
		inner.Release() // the outer object keeps it
		runtime.GC()
		if !known(owner, id) {
			t.Fatal("the inner object was freed while a Put value holds its ref")
		}
		n, err := ray.Get(ctx, boxLen.Options(there).Remote(ctx, outer))
		if err != nil || n != size {
			t.Fatalf("a task on another node read %d bytes through the outer object, err %v", n, err)
		}
		outer.Release()
		eventually.AfterGC(t, 10*time.Second, "inner freed with the outer object", func() bool { return !known(owner, id) })
	})

	t.Run("held by an actor on another node", func(t *testing.T) {
		k := keeperClass.Remote(ctx, ray.Resources(map[string]float64{"keeper": 1}), ray.UnboundedMethodLog())
		r, err := ray.Put(ctx, make([]byte, size))
		if err != nil {
			t.Fatal(err)
		}
		id := objectID(t, r.ID())
		if _, err := ray.Get(ctx, keeperKeep.Remote(ctx, k, ray.V(box{Ref: r}))); err != nil {
			t.Fatal(err)
		}
		r.Release()
		runtime.GC()
		time.Sleep(100 * time.Millisecond)
		if where, err := ray.Get(ctx, keeperWhere.Remote(ctx, k)); err != nil || where != string(cluster.Nodes[other].ID) {
			t.Fatalf("the keeper runs on %q (err %v), want node 1, the only one with its resource", where, err)
		}
		if owner.Lenders(id) != 1 || !known(owner, id) {
			t.Fatalf("after the driver dropped its ref: %d borrowers (want the actor's runtime), known %v", owner.Lenders(id), known(owner, id))
		}
		// The state API: the owner's row counts the borrower, the borrower has a row of its
		// own (rayctl list objects merges both).
		q := core.ObjectQuery{ObjectID: id.String()}
		if rep, err := owner.ListObjects(ctx, q); err != nil || len(rep.Objects) != 1 || rep.Objects[0].Borrowers != 1 ||
			rep.Objects[0].RefType == core.RefBorrowed {
			t.Fatalf("the owner's row: %+v, %v; want one row with 1 borrower", rep.Objects, err)
		}
		rep, err := cluster.Nodes[other].Core.ListObjects(ctx, q)
		if err != nil || len(rep.Objects) != 1 {
			t.Fatalf("the borrower's rows: %+v, %v", rep.Objects, err)
		}
		if b := rep.Objects[0]; b.RefType != core.RefBorrowed || b.Holder != string(cluster.Nodes[other].ID) || b.OwnerAddress == "" ||
			b.Local < 1 || b.Owner != "" {
			t.Fatalf("the borrower's row: %+v", b)
		}
		if rep, err := cluster.Nodes[other].Core.ListObjects(ctx, core.ObjectQuery{RefType: core.RefBorrowed, Summary: true}); err != nil ||
			rep.Total < 1 || len(rep.Summary) == 0 {
			t.Fatalf("the borrower's summary of borrowed objects: %+v, %v", rep, err)
		}
		if n, err := ray.Get(ctx, keeperRead.Remote(ctx, k)); err != nil || n != size {
			t.Fatalf("the actor read %d bytes, err %v", n, err)
		}
		if _, err := ray.Get(ctx, keeperDrop.Remote(ctx, k)); err != nil {
			t.Fatal(err)
		}
		eventually.AfterGC(t, 10*time.Second, "freed once the actor dropped it", func() bool { return !known(owner, id) && owner.Lenders(id) == 0 })
		if err := ray.Kill(ctx, k, true); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("returned inside a task's value", func(t *testing.T) {
		b, err := ray.Get(ctx, makeBoxed.Options(there).Remote(ctx, ray.V(size)))
		if err != nil || b.Tag != "made" {
			t.Fatalf("MakeBoxed: %+v, %v", b, err)
		}
		maker := cluster.Nodes[other].Core
		id := objectID(t, b.Ref.ID())
		v, err := ray.Get(ctx, b.Ref)
		if err != nil || len(v) != size {
			t.Fatalf("the driver read %d bytes of an object its task put on another node, err %v", len(v), err)
		}
		if !known(maker, id) || maker.Lenders(id) != 1 {
			t.Fatalf("the maker knows it: %v, borrowers %d; want the driver borrowing", known(maker, id), maker.Lenders(id))
		}
		b = box{}
		v = nil
		eventually.AfterGC(t, 10*time.Second, "the maker frees it once the driver dropped the value", func() bool { return !known(maker, id) })
		if n := owner.Borrowed(); n != 0 {
			t.Errorf("the driver's runtime still borrows %d objects", n)
		}
	})

	t.Run("a released ref cannot be passed", func(t *testing.T) {
		r, err := ray.Put(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		r.Release()
		type wrap struct{ R ray.ObjectRef[int] }
		if _, err := ray.Put(ctx, wrap{r}); err == nil {
			t.Fatal("a released ref was encoded")
		} else if want := "released"; !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	})
}
