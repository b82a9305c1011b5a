package worker

import (
	"context"
	"testing"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
)

// Run marks as the task's own (tasks.ArgOwned) exactly the large arguments it fetched from
// another node's store; not inline ones, not this node's (the store's own bytes), not small
// ones.
func TestRunMarksArgumentsReadFromAnotherNode(t *testing.T) {
	big := make([]byte, tasks.OwnedArgMin)
	r := Runner{Node: "n1", Fetch: func(_ context.Context, a *pb.Arg) ([]byte, error) {
		if string(a.ObjectId) == "small" {
			return []byte("x"), nil
		}
		return append([]byte(nil), big...), nil // a new buffer, as a read from another node is
	}}
	ref := func(id, node string) *pb.Arg { return &pb.Arg{IsRef: true, ObjectId: []byte(id), NodeId: node} }
	tid := ids.ChildTaskID(ids.NewRootTaskID(), 1)
	spec := &pb.TaskSpec{TaskId: tid[:], Function: "f", Args: []*pb.Arg{
		{Data: big},               // 0: inline
		ref("local", "n1"),        // 1: this node's store
		ref("small", "n2"),        // 2: another node's, small
		ref("remote", "n2"),       // 3: another node's, large
		ref("remote-no-node", ""), // 4: no node named
		ref("remote2", "n3"),      // 5: another node's, large
	}}
	want := []bool{false, false, false, true, false, true}
	var got []bool
	res := r.Run(context.Background(), context.Background(), spec, func(ctx context.Context, args [][]byte) ([]byte, error) {
		for i := range args {
			got = append(got, tasks.ArgOwned(ctx, i))
		}
		return []byte("ok"), nil
	})
	if res.Error != nil {
		t.Fatalf("Run: %v", res.Error)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("argument %d: owned %v, want %v", i, got[i], want[i])
		}
	}
	if tasks.ArgOwned(context.Background(), 3) || tasks.ArgOwned(tasks.WithOwnedArgs(context.Background(), ^uint64(0)), 64) {
		t.Error("ArgOwned without a mark, or past index 63, reported true")
	}
}
