package ray

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
)

// A state API call some of whose processes did not answer returns the others' results
// with a *PartialStateError (before: an untyped error and no results): callers branch on
// it with errors.As or errors.Is(err, ErrPartialState), and its text names the processes.
func TestPartialStateError(t *testing.T) {
	if err := partialError(nil, 3); err != nil {
		t.Fatalf("partialError of no missing process: %v, want nil", err)
	}
	err := partialError([]string{"bbbbbb", "aaaaaa"}, 2)
	var p *PartialStateError
	if !errors.As(err, &p) || !errors.Is(err, ErrPartialState) {
		t.Fatalf("partialError: %v (%T), want a *PartialStateError matching ErrPartialState", err, err)
	}
	if !slices.Equal(p.Missing, []string{"aaaaaa", "bbbbbb"}) || p.Answered != 2 || !strings.Contains(err.Error(), "aaaaaa, bbbbbb") {
		t.Errorf("PartialStateError %+v: %v; want the missing processes sorted, 2 answered", p, err)
	}
}

// Memory names the processes it could not ask: a running job's driver whose registration
// lapsed (its node record gone, its job RUNNING) has a store Memory cannot read; it
// returns the stores that answered with a *PartialStateError naming that process. It
// returned them with a nil error, leaving the process out with no word.
func TestMemoryNamesUnreachableProcesses(t *testing.T) {
	ctx := timeout(t)
	store := nodeOf(ctx).GCS()
	const job, driver = "fffffe01", "a1b2c3d4e5f6a7b8-lapsed"
	b, err := proto.Marshal(&pb.JobInfo{JobId: job, State: pb.JobInfo_RUNNING, DriverNode: driver})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Put(ctx, gcs.JobKey(job), b, 0); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := store.Delete(context.Background(), gcs.JobKey(job)); err != nil {
			t.Errorf("remove the test's job record: %v", err)
		}
	}()
	rep, err := Memory(ctx, 1)
	var p *PartialStateError
	if !errors.As(err, &p) || !errors.Is(err, ErrPartialState) || !slices.Equal(p.Missing, []string{driver}) || !strings.Contains(err.Error(), driver) {
		t.Fatalf("Memory with a lapsed driver: %v (%T), want a *PartialStateError naming %s", err, err, driver)
	}
	if len(rep.Nodes) == 0 || rep.Nodes[0].Node != string(nodeOf(ctx).ID) || p.Answered != len(rep.Nodes) {
		t.Fatalf("Memory with a lapsed driver: %+v, answered %d, want this node's store reported", rep, p.Answered)
	}
}
