package transfer

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/objects/shard"
)

// remoteSystems are two actor systems with the remote transport on loopback, configured
// as a node configures it (internal/assembly/node: 64 MiB gRPC messages, writer batches of 32),
// shared by the tests and benchmarks of this package and never stopped: protoactor's
// remote.Start writes a gRPC global (grpclog.SetLoggerV2) that running gRPC servers read,
// so the race detector objects to a remote starting or stopping while another runs. Both
// start once; before the second starts, reading the first server's HTTP/2 SETTINGS on a
// connection orders the first server's reads of the global before that write (see
// internal/assembly/membership's syncWithGRPCServer). The connection stays open: closing it would
// make the server log.
var remoteSystems = sync.OnceValues(func() ([2]*actor.ActorSystem, error) {
	var out [2]*actor.ActorSystem
	for i := range out {
		sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
		remote.NewRemote(sys, remote.Configure("127.0.0.1", 0,
			remote.WithServerOptions(grpc.MaxRecvMsgSize(64<<20), grpc.MaxSendMsgSize(64<<20)),
			remote.WithEndpointWriterBatchSize(32))).Start()
		out[i] = sys
		if i == 0 {
			conn, err := net.DialTimeout("tcp", sys.Address(), 2*time.Second)
			if err != nil {
				return out, err
			}
			_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
			if _, err := conn.Read(make([]byte, 1)); err != nil {
				return out, fmt.Errorf("sync with the first gRPC server: %w", err)
			}
			_ = conn.SetReadDeadline(time.Time{})
			syncConn = conn
		}
	}
	return out, nil
})

var syncConn net.Conn // open for the life of the test binary

func remotePair(t testing.TB) (a, b *actor.ActorSystem) {
	t.Helper()
	s, err := remoteSystems()
	if err != nil {
		t.Fatal(err)
	}
	return s[0], s[1]
}

// TestPullRemote pulls across two actor systems over protoactor's gRPC transport: chunks
// are protobuf on the wire and stay under the message size limit.
func TestPullRemote(t *testing.T) {
	a, b := remotePair(t)
	local := a.Root.Spawn(shard.Props(shard.Config{Node: "a", Logger: quiet}))
	store := actor.NewPID(a.Address(), local.Id) // as b sees it
	root := ids.NewRootTaskID()
	objs := map[ids.ObjectID][]byte{}
	for i, v := range [][]byte{nil, randomBytes(1, 1), randomBytes(11<<19, 2), numbers(5 << 20), randomBytes(8<<20, 3)} {
		id := ids.PutID(root, uint32(i+1))
		put(t, a, local, id, v)
		objs[id] = v
	}
	for id, v := range objs {
		for _, s2 := range []bool{false, true} {
			st := &stats{}
			got, err := pull(context.Background(), b.Root, store, id, Options{S2: s2, Timeout: 10 * time.Second}, st)
			if err != nil {
				t.Fatalf("%d bytes, s2 %v: %v", len(v), s2, err)
			}
			if string(got) != string(v) {
				t.Fatalf("%d bytes, s2 %v: pulled wrong bytes", len(v), s2)
			}
			if s2 && len(v) == 5<<20 && st.compressed != 5 {
				t.Errorf("numbers over the wire: %d chunks compressed", st.compressed)
			}
		}
	}
	// Many pullers at once from one store. Each chunk may wait long (a minute): under the
	// race detector on a loaded 2-core machine, 8 pullers' chunks queued behind one store
	// took longer than 10 s in CI; what is checked here is that every puller gets its bytes.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range cap(errs) {
		wg.Go(func() {
			for id, v := range objs {
				got, err := Pull(context.Background(), b.Root, store, id, Options{S2: i%2 == 0, Timeout: time.Minute})
				if err == nil && string(got) != string(v) {
					err = fmt.Errorf("wrong bytes")
				}
				if err != nil {
					errs <- fmt.Errorf("puller %d, %d bytes: %w", i, len(v), err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
