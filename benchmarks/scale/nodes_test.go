package main

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/pb"
)

func TestParseNodeCounts(t *testing.T) {
	got, err := parseNodeCounts("-node-counts", " 8,1, 2,2", 64)
	if err != nil || !reflect.DeepEqual(got, []int{1, 2, 8}) {
		t.Fatalf("parseNodeCounts: %v, %v; want [1 2 8]", got, err)
	}
	if got, err := parseNodeCounts("-sim-counts", " ", 64); err != nil || got != nil {
		t.Fatalf("an empty list: %v, %v; want nil, nil (the part is skipped)", got, err)
	}
	for _, bad := range []string{"0", "65", "x", "1,,2", "-1"} {
		_, err := parseNodeCounts("-node-counts", bad, 64)
		if err == nil || !strings.Contains(err.Error(), "-node-counts") || !strings.Contains(err.Error(), "from 1 to 64") {
			t.Errorf("%q: error %v, want one naming the flag and the range", bad, err)
		}
	}
}

// TestCountingStore: the GCS wrapper of the simulated control plane counts writes with
// their key and value bytes, reads with the bytes returned, and watch events with theirs,
// and passes every call through.
func TestCountingStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inner := memstore.New(memstore.Options{})
	defer inner.Close()
	c := &gcsCounts{}
	s := countingStore{Store: inner, c: c}

	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	events := s.Watch(wctx, "k/", 0)

	if _, err := s.Put(ctx, "k/a", []byte("12345"), 0); err != nil { // 3 + 5 bytes
		t.Fatal(err)
	}
	if _, _, err := s.Txn(ctx, []gcs.Cmp{{Key: "k/a", ModRev: 0}}, []gcs.Op{{Kind: gcs.OpPut, Key: "k/b", Value: []byte("xy")}}); err != nil {
		t.Fatal(err) // a failed compare still counts: the call went to the store (3 + 3 + 2 bytes)
	}
	if _, err := s.Delete(ctx, "k/a"); err != nil { // 3 bytes
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "k/c", []byte("abc"), 0); err != nil { // 3 + 3 bytes
		t.Fatal(err)
	}
	kv, ok, err := s.Get(ctx, "k/c")
	if err != nil || !ok || string(kv.Value) != "abc" {
		t.Fatalf("Get through the wrapper: %v %v %v", kv, ok, err)
	}
	if _, _, err := s.List(ctx, "k/"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close of the shared store's wrapper: %v", err)
	}
	if _, _, err := inner.Get(ctx, "k/c"); err != nil {
		t.Fatalf("the wrapper's Close closed the shared store: %v", err)
	}

	// Three events: put k/a, delete k/a, put k/c (the Txn's compare failed).
	seen := 0
	for seen < 3 {
		select {
		case r, ok := <-events:
			if !ok {
				t.Fatal("watch closed early")
			}
			seen += len(r.Events)
		case <-ctx.Done():
			t.Fatalf("saw %d watch events, want 3", seen)
		}
	}
	got := c.snapshot()
	want := gcsSnapshot{Writes: 4, WriteBytes: 8 + 8 + 3 + 6, Reads: 2, ReadBytes: 6 + 6, WatchEvents: 3, Watched: 8 + 3 + 6}
	if got != want {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
	if p := c.prefixes(); !reflect.DeepEqual(p, map[string]int64{"k/": 25}) {
		t.Fatalf("bytes by prefix %v, want all 25 under k/", p)
	}
	if k := keyPrefix("lineage/0123/456"); k != "lineage/" {
		t.Fatalf("keyPrefix: %q", k)
	}
	if d := got.sub(gcsSnapshot{Writes: 1, WriteBytes: 8}); d.Writes != 3 || d.WriteBytes != 17 {
		t.Fatalf("sub: %+v", d)
	}
}

func TestSimMemory(t *testing.T) {
	// The guard's estimate grows with the square of the node count (a queue per peer).
	if one, two := simMemory(16, 36<<20), simMemory(32, 36<<20); two < 3*one {
		t.Fatalf("simMemory(32) = %d, want about 4 times simMemory(16) = %d", two, one)
	}
	if m := simMemory(1, 36<<20); m != 40<<20 {
		t.Fatalf("simMemory(1) = %d, want 40 MiB (no peers)", m)
	}
	if m := simMemory(3, 1<<20); m != 6<<20+120<<20 {
		t.Fatalf("simMemory(3, 1 MiB) = %d, want 6 pairs of 1 MiB + 3 x 40 MiB", m)
	}
}

