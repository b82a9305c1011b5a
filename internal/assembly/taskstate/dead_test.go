package taskstate

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/assembly/core"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/pb"
)

// Gather asks no process known to have exited: a job's worker process that its agent
// recorded EXITED, one older than the worker process its agent runs for the job now, or
// one the asker's membership saw go (Options.Dead). Their node records stay until their
// leases lapse, and Gather waited the whole 10 s for them, then failed (ray.ListTasks
// right after a task's worker process called os.Exit). The live processes are still
// asked, and one that does not answer is still reported missing.
func TestGatherSkipsExitedProcesses(t *testing.T) {
	store := memstore.New(memstore.Options{})
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	put := func(key string, m proto.Message) {
		b, _ := proto.Marshal(m)
		if _, err := store.Put(ctx, key, b, 0); err != nil {
			t.Fatal(err)
		}
	}
	node := func(id, agent string, pid int32, started int64) {
		put(gcs.NodeKey(id), &pb.NodeInfo{NodeId: id, Role: "worker", JobId: "j1", AgentId: agent, Pid: pid, StartedUnixMs: started})
	}
	// Agent a1: its worker process "crashed" (pid 10) exited; the agent recorded it.
	node("crashed", "a1", 10, 1000)
	put(gcs.JobWorkerKey("j1", "a1"), &pb.JobWorker{JobId: "j1", AgentId: "a1", State: pb.JobWorker_EXITED, Pid: 10, NodeId: "crashed", Exit: "exit status 3", ExitUnixMs: 2000})
	// Agent a2: "old" (pid 20) and "replaced" (pid 21) are older than "current" (pid 22),
	// which its agent runs now: one at a time, so they exited.
	node("old", "a2", 20, 1000)
	node("replaced", "a2", 21, 2000)
	node("current", "a2", 22, 3000)
	put(gcs.JobWorkerKey("j1", "a2"), &pb.JobWorker{JobId: "j1", AgentId: "a2", State: pb.JobWorker_RUNNING, Pid: 22, NodeId: "current"})
	// Agent a3: "before" (pid 30) started before the exit the agent recorded of another
	// process (pid 31, whose node record went); "after" would be a new one: none here.
	node("before", "a3", 30, 1000)
	put(gcs.JobWorkerKey("j1", "a3"), &pb.JobWorker{JobId: "j1", AgentId: "a3", State: pb.JobWorker_EXITED, Pid: 31, Exit: "killed by signal killed", ExitUnixMs: 5000})
	// Agent a4: a process started after the exit its agent recorded (a new one, not
	// registered as RUNNING yet): asked.
	node("fresh", "a4", 41, 9000)
	put(gcs.JobWorkerKey("j1", "a4"), &pb.JobWorker{JobId: "j1", AgentId: "a4", State: pb.JobWorker_EXITED, Pid: 40, Exit: "exit status 1", ExitUnixMs: 8000})
	// A driver the asker's membership saw go.
	put(gcs.NodeKey("driver"), &pb.NodeInfo{NodeId: "driver", Role: "driver", JobId: "j1"})

	dead := func(n string) bool { return n == "driver" }
	res, err := Gather(ctx, store, "j1", core.TaskQuery{}, Options{Wait: 2 * time.Second, Dead: dead})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(res.Missing)
	if want := []string{"before", "crashed", "driver", "old", "replaced"}; !slices.Equal(res.Gone, want) {
		t.Errorf("Gone = %v, want %v", res.Gone, want)
	}
	// Nobody answers here: the live processes are the ones reported missing.
	if want := []string{"current", "fresh"}; !slices.Equal(res.Missing, want) {
		t.Errorf("Missing = %v, want %v (the live processes, which did not answer)", res.Missing, want)
	}
}

// A process of a running job that is not in the node table although it has not exited
// (its lease lapsed: SIGSTOP, a hang, a network cut) cannot be asked: Gather reports it
// missing, with the processes that did not answer. It reported it neither asked nor
// missing: `rayctl summary tasks` and the head's ray_tasks silently left out the tasks of
// a stopped driver (ray_go_metrics_tasks_missing_processes 0) while `rayctl list nodes`
// showed it UNREACHABLE. A process of an ended job, one whose agent recorded its exit,
// and one the asker knows exited are not missing.
func TestGatherReportsUnreachableProcesses(t *testing.T) {
	store := memstore.New(memstore.Options{})
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	put := func(key string, m proto.Message) {
		b, _ := proto.Marshal(m)
		if _, err := store.Put(ctx, key, b, 0); err != nil {
			t.Fatal(err)
		}
	}
	// j1 runs: its driver "stopped-driver" and the worker process "stopped-worker" that
	// agent a1 runs for it have no node record; the agent a2's worker process "exited"
	// has none either, and is EXITED. The driver "known-dead" of j3 is one the asker's
	// membership saw go.
	put(gcs.JobKey("j1"), &pb.JobInfo{JobId: "j1", State: pb.JobInfo_RUNNING, DriverNode: "stopped-driver"})
	put(gcs.JobWorkerKey("j1", "a1"), &pb.JobWorker{JobId: "j1", AgentId: "a1", State: pb.JobWorker_RUNNING, Pid: 10, NodeId: "stopped-worker"})
	put(gcs.JobWorkerKey("j1", "a2"), &pb.JobWorker{JobId: "j1", AgentId: "a2", State: pb.JobWorker_EXITED, Pid: 20, NodeId: "exited", Exit: "exit status 1", ExitUnixMs: 2000})
	// j2 ended: its driver and worker process are gone with it, not missing.
	put(gcs.JobKey("j2"), &pb.JobInfo{JobId: "j2", State: pb.JobInfo_SUCCEEDED, DriverNode: "ended-driver"})
	put(gcs.JobWorkerKey("j2", "a1"), &pb.JobWorker{JobId: "j2", AgentId: "a1", State: pb.JobWorker_RUNNING, Pid: 30, NodeId: "ended-worker"})
	put(gcs.JobKey("j3"), &pb.JobInfo{JobId: "j3", State: pb.JobInfo_RUNNING, DriverNode: "known-dead"})
	// j4 runs with its driver registered ("alive-driver", which answers nothing here).
	put(gcs.JobKey("j4"), &pb.JobInfo{JobId: "j4", State: pb.JobInfo_RUNNING, DriverNode: "alive-driver"})
	put(gcs.NodeKey("alive-driver"), &pb.NodeInfo{NodeId: "alive-driver", Role: "driver", JobId: "j4"})
	dead := func(n string) bool { return n == "known-dead" }

	for _, c := range []struct {
		job  string
		want []string
	}{
		{"j1", []string{"stopped-driver", "stopped-worker"}},
		{"j2", nil},
		{"j3", nil},
		{"", []string{"alive-driver", "stopped-driver", "stopped-worker"}}, // every job: the alive one did not answer
	} {
		res, err := Gather(ctx, store, c.job, core.TaskQuery{Counts: true}, Options{Wait: time.Second, Dead: dead})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(res.Missing)
		if !slices.Equal(res.Missing, c.want) {
			t.Errorf("Gather(job %q).Missing = %v, want %v", c.job, res.Missing, c.want)
		}
		ores, err := GatherObjects(ctx, store, c.job, core.ObjectQuery{}, Options{Wait: time.Second, Dead: dead})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(ores.Missing)
		if !slices.Equal(ores.Missing, c.want) {
			t.Errorf("GatherObjects(job %q).Missing = %v, want %v", c.job, ores.Missing, c.want)
		}
	}
}
