package cli

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/gcstest"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestDeadActorLogTarget: the log of a DEAD actor is that of the worker process it last
// ran in (the newest node its history names), as Ray serves it; it failed with "is DEAD and
// has no node". An actor whose process the cluster no longer knows says its log is gone.
func TestDeadActorLogTarget(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(memstore.Options{})
	defer s.Close()
	put := func(key string, m proto.Message) { gcstest.PutProto(t, s, key, m) }
	dead := func(id byte, node string) {
		put(gcs.ActorKey(string(rune('a'+id))), &pb.ActorInfo{ActorId: []byte{id, 0xaa, 0xbb}, Class: "Counter", Phase: int32(lifecycle.Dead), JobId: "j1",
			History: []*pb.ActorTransition{{Phase: int32(lifecycle.Pending), UnixMs: 1, Incarnation: 1},
				{Phase: int32(lifecycle.Alive), UnixMs: 2, Incarnation: 1, Node: node},
				{Phase: int32(lifecycle.Dead), UnixMs: 3, Incarnation: 1}}})
	}
	dead(1, "aabbccddeeff0011")
	dead(2, "9988776655443322")
	put(gcs.JobWorkerKey("j1", "agent1"), &pb.JobWorker{JobId: "j1", AgentId: "agent1", NodeId: "aabbccddeeff0011", Pid: 42,
		LogPath: "/s/agent-agent1/logs/worker-j1.log"})

	tg, err := actorTarget(ctx, s, "01aabb")
	if err != nil {
		t.Fatalf("logs actor of a dead actor: %v", err)
	}
	if tg.agent != "agent1" || tg.job != "j1" || tg.pid != 42 || tg.node != "aabbccddeeff0011" || !strings.Contains(tg.dead, "DEAD") {
		t.Fatalf("target %+v, want the worker process 42 of job j1 on agent1, marked dead", tg)
	}
	if _, err := actorTarget(ctx, s, "02aabb"); err == nil || !strings.Contains(err.Error(), "its log is gone") {
		t.Fatalf("a dead actor whose process is unknown: %v, want its log gone", err)
	}
}

// TestCallsWroteNothing: logs actor --calls names the call (or calls) that wrote nothing,
// not the actor: it said "the actor ... wrote nothing to the log" about one call.
func TestCallsWroteNothing(t *testing.T) {
	for calls, want := range map[string]string{
		"call 0a1b (C.Add, incarnation 1, FINISHED)":                                            "the call 0a1b (C.Add, incarnation 1, FINISHED) wrote nothing to the log (of the worker process 42 of job j1 on agent a1)",
		"call 0a1b (C.Add, incarnation 1, FINISHED)|call 0a1c (C.Add, incarnation 1, FINISHED)": "the calls 0a1b (C.Add, incarnation 1, FINISHED), 0a1c (C.Add, incarnation 1, FINISHED) wrote nothing",
	} {
		tg := &logTarget{desc: callsDesc(strings.Split(calls, "|")), agent: "a1", job: "j1", pid: 42, span: true, from: 5, to: 5}
		var out, errb strings.Builder
		if err := tg.printSpan(context.Background(), nil, &out, &errb, -1); err != nil || out.Len() != 0 || !strings.Contains(errb.String(), want) {
			t.Errorf("%q: %v %q %q, want %q", calls, err, out.String(), errb.String(), want)
		}
	}
}
