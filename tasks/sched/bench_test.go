package sched

import (
	"fmt"
	"testing"
)

var (
	sinkBool     bool
	sinkDecision Decision
	sinkRes      Resources
)

func BenchmarkFitsCPU(b *testing.B) {
	avail, r := P("CPU=8"), P("CPU=0.5")
	b.ReportAllocs()
	for b.Loop() {
		sinkBool = avail.Fits(r)
	}
}

func BenchmarkFitsCustom(b *testing.B) {
	avail := P("CPU=8 GPU=1 memory=1000000 object_store_memory=1000000 tpu=4")
	r := P("CPU=1 memory=100 tpu=1")
	b.ReportAllocs()
	for b.Loop() {
		sinkBool = avail.Fits(r)
	}
}

func BenchmarkSubAddCPU(b *testing.B) {
	avail, r := P("CPU=8"), P("CPU=0.5")
	b.ReportAllocs()
	for b.Loop() {
		sinkRes = avail.Sub(r).Add(r)
	}
}

func benchNodes(n int) []Node {
	nodes := make([]Node, n)
	for i := range nodes {
		// Every node is above the threshold so Default scores them all.
		nodes[i] = withQueue(node(fmt.Sprintf("node-%03d", i), "CPU=16 memory=64000000000 object_store_memory=16000000000", "CPU=10 memory=1000000000"), i%3)
	}
	return nodes
}

func BenchmarkPlace(b *testing.B) {
	cases := []struct {
		name  string
		nodes int
		req   Request
		local string
	}{
		{"default/1node", 1, req("CPU=1"), "node-000"},
		{"default/100nodes", 100, req("CPU=1"), "node-000"},
		{"default/100nodes/args", 100, withArgs(req("CPU=1"), "node-042", 1<<20, "node-077", 4<<20), "node-000"},
		{"default/100nodes/local-idle", 100, req("CPU=1"), "idle"},
		{"spread/100nodes", 100, Request{Resources: P("CPU=1"), Strategy: Spread}, "node-000"},
		{"affinity/100nodes", 100, affinity(req("CPU=1"), "node-050", false), "node-000"},
	}
	for _, c := range cases {
		nodes := benchNodes(c.nodes)
		if c.local == "idle" { // the local node, first in the slice, is under the threshold
			nodes[0] = node("idle", "CPU=16", "CPU=1")
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var opt Options
			for b.Loop() {
				opt.SpreadCounter++
				d, err := Place(c.req, nodes, c.local, opt)
				if err != nil {
					b.Fatal(err)
				}
				sinkDecision = d
			}
		})
	}
}

func BenchmarkQueueDispatch(b *testing.B) {
	// 64 queued requests in 4 shapes; a node with room for 8 CPUs.
	shapes := []Resources{P("CPU=1"), P("CPU=2"), P("CPU=0.5"), P("CPU=1 GPU=1")}
	avail := P("CPU=8")
	var q Queue[int]
	buf := make([]int, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		for q.Len() < 64 {
			q.Push(q.Len(), shapes[q.Len()%len(shapes)])
		}
		buf, sinkRes = q.Dispatch(avail, 0, buf[:0])
	}
}
