package node

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
)

// TestNodeViewJoining: the nodes the actor manager waits for before it finds an actor
// unplaceable are the job's registered nodes it has not in view, and the live agents whose
// worker process for the job is not in view yet (no record, STARTING, RUNNING elsewhere),
// with the agent's resources; not other jobs' nodes, drivers, nodes in view, agents that
// cannot run the job or whose worker exited, or dead agents.
func TestNodeViewJoining(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	const job = "j1"
	put := func(key string, m proto.Message) {
		t.Helper()
		b, _ := proto.Marshal(m)
		if _, err := st.Put(ctx, key, b, 0); err != nil {
			t.Fatal(err)
		}
	}
	res := func(name string) []*pb.ResourceQty {
		return tasks.ResourcesToPB(sched.Resources{}.With(name, sched.Unit))
	}
	put(gcs.NodeKey("self"), &pb.NodeInfo{NodeId: "self", Role: RoleWorker, JobId: job, Total: res("self")})
	put(gcs.NodeKey("reg"), &pb.NodeInfo{NodeId: "reg", Role: RoleWorker, JobId: job, Total: res("reg")})
	put(gcs.NodeKey("other"), &pb.NodeInfo{NodeId: "other", Role: RoleWorker, JobId: "j2", Total: res("other")})
	put(gcs.NodeKey("drv"), &pb.NodeInfo{NodeId: "drv", Role: RoleDriver, JobId: job})
	for agent, w := range map[string]*pb.JobWorker{
		"norec":    nil,
		"starting": {State: pb.JobWorker_STARTING},
		"running":  {State: pb.JobWorker_RUNNING, NodeId: "unreg"},
		"regd":     {State: pb.JobWorker_RUNNING, NodeId: "reg"},
		"inview":   {State: pb.JobWorker_RUNNING, NodeId: "self"},
		"unsup":    {State: pb.JobWorker_UNSUPPORTED},
		"exited":   {State: pb.JobWorker_EXITED},
	} {
		if _, err := st.Put(ctx, gcs.AgentAliveKey(agent), []byte("x"), 0); err != nil {
			t.Fatal(err)
		}
		put(gcs.AgentKey(agent), &pb.AgentInfo{AgentId: agent, Total: res(agent)})
		if w != nil {
			w.JobId, w.AgentId = job, agent
			put(gcs.JobWorkerKey(job, agent), w)
		}
	}
	put(gcs.AgentKey("deadagent"), &pb.AgentInfo{AgentId: "deadagent", Total: res("deadagent")})
	v := &nodeView{store: st, job: job}
	got, err := v.Joining(ctx, map[string]sched.Resources{"self": {}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"reg": "reg", "agent norec": "norec", "agent starting": "starting", "agent running": "running"}
	if len(got) != len(want) {
		t.Fatalf("Joining: %v, want the nodes %v", got, want)
	}
	for id, r := range want {
		if g, ok := got[id]; !ok || g.Get(r) != sched.Unit {
			t.Errorf("Joining: %s is %v (listed %v), want {%s=1}", id, g, ok, r)
		}
	}
}
