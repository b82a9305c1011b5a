package transfer

import (
	"context"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/ids"
	"github.com/ray-go/ray/objects/shard"
)

// BenchmarkPull pulls a 64 MiB object, random or int64s counting up, with and without
// s2, from a shard in the same actor system (messages carry slices: this measures the
// puller's copy and checksum and the s2 work) and across two actor systems over
// protoactor's gRPC transport on loopback.
func BenchmarkPull(b *testing.B) {
	const size = 64 << 20
	values := []struct {
		name string
		data []byte
	}{{"random", randomBytes(size, 1)}, {"numbers", numbers(size)}}
	a, r := remotePair(b)
	for _, where := range []string{"local", "remote"} {
		var (
			store  *actor.PID
			puller *actor.RootContext
			sys    = a
		)
		if where == "local" {
			sys = newSystem(b)
		}
		pid := sys.Root.Spawn(shard.Props(shard.Config{Node: "a", Logger: quiet}))
		store, puller = pid, sys.Root
		if where == "remote" {
			store, puller = actor.NewPID(a.Address(), pid.Id), r.Root
		}
		for i, v := range values {
			id := ids.PutID(ids.NewRootTaskID(), uint32(i+1))
			put(b, sys, pid, id, v.data)
			for _, s2 := range []bool{false, true} {
				name := where + "/" + v.name + "/s2=false"
				if s2 {
					name = where + "/" + v.name + "/s2=true"
				}
				b.Run(name, func(b *testing.B) {
					b.SetBytes(size)
					st := &stats{}
					for b.Loop() {
						if _, err := pull(context.Background(), puller, store, id, Options{S2: s2}, st); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(st.wire)/float64(int64(st.chunks)*MaxChunk), "wire/byte")
				})
			}
		}
	}
}
