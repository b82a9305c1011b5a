package testcluster_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	ray "github.com/ray-go/ray"
	"github.com/ray-go/ray/internal/assembly/testcluster"
)

// ledger is an actor whose every call changes its state and returns it, so that a call
// lost, run twice or run out of order shows in the returned values.
type ledger struct {
	sum   int64
	calls int64
	delay time.Duration // per call, so that a fault lands in the middle of a stream
}

func (l *ledger) Add(_ context.Context, n int64) (int64, error) {
	time.Sleep(l.delay)
	l.sum += n
	l.calls++
	return l.sum*1_000_000 + l.calls, nil
}

func (l *ledger) State(context.Context) ([2]int64, error) { return [2]int64{l.sum, l.calls}, nil }

func (l *ledger) SaveCheckpoint(context.Context) ([]byte, error) {
	return binary.AppendVarint(binary.AppendVarint(nil, l.sum), l.calls), nil
}

func (l *ledger) RestoreCheckpoint(_ context.Context, b []byte) error {
	s, n := binary.Varint(b)
	c, m := binary.Varint(b[n:])
	if n <= 0 || m <= 0 {
		return fmt.Errorf("bad checkpoint")
	}
	l.sum, l.calls = s, c
	return nil
}

var (
	ledgerClass = ray.Actor1("testcluster.Ledger", func(_ context.Context, delay time.Duration) (*ledger, error) {
		return &ledger{delay: delay}, nil
	})
	ledgerAdd   = ray.Method1(ledgerClass, "Add", (*ledger).Add)
	ledgerState = ray.Method0(ledgerClass, "State", (*ledger).State)
)

var cluster *testcluster.Cluster

// The cluster's nodes and what each is for. One cluster serves every test of the process
// (every node's start writes gRPC's global logger, which a second cluster's start would
// race with the first's connections), and the tests run in any order (go test
// -shuffle=on): a test stops only nodes of its own, which no other test needs, and nodes
// 0-2, which tests need by their resources, are never stopped.
const (
	nodeDriver    = 0 // most tests' driver; "lane" and "pgcrash" (TestMain)
	nodeKeeper    = 1 // "keeper": the actors kept away from their owner
	nodeLane      = 2 // the other "lane"
	nodeOwner     = 3 // stopped by TestOwnerDeath
	nodeLost      = 4 // stopped by TestReconstructAfterNodeLoss
	nodeDoomed    = 5 // stopped by TestPlacementGroupBundleReplaced
	nodeCreatorA  = 6 // crashed by TestPlacementGroupCreatorsCrash
	nodeCreatorB  = 7 // crashed by TestPlacementGroupCreatorsCrash
	nodeFailoverA = 8 // stopped by TestActorFailover (its log-replay case)
	nodeFailoverB = 9 // stopped by TestActorFailover (its checkpoint case)
	numNodes      = 10
)

// taps[i], when set, sees every message node i's counted actors handle (a test's probe).
var taps [numNodes]atomic.Pointer[func(role string, m any)]

func TestMain(m *testing.M) {
	if os.Getenv(testcluster.AloneEnv) != "" { // a test in a process of its own (runAlone)
		os.Exit(m.Run())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	// TestPlacementGroupCreatorsCrash's group's bundle needs node 0's "pgcrash".
	c, err := testcluster.Start(ctx, testcluster.Config{Nodes: numNodes, Custom: map[int]map[string]float64{
		nodeKeeper: {"keeper": 1}, nodeDriver: {"lane": 1, "pgcrash": 1}, nodeLane: {"lane": 1}},
		MessageTap: func(i int) func(string, any) {
			return func(role string, m any) {
				if f := taps[i].Load(); f != nil {
					(*f)(role, m)
				}
			}
		}})
	if err == nil {
		if err = c.AwaitViews(ctx); err != nil {
			c.Stop(context.Background())
		}
	}
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testcluster:", err)
		os.Exit(1)
	}
	cluster = c
	code := m.Run()
	if err := c.Stop(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "testcluster stop:", err)
		code = 1
	}
	os.Exit(code)
}

// TestOwnerDeath: when the runtime that created an actor goes away (its node stops), a
// normal actor dies with it and a detached one lives on.
func TestOwnerDeath(t *testing.T) {
	base, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const owner = nodeOwner
	octx := cluster.Context(base, owner)
	ctx := cluster.Context(base, nodeDriver)
	normal := ledgerClass.Remote(octx, ray.V(time.Duration(0)), ray.MaxRestarts(1))
	detached := ledgerClass.Remote(octx, ray.V(time.Duration(0)), ray.MaxRestarts(1), ray.Detached(), ray.Name("keeper"))
	for _, h := range []ray.ActorHandle[ledger]{normal, detached} {
		if h.Err() != nil {
			t.Fatal(h.Err())
		}
		if _, err := ray.Get(octx, ledgerAdd.Remote(octx, h, ray.V(int64(5)))); err != nil {
			t.Fatal(err)
		}
	}
	if err := cluster.StopNode(base, owner); err != nil {
		t.Fatal(err)
	}
	st, err := ray.GetActorState(ctx, normal)
	if err != nil || st.Phase != "Dead" {
		t.Fatalf("actor of a stopped owner: %+v, %v (want Dead)", st, err)
	}
	if _, err := ray.Get(ctx, ledgerState.Remote(ctx, normal)); !errors.Is(err, ray.ErrActorDied) {
		t.Fatalf("call to an actor whose owner died: %v, want ErrActorDied", err)
	}
	h, err := ray.GetActor(ctx, ledgerClass, "keeper")
	if err != nil || h.ID() != detached.ID() {
		t.Fatalf("GetActor(keeper) = %v, %v", h, err)
	}
	got, err := ray.Get(ctx, ledgerState.Remote(ctx, h))
	if err != nil || got != [2]int64{5, 1} {
		t.Fatalf("detached actor after its owner left: %v, %v (want [5 1])", got, err)
	}
	if err := ray.Kill(ctx, h, true); err != nil {
		t.Fatal(err)
	}
}