// TestMsgTypes: the per-type tap keys a message by its receiver's role, its type and its
// sender (role, and whether on another node), and the rows per task subtract the idle
// rate and leave out the negligible ones.
func TestMsgTypes(t *testing.T) {
	for id, want := range map[string]string{
		"owner-j1-0123abcd-s12":   "shard",
		"owner-j1-0123abcd":       "owner",
		"raylet/n/abc/raylet$4":   "raylet",
		"worker/n/abc/worker/1$7": "worker",
		"future$12":               "future",
		"membership":              "membership",
	} {
		if got := senderRole(id); got != want {
			t.Errorf("senderRole(%q) = %q, want %q", id, got, want)
		}
	}
	m := newMsgTypes()
	m.setAddrs([]string{"127.0.0.1:1", "127.0.0.1:2"})
	tap0, tap1 := m.tap(0), m.tap(1)
	push := &pb.LeasePush{}
	tap0("worker", &actor.MessageEnvelope{Message: push, Sender: actor.NewPID("127.0.0.1:2", "owner-j-x-s3")})
	tap0("worker", &actor.MessageEnvelope{Message: push, Sender: actor.NewPID("127.0.0.1:1", "owner-j-x-s3")})
	tap1("shard", struct{}{})
	// Lease requests and pushes travel without an envelope sender; the owner they name
	// tells a peer's from the node's own.
	tap1("raylet", &pb.LeaseRequest{Owner: &pb.PID{Address: "127.0.0.1:1", Id: "owner-j-x-s3"}})
	tap1("raylet", &pb.LeaseRequest{Owner: &pb.PID{Address: "127.0.0.1:2", Id: "owner-j-x-s3"}})
	tap1("raylet", &pb.LeaseRequest{})
	tap1("worker", &pb.LeasePush{ReplyTo: &pb.PID{Address: "127.0.0.1:1", Id: "owner-j-x-s0"}})
	got := m.snapshot()
	want := map[msgKey]int64{
		{Receiver: "worker", Type: "*pb.LeasePush", Sender: "shard (peer)"}:    2,
		{Receiver: "worker", Type: "*pb.LeasePush", Sender: "shard"}:           1,
		{Receiver: "shard", Type: "struct {}", Sender: "-"}:                    1,
		{Receiver: "raylet", Type: "*pb.LeaseRequest", Sender: "shard (peer)"}: 1,
		{Receiver: "raylet", Type: "*pb.LeaseRequest", Sender: "shard"}:        1,
		{Receiver: "raylet", Type: "*pb.LeaseRequest", Sender: "-"}:            1,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	a := map[msgKey]int64{{Receiver: "shard", Type: "a"}: 300, {Receiver: "shard", Type: "b"}: 20, {Receiver: "raylet", Type: "c"}: 1}
	d := subCounts(a, map[msgKey]int64{{Receiver: "shard", Type: "a"}: 100})
	idle := map[msgKey]float64{{Receiver: "shard", Type: "b"}: 10} // per second
	rows := typeRows(d, idle, 1, 1000, 0.005)                      // 1 s window, 1000 tasks
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if len(rows) != 2 || rows[0].Key != "shard <- : a" || !near(rows[0].PerTask, 0.2) || !near(rows[0].NetOfIdle, 0.2) ||
		rows[1].Key != "shard <- : b" || !near(rows[1].PerTask, 0.02) || !near(rows[1].NetOfIdle, 0.01) {
		t.Fatalf("rows %+v, want a (0.2 per task, 0.2 net) then b (0.02, 0.01 net); c under the floor", rows)
	}
}

func TestParseSimWorkloads(t *testing.T) {
	got, err := parseSimWorkloads("local, default")
	if err != nil || len(got) != 2 || got[0] != "local" || got[1] != "default" {
		t.Fatalf(`parseSimWorkloads("local, default") = %v, %v`, got, err)
	}
	for _, bad := range []string{"", "local,", "spread", "remote,remote"} {
		if _, err := parseSimWorkloads(bad); err == nil {
			t.Errorf("parseSimWorkloads(%q): no error", bad)
		}
	}
}
