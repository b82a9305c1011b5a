// TestReconstructAfterNodeLoss stops node 4 (nodeLost), which no other test needs.
package testcluster_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	ray "github.com/ray-go/ray"
)

var reverseBlob = ray.Task1("testcluster.ReverseBlob", func(ctx context.Context, b []byte) ([]byte, error) {
	out := slices.Clone(b)
	slices.Reverse(out)
	return out, nil
})

var keeperDigest = ray.Method1(keeperClass, "Digest", func(_ *keeper, _ context.Context, b []byte) (string, error) {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
})

// blobDigest is the SHA-256 of makeBlob's n bytes.
func blobDigest(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>9)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestReconstructAfterNodeLoss: objects whose bytes were only on a node that stopped are
// recreated by running their tasks again (the lost argument first), with the same IDs, and
// read back exact; the caller sees a delay, not an error, also an actor call given one of
// them as its argument. The result of a MaxRetries(0) task is not: its Get fails with
// ErrObjectLost, saying why.
func TestReconstructAfterNodeLoss(t *testing.T) {
	base, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	up := alive(t)
	driver, victim := up[0], nodeLost
	if cluster.Stopped(victim) || driver == victim {
		t.Fatal("node 4 must be running")
	}
	ctx := cluster.Context(base, driver)
	there := ray.NodeAffinity(string(cluster.Nodes[victim].ID), true) // soft: a re-run may go elsewhere
	const size = 4 << 20
	blob := makeBlob.Options(there).Remote(ctx, ray.V(size))
	rev := reverseBlob.Options(there).Remote(ctx, blob)
	// A task that must not run twice: its lost result is not recreated (Ray's max_retries
	// bounds reconstruction too).
	// (No CPU: the victim can always take them, so they are made there.)
	once := makeBlob.Options(there, ray.NumCPUs(0), ray.MaxRetries(0)).Remote(ctx, ray.V(size))
	// An actor call's argument (a ref passed as the argument itself).
	third := makeBlob.Options(there, ray.NumCPUs(0)).Remote(ctx, ray.V(size/2))
	if _, _, err := ray.Wait(ctx, []ray.ObjectRef[[]byte]{blob, rev, once, third}, ray.NumReady(4)); err != nil {
		t.Fatal(err)
	}
	ids := []string{blob.ID(), rev.ID()}
	// An actor on node 1 borrows blob (a ref inside a value, as a Ray Data reduce reads the
	// map outputs) and reads it: its runtime now knows the bytes are on the victim.
	if driver == 1 || victim == 1 {
		t.Fatal("node 1 (the keeper's) must be neither the driver's node nor the victim")
	}
	k := keeperClass.Remote(ctx, ray.Resources(map[string]float64{"keeper": 1}), ray.UnboundedMethodLog())
	// Killed at the end: it gives node 1's one "keeper" back now, not when a collection
	// finds its handle gone (the next test that needs it waited minutes for that).
	defer func() {
		if err := ray.Kill(ctx, k, true); err != nil {
			t.Error(err)
		}
	}()
	if _, err := ray.Get(ctx, keeperKeep.Remote(ctx, k, ray.V(box{Ref: blob}))); err != nil {
		t.Fatal(err)
	}
	if n, err := ray.Get(ctx, keeperRead.Remote(ctx, k)); err != nil || n != size {
		t.Fatalf("the keeper reads the borrowed blob: %d bytes, %v", n, err)
	}
	if err := cluster.StopNode(base, victim); err != nil {
		t.Fatal(err)
	}
	core := cluster.Nodes[driver].Core
	// The actor on node 1 is given third, lost with the victim, as a call's argument: the
	// call waits while the driver recreates it, then runs with its bytes; a call made
	// after it runs after it. (Before, the call failed: "argument 1: object lost: ... no
	// object store on node ...", while a task given the same ref recreated it.)
	before := core.Stats().Reconstructed.Load()
	digest := keeperDigest.Remote(ctx, k, third)
	where := keeperWhere.Remote(ctx, k)
	if _, err := ray.Get(ctx, where); err != nil {
		t.Fatal(err)
	}
	if ready, _, err := ray.Wait(ctx, []ray.ObjectRef[string]{digest}, ray.Timeout(0)); err != nil || len(ready) != 1 {
		t.Fatalf("a call made after the one whose argument was lost finished first (%d ready, %v)", len(ready), err)
	}
	if got, err := ray.Get(ctx, digest); err != nil || got != blobDigest(size/2) {
		t.Fatalf("an actor call whose argument was lost with its node: %q, %v; want %s", got, err, blobDigest(size/2))
	}
	if n := core.Stats().Reconstructed.Load() - before; n != 1 {
		t.Errorf("%d objects recreated for the actor call, want 1", n)
	}
	before = core.Stats().Reconstructed.Load()
	// The borrower reads it again while still borrowing it: its copy of the value points
	// at the dead node; it asks the owner again, which recreates the object. (Before, the
	// borrower kept reading the dead node and failed with "object lost" for as long as it
	// borrowed the object, whatever its owner did.)
	if n, err := ray.Get(ctx, keeperRead.Remote(ctx, k)); err != nil || n != size {
		t.Fatalf("the keeper reads the borrowed blob after its node died: %d bytes, %v", n, err)
	}
	got, err := ray.Get(ctx, rev)
	if err != nil {
		t.Fatalf("reading an object lost with its node: %v", err)
	}
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i*7 + i>>9)
	}
	slices.Reverse(want)
	if !bytes.Equal(got, want) {
		t.Fatal("the recreated object differs")
	}
	if n := core.Stats().Reconstructed.Load() - before; n != 2 {
		t.Errorf("%d objects recreated, want 2 (the object and its lost argument)", n)
	}
	if blob.ID() != ids[0] || rev.ID() != ids[1] {
		t.Error("recreated objects changed IDs")
	}
	if b, err := ray.Get(ctx, blob); err != nil || len(b) != size {
		t.Fatalf("the recreated argument: %d bytes, %v", len(b), err)
	}
	// once's result was only on the victim too (placed there as blob and rev were).
	before = core.Stats().Reconstructed.Load()
	b, err := ray.Get(ctx, once)
	if err == nil {
		t.Fatalf("the lost result of a MaxRetries(0) task read %d bytes: it ran again", len(b))
	}
	var te *ray.TaskError
	if !errors.Is(err, ray.ErrObjectLost) || !errors.As(err, &te) || !strings.Contains(err.Error(), "MaxRetries is 0") {
		t.Fatalf("Get of the lost result of a MaxRetries(0) task: %v, want a *ray.TaskError matching ErrObjectLost that says MaxRetries is 0", err)
	}
	if n := core.Stats().Reconstructed.Load() - before; n != 0 {
		t.Errorf("%d objects recreated for a MaxRetries(0) task, want 0", n)
	}
}