// TestActorFailover stops the member hosting an actor in the middle of a stream of
// pipelined calls that change its state; the actor comes back on another member, and
// every call took effect exactly once: every returned value and the final state equal
// those of a run without the fault. The first case rebuilds the state by replaying the
// whole method log; the second restores a checkpoint taken in the middle of the stream
// and replays only the log after it. Each case stops a node of its own (8, then 9); the
// driver stays on node 0.
func TestActorFailover(t *testing.T) {
	base, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ctx := cluster.Context(base, 0)
	const calls = 3000
	for _, tc := range []struct {
		name   string
		victim int
		every  int
	}{
		{"log-replay", nodeFailoverA, 1 << 30},
		{"checkpoint", nodeFailoverB, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := actorOn(t, ctx, tc.victim, ray.MaxRestarts(2), ray.CheckpointEvery(tc.every))
			// Every node's count so far: an earlier case may have restarted its actor on
			// the node this one restarts on.
			replayedBefore := make([]int64, len(cluster.Nodes))
			for i, n := range cluster.Nodes {
				replayedBefore[i] = n.ActorStats.Replayed.Load()
			}
			victim := cluster.Nodes[tc.victim].ActorStats
			refs := make([]ray.ObjectRef[int64], 0, calls)
			stopped := make(chan error, 1)
			for i := 1; i <= calls; i++ {
				refs = append(refs, ledgerAdd.Remote(ctx, h, ray.V(int64(i))))
				if i == calls/3 {
					// Stop the host once a third of the calls ran, while the rest are
					// still being submitted.
					first := refs[i-1]
					go func() {
						if _, err := ray.Get(ctx, first); err != nil {
							stopped <- err
							return
						}
						stopped <- cluster.StopNode(base, tc.victim)
					}()
				}
			}
			vals, err := ray.GetAll(ctx, refs)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-stopped; err != nil {
				t.Fatalf("stop node %d: %v", tc.victim, err)
			}
			var sum int64
			for i, v := range vals {
				sum += int64(i + 1)
				if want := sum*1_000_000 + int64(i+1); v != want {
					t.Fatalf("call %d returned %d, want %d: a call was lost, repeated or reordered", i+1, v, want)
				}
			}
			st, err := ray.Get(ctx, ledgerState.Remote(ctx, h))
			if err != nil {
				t.Fatal(err)
			}
			if st != [2]int64{sum, calls} {
				t.Fatalf("final state %v, want [%d %d]", st, sum, calls)
			}
			as, err := ray.GetActorState(ctx, h)
			if err != nil || as.Restarts != 1 || as.Phase != "Alive" || cluster.Index(as.Node) == tc.victim {
				t.Fatalf("actor state after failover: %+v, %v (want Alive elsewhere after 1 restart)", as, err)
			}
			at := cluster.Index(as.Node)
			replayed := cluster.Nodes[at].ActorStats.Replayed.Load() - replayedBefore[at]
			ranBefore := victim.Calls.Load() - 1 // the first State call
			t.Logf("%d calls ran on node %d before it stopped; restarted on node %d, which replayed %d logged calls",
				ranBefore, tc.victim, cluster.Index(as.Node), replayed)
			if ranBefore < calls/3 || ranBefore >= calls {
				t.Fatalf("%d calls ran before the stop: the fault did not land in the middle of the stream", ranBefore)
			}
			// Calls are logged as they arrive and run later, so the log holds more than
			// what ran. Without a checkpoint all of it is replayed; with one, only what
			// came after the newest checkpoint (at least one was taken: 1000+ calls ran).
			switch {
			case tc.every > calls && replayed < ranBefore:
				t.Fatalf("replayed %d calls; at least the %d that ran before the stop had to be", replayed, ranBefore)
			case tc.every < calls && replayed > int64(calls+2-tc.every):
				t.Fatalf("replayed %d calls although a checkpoint was taken every %d", replayed, tc.every)
			}
			if err := ray.Kill(ctx, h, true); err != nil { // so that it does not move again
				t.Fatal(err)
			}
		})
	}
}

// actorOn creates ledger actors until one is placed on node target (the manager places
// on the least loaded node, so a few tries go round the nodes).
func actorOn(t *testing.T, ctx context.Context, target int, opts ...ray.TaskOption) ray.ActorHandle[ledger] {
	t.Helper()
	// Placement picks the least loaded node; the actors that landed elsewhere stay alive
	// until one lands on target (their load moves the next pick on), then go with their
	// handles.
	var others []ray.ActorHandle[ledger]
	defer runtime.KeepAlive(&others)
	for range 3 * len(cluster.Nodes) {
		h := ledgerClass.Remote(ctx, ray.V(500*time.Microsecond), opts...)
		if h.Err() != nil {
			t.Fatal(h.Err())
		}
		if _, err := ray.Get(ctx, ledgerState.Remote(ctx, h)); err != nil {
			t.Fatal(err)
		}
		st, err := ray.GetActorState(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		if cluster.Index(st.Node) == target {
			return h
		}
		others = append(others, h)
	}
	t.Fatalf("no actor was placed on node %d in %d tries", target, len(others))
	return ray.ActorHandle[ledger]{}
}
