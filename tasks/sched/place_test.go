package sched

import (
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
)

// P parses "CPU=4 GPU=0.5 tpu=1" into Resources.
func P(s string) Resources {
	m := map[string]float64{}
	for _, f := range strings.Fields(s) {
		k, v, _ := strings.Cut(f, "=")
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			panic(err)
		}
		m[k] = x
	}
	return R(m)
}

// node is an alive node with the given total and in-use resources.
func node(id, total, used string) Node {
	t := P(total)
	return Node{ID: id, Total: t, Available: t.Sub(P(used)), Alive: true}
}

func withQueue(n Node, q int) Node { n.Queued = q; return n }
func dead(n Node) Node             { n.Alive = false; return n }
func suspect(n Node) Node          { n.Alive, n.Suspect = false, true; return n }

func req(s string) Request { return Request{Resources: P(s)} }

func withArgs(r Request, kv ...any) Request {
	r.ArgBytes = map[string]int64{}
	for i := 0; i < len(kv); i += 2 {
		r.ArgBytes[kv[i].(string)] = int64(kv[i+1].(int))
	}
	return r
}

func affinity(r Request, id string, soft bool) Request {
	r.Strategy, r.AffinityNode, r.Soft = NodeAffinity, id, soft
	return r
}

type placeCase struct {
	name   string
	req    Request
	nodes  []Node
	local  string
	opt    Options
	node   string // wanted node (when no error)
	runNow bool
	reason Reason
	err    error  // wanted sentinel
	msg    string // wanted full error message, if set
}

var placeCases = []placeCase{
	// Default: local first while under the threshold.
	{name: "single idle local", req: req("CPU=1"), local: "a",
		nodes: []Node{node("a", "CPU=4", "")},
		node:  "a", runNow: true, reason: ReasonPreferred},
	{name: "local under threshold beats idle remotes", req: req("CPU=1"), local: "b",
		nodes: []Node{node("a", "CPU=4", ""), node("b", "CPU=4", "CPU=1"), node("c", "CPU=4", "")},
		node:  "b", runNow: true, reason: ReasonPreferred},
	{name: "local at threshold spills to idle remote", req: req("CPU=1"), local: "b",
		nodes: []Node{node("a", "CPU=4", ""), node("b", "CPU=4", "CPU=2")},
		node:  "a", runNow: true, reason: ReasonBest},
	{name: "custom threshold keeps local", req: req("CPU=1"), local: "b", opt: Options{Threshold: 0.9},
		nodes: []Node{node("a", "CPU=4", ""), node("b", "CPU=4", "CPU=3")},
		node:  "b", runNow: true, reason: ReasonPreferred},
	{name: "local under threshold but cannot run now", req: req("CPU=6"), local: "b",
		nodes: []Node{node("a", "CPU=8", ""), node("b", "CPU=10", "CPU=4.5")},
		node:  "a", runNow: true, reason: ReasonBest},
	{name: "local oversubscribed", req: req("CPU=1"), local: "a",
		nodes: []Node{node("a", "CPU=1", "CPU=2"), node("b", "CPU=1", "")},
		node:  "b", runNow: true, reason: ReasonBest},
	{name: "local infeasible (no GPU)", req: req("GPU=1"), local: "a",
		nodes: []Node{node("a", "CPU=8", ""), node("g", "CPU=8 GPU=1", "")},
		node:  "g", runNow: true, reason: ReasonBest},
	{name: "local absent from view (driver)", req: req("CPU=1"), local: "driver",
		nodes: []Node{node("a", "CPU=4", "CPU=3"), node("b", "CPU=4", "CPU=1")},
		node:  "b", runNow: true, reason: ReasonBest},
	{name: "zero-resource request stays local", req: req(""), local: "a",
		nodes: []Node{node("a", "", ""), node("b", "CPU=4", "")},
		node:  "a", runNow: true, reason: ReasonPreferred},
	{name: "dead nodes ignored", req: req("CPU=1"), local: "x",
		nodes: []Node{dead(node("a", "CPU=64", "")), node("b", "CPU=4", "CPU=3")},
		node:  "b", runNow: true, reason: ReasonBest},
	{name: "dead local ignored", req: req("CPU=1"), local: "a",
		nodes: []Node{dead(node("a", "CPU=4", "")), node("b", "CPU=4", "CPU=3")},
		node:  "b", runNow: true, reason: ReasonBest},

	// Custom resources only match nodes that declare them.
	{name: "custom resource", req: req("CPU=1 tpu=1"), local: "a",
		nodes: []Node{node("a", "CPU=8", ""), node("b", "CPU=8 other=4", ""), node("t", "CPU=1 tpu=4", "tpu=1")},
		node:  "t", runNow: true, reason: ReasonBest},
	{name: "custom resource utilization counts", req: req("tpu=1"), local: "x",
		nodes: []Node{node("a", "CPU=8 tpu=4", "tpu=3"), node("b", "CPU=8 tpu=4", "CPU=2 tpu=1")},
		node:  "b", runNow: true, reason: ReasonBest},
	{name: "memory utilization counts", req: req("CPU=1"), local: "a",
		nodes: []Node{node("a", "CPU=8 memory=100", "memory=80"), node("b", "CPU=8 memory=100 object_store_memory=100", "object_store_memory=10")},
		node:  "b", runNow: true, reason: ReasonBest},
	{name: "object store utilization counts", req: req("CPU=1"), local: "a",
		nodes: []Node{node("a", "CPU=8 object_store_memory=100", "object_store_memory=90"), node("b", "CPU=8", "CPU=1")},
		node:  "b", runNow: true, reason: ReasonBest},

	// Scoring.
	{name: "lower utilization above threshold", req: req("CPU=1"), local: "x",
		nodes: []Node{node("a", "CPU=10", "CPU=9"), node("b", "CPU=10", "CPU=6"), node("c", "CPU=10", "CPU=8")},
		node:  "b", runNow: true, reason: ReasonBest},
	{name: "raw utilization breaks ties under threshold", req: req("CPU=1"), local: "x",
		nodes: []Node{node("a", "CPU=4", "CPU=1"), node("b", "CPU=4", ""), node("c", "CPU=4", "CPU=1")},
		node:  "b", runNow: true, reason: ReasonBest},
	{name: "smaller ID breaks full ties, independent of order", req: req("CPU=1"), local: "x",
		nodes: []Node{node("c", "CPU=4", ""), node("b", "CPU=4", ""), node("d", "CPU=4", "")},
		node:  "b", runNow: true, reason: ReasonBest},
	{name: "run now beats better score", req: req("CPU=2"), local: "x",
		nodes: []Node{node("a", "CPU=10", "CPU=9"), node("b", "CPU=4", "CPU=1")},
		node:  "b", runNow: true, reason: ReasonBest},
	{name: "all busy: shortest wait per CPU", req: req("CPU=1"), local: "x",
		nodes: []Node{withQueue(node("a", "CPU=2", "CPU=2"), 10), withQueue(node("b", "CPU=1", "CPU=1"), 4), withQueue(node("c", "CPU=8", "CPU=8"), 48)},
		node:  "b", runNow: false, reason: ReasonBest},
	{name: "queue counts against idle-looking node", req: req("CPU=1"), local: "x",
		nodes: []Node{withQueue(node("a", "CPU=4", ""), 8), node("b", "CPU=4", "CPU=2.5")},
		node:  "b", runNow: true, reason: ReasonBest},
	{name: "all busy: local wins a tie", req: req("CPU=1"), local: "b",
		nodes: []Node{withQueue(node("a", "CPU=1", "CPU=1"), 1), withQueue(node("b", "CPU=1", "CPU=1"), 1)},
		node:  "b", runNow: false, reason: ReasonBest},

	// Locality of arguments.
	{name: "argument bytes make a remote node preferred", req: withArgs(req("CPU=1"), "c", 1<<20), local: "a",
		nodes: []Node{node("a", "CPU=4", ""), node("b", "CPU=4", ""), node("c", "CPU=4", "CPU=1")},
		node:  "c", runNow: true, reason: ReasonPreferred},
	{name: "most argument bytes preferred", req: withArgs(req("CPU=1"), "a", 10, "b", 30, "c", 20), local: "a",
		nodes: []Node{node("a", "CPU=4", ""), node("b", "CPU=4", ""), node("c", "CPU=4", "")},
		node:  "b", runNow: true, reason: ReasonPreferred},
	{name: "equal argument bytes: local preferred", req: withArgs(req("CPU=1"), "a", 10, "b", 10), local: "b",
		nodes: []Node{node("a", "CPU=4", ""), node("b", "CPU=4", "")},
		node:  "b", runNow: true, reason: ReasonPreferred},
	{name: "equal argument bytes, no local: smaller ID preferred", req: withArgs(req("CPU=1"), "b", 10, "c", 10), local: "x",
		nodes: []Node{node("c", "CPU=4", ""), node("b", "CPU=4", "")},
		node:  "b", runNow: true, reason: ReasonPreferred},
	{name: "bytes on dead or unknown nodes ignored", req: withArgs(req("CPU=1"), "d", 100, "zz", 100), local: "a",
		nodes: []Node{dead(node("d", "CPU=4", "")), node("a", "CPU=4", ""), node("b", "CPU=4", "")},
		node:  "a", runNow: true, reason: ReasonPreferred},
	{name: "locality bonus outweighs a small load difference", req: withArgs(req("CPU=1"), "b", 100), local: "x",
		nodes: []Node{node("a", "CPU=10", "CPU=6"), node("b", "CPU=10", "CPU=7")},
		node:  "b", runNow: true, reason: ReasonBest},
	{name: "locality bonus does not outweigh heavy load", req: withArgs(req("CPU=1"), "b", 100), local: "x",
		nodes: []Node{node("a", "CPU=10", "CPU=2"), node("b", "CPU=10", "CPU=7")},
		node:  "a", runNow: true, reason: ReasonBest},
	{name: "a megabyte of arguments keeps a task on a busy node that can run it now", req: withArgs(req("CPU=1"), "b", 8<<20), local: "x",
		nodes: []Node{node("a", "CPU=10", "CPU=2"), node("b", "CPU=10", "CPU=9")},
		node:  "b", runNow: true, reason: ReasonPreferred},
	{name: "a megabyte of arguments does not keep a task on a node that cannot run it now", req: withArgs(req("CPU=1"), "b", 8<<20), local: "x",
		nodes: []Node{node("a", "CPU=10", "CPU=2"), node("b", "CPU=10", "CPU=10")},
		node:  "a", runNow: true, reason: ReasonBest},
	{name: "KeepBytes off: a busy node holding a megabyte passes the task on", req: withArgs(req("CPU=1"), "b", 8<<20), local: "x",
		opt:   Options{KeepBytes: -1},
		nodes: []Node{node("a", "CPU=10", "CPU=2"), node("b", "CPU=10", "CPU=9")},
		node:  "a", runNow: true, reason: ReasonBest},
	{name: "partial bytes give partial bonus", req: withArgs(req("CPU=1"), "a", 10, "b", 90), local: "x",
		opt:   Options{LocalityWeight: 0.5},
		nodes: []Node{node("a", "CPU=10", "CPU=6"), node("b", "CPU=10", "CPU=9")},
		node:  "b", runNow: true, reason: ReasonBest}, // a: .6-.05=.55, b: .9-.45=.45
	{name: "bonus disabled: bytes only break ties", req: withArgs(req("CPU=1"), "b", 100, "c", 5), local: "x",
		opt:   Options{LocalityWeight: -1},
		nodes: []Node{node("a", "CPU=10", "CPU=6"), node("b", "CPU=10", "CPU=7"), node("c", "CPU=10", "CPU=9"), node("d", "CPU=10", "CPU=6")},
		node:  "a", runNow: true, reason: ReasonBest},
	{name: "bytes break score ties before raw utilization", req: withArgs(req("CPU=1"), "b", 100, "c", 1), local: "x",
		opt:   Options{LocalityWeight: -1},
		nodes: []Node{node("a", "CPU=10", ""), node("b", "CPU=10", "CPU=9"), node("c", "CPU=10", "CPU=3")},
		node:  "c", runNow: true, reason: ReasonBest},

	// GPU avoidance.
	{name: "cpu task avoids idle GPU node", req: req("CPU=1"), local: "x",
		nodes: []Node{node("g", "CPU=8 GPU=1", ""), node("c", "CPU=8", "CPU=7")},
		node:  "c", runNow: true, reason: ReasonBest},
	{name: "cpu task leaves local GPU node for a CPU node", req: req("CPU=1"), local: "g",
		nodes: []Node{node("g", "CPU=8 GPU=1", ""), node("c", "CPU=8", "CPU=6")},
		node:  "c", runNow: true, reason: ReasonBest},
	{name: "cpu task stays on local GPU node when CPU nodes are full", req: req("CPU=1"), local: "g",
		nodes: []Node{node("g", "CPU=8 GPU=1", ""), node("c", "CPU=8", "CPU=8")},
		node:  "g", runNow: true, reason: ReasonPreferred},
	{name: "GPU node that can run now beats queueing on CPU node", req: req("CPU=1"), local: "x",
		nodes: []Node{node("c", "CPU=8", "CPU=8"), node("g", "CPU=8 GPU=1", "CPU=7")},
		node:  "g", runNow: true, reason: ReasonBest},
	{name: "KeepGPUNodes keeps local GPU node", req: req("CPU=1"), local: "g", opt: Options{KeepGPUNodes: true},
		nodes: []Node{node("g", "CPU=8 GPU=1", ""), node("c", "CPU=8", "")},
		node:  "g", runNow: true, reason: ReasonPreferred},
	{name: "GPU task is not steered away from GPU nodes", req: req("CPU=1 GPU=0.5"), local: "c",
		nodes: []Node{node("c", "CPU=8", ""), node("g", "CPU=8 GPU=1", "GPU=0.25")},
		node:  "g", runNow: true, reason: ReasonBest},
	{name: "GPU utilization counts for GPU tasks", req: req("GPU=1"), local: "x",
		nodes: []Node{node("g1", "CPU=8 GPU=4", "GPU=3"), node("g2", "CPU=8 GPU=4", "CPU=4 GPU=1")},
		node:  "g2", runNow: true, reason: ReasonBest},

	// Errors.
	{name: "infeasible GPU", req: req("CPU=1 GPU=2"), local: "a",
		nodes: []Node{node("a", "CPU=8", ""), node("b", "CPU=8", "")},
		err:   ErrInfeasible, msg: "sched: infeasible: task requires GPU=2 but the largest node has GPU=0"},
	{name: "infeasible: dead nodes do not count", req: req("GPU=2"), local: "a",
		nodes: []Node{node("a", "CPU=8 GPU=1", ""), dead(node("b", "CPU=8 GPU=8", ""))},
		err:   ErrInfeasible, msg: "sched: infeasible: task requires GPU=2 but the largest node has GPU=1"},
	{name: "infeasible CPU fraction", req: req("CPU=4.5"), local: "a",
		nodes: []Node{node("a", "CPU=4", ""), node("b", "CPU=2", "")},
		err:   ErrInfeasible, msg: "sched: infeasible: task requires CPU=4.5 but the largest node has CPU=4"},
	{name: "infeasible custom", req: req("CPU=1 tpu=1"), local: "a",
		nodes: []Node{node("a", "CPU=8 memory=100", "")},
		err:   ErrInfeasible, msg: "sched: infeasible: task requires tpu=1 but the largest node has tpu=0"},
	{name: "infeasible: first resource in order reported", req: req("CPU=100 GPU=2 zz=1"), local: "a",
		nodes: []Node{node("a", "CPU=8", "")},
		err:   ErrInfeasible, msg: "sched: infeasible: task requires CPU=100 but the largest node has CPU=8"},
	{name: "infeasible combination", req: req("CPU=4 GPU=1"), local: "a",
		nodes: []Node{node("a", "CPU=8", ""), node("b", "CPU=2 GPU=1", "")},
		err:   ErrInfeasible, msg: "sched: infeasible: task requires {CPU=4, GPU=1} but no single node has all of it"},
	{name: "no nodes", req: req("CPU=1"), local: "a", err: ErrNoNodes, msg: "sched: no alive nodes"},
	{name: "no alive nodes", req: req("CPU=1"), local: "a",
		nodes: []Node{dead(node("a", "CPU=8", ""))}, err: ErrNoNodes},
	{name: "negative demand", req: Request{Resources: Resources{}.Sub(P("CPU=1"))}, local: "a",
		nodes: []Node{node("a", "CPU=8", "")},
		err:   ErrInvalidRequest, msg: "sched: invalid request: negative demand {CPU=-1}"},
	{name: "unknown strategy", req: Request{Resources: P("CPU=1"), Strategy: 9}, local: "a",
		nodes: []Node{node("a", "CPU=8", "")},
		err:   ErrInvalidRequest, msg: "sched: invalid request: unknown strategy Strategy(9)"},

	// Node affinity.
	{name: "hard affinity", req: affinity(req("CPU=1"), "b", false), local: "a",
		nodes: []Node{node("a", "CPU=8", ""), node("b", "CPU=8", "CPU=7")},
		node:  "b", runNow: true, reason: ReasonAffinity},
	{name: "hard affinity busy: queue there", req: affinity(req("CPU=1"), "b", false), local: "a",
		nodes: []Node{node("a", "CPU=8", ""), withQueue(node("b", "CPU=8", "CPU=8"), 100)},
		node:  "b", runNow: false, reason: ReasonAffinity},
	{name: "hard affinity dead", req: affinity(req("CPU=1"), "b", false), local: "a",
		nodes: []Node{node("a", "CPU=8", ""), dead(node("b", "CPU=8", ""))},
		err:   ErrAffinityUnavailable, msg: `sched: node affinity: node unavailable: "b" is dead`},
	{name: "hard affinity suspect: wait", req: affinity(req("CPU=1"), "b", false), local: "a",
		nodes: []Node{node("a", "CPU=8", ""), suspect(node("b", "CPU=8", ""))},
		err:   ErrAffinitySuspect, msg: `sched: node affinity: node unreachable for now: "b"`},
	{name: "soft affinity suspect: default", req: affinity(req("CPU=1"), "b", true), local: "a",
		nodes: []Node{node("a", "CPU=8", ""), suspect(node("b", "CPU=8", ""))},
		node:  "a", runNow: true, reason: ReasonPreferred},
	{name: "default never places on a suspect", req: req("CPU=1"), local: "b",
		nodes: []Node{node("a", "CPU=8", ""), suspect(node("b", "CPU=8", ""))},
		node:  "a", runNow: true, reason: ReasonBest},
	{name: "only a suspect holds it: wait", req: req("CPU=1 far=1"), local: "a",
		nodes: []Node{node("a", "CPU=8", ""), suspect(node("b", "CPU=2 far=1", ""))},
		err:   ErrSuspectOnly, msg: "sched: only nodes unreachable for now could run it: task requires {CPU=1, far=1}, which node b has"},
	{name: "a suspect too small: infeasible", req: req("CPU=1 far=2"), local: "a",
		nodes: []Node{node("a", "CPU=8", ""), suspect(node("b", "CPU=2 far=1", ""))},
		err:   ErrInfeasible, msg: "sched: infeasible: task requires far=2 but the largest node has far=0"},
	{name: "a dead node holds it: infeasible", req: req("CPU=1 far=1"), local: "a",
		nodes: []Node{node("a", "CPU=8", ""), dead(node("b", "CPU=2 far=1", ""))},
		err:   ErrInfeasible, msg: "sched: infeasible: task requires far=1 but the largest node has far=0"},
	{name: "soft affinity, only a suspect holds it: wait", req: affinity(req("far=1"), "a", true), local: "a",
		nodes: []Node{node("a", "CPU=8", ""), suspect(node("b", "CPU=2 far=1", ""))},
		err:   ErrSuspectOnly},
	{name: "spread, only a suspect holds it: wait", req: Request{Resources: P("far=1"), Strategy: Spread}, local: "a",
		nodes: []Node{node("a", "CPU=8", ""), suspect(node("b", "CPU=2 far=1", ""))},
		err:   ErrSuspectOnly},
	{name: "hard affinity missing", req: affinity(req("CPU=1"), "zz", false), local: "a",
		nodes: []Node{node("a", "CPU=8", "")},
		err:   ErrAffinityUnavailable, msg: `sched: node affinity: node unavailable: "zz" is not in the cluster view`},
	{name: "hard affinity infeasible", req: affinity(req("CPU=1 GPU=2"), "b", false), local: "a",
		nodes: []Node{node("a", "CPU=8 GPU=4", ""), node("b", "CPU=8 GPU=1", "")},
		err:   ErrInfeasible, msg: `sched: infeasible: task requires GPU=2 but node "b" (hard affinity) has GPU=1`},
	{name: "hard affinity exact fit", req: affinity(req("CPU=1 GPU=2"), "b", false), local: "a",
		nodes: []Node{node("b", "CPU=1 GPU=2", "")},
		node:  "b", runNow: true, reason: ReasonAffinity},
	{name: "affinity without node", req: affinity(req("CPU=1"), "", false), local: "a",
		nodes: []Node{node("a", "CPU=8", "")},
		err:   ErrInvalidRequest, msg: "sched: invalid request: node affinity without a node ID"},
	{name: "soft affinity alive", req: affinity(req("CPU=1"), "b", true), local: "a",
		nodes: []Node{node("a", "CPU=8", ""), node("b", "CPU=8", "CPU=7")},
		node:  "b", runNow: true, reason: ReasonAffinity},
	{name: "soft affinity busy: queue there", req: affinity(req("CPU=1"), "b", true), local: "a",
		nodes: []Node{node("a", "CPU=8", ""), node("b", "CPU=8", "CPU=8")},
		node:  "b", runNow: false, reason: ReasonAffinity},
	{name: "soft affinity dead: default", req: affinity(req("CPU=1"), "b", true), local: "a",
		nodes: []Node{node("a", "CPU=8", ""), dead(node("b", "CPU=8", ""))},
		node:  "a", runNow: true, reason: ReasonPreferred},
	{name: "soft affinity missing: default", req: affinity(req("CPU=1"), "zz", true), local: "a",
		nodes: []Node{node("a", "CPU=8", "CPU=6"), node("b", "CPU=8", "")},
		node:  "b", runNow: true, reason: ReasonBest},
	{name: "soft affinity infeasible: default", req: affinity(req("GPU=1"), "a", true), local: "a",
		nodes: []Node{node("a", "CPU=8", ""), node("g", "CPU=8 GPU=1", "")},
		node:  "g", runNow: true, reason: ReasonBest},
	{name: "soft affinity infeasible everywhere", req: affinity(req("GPU=1"), "a", true), local: "a",
		nodes: []Node{node("a", "CPU=8", "")},
		err:   ErrInfeasible, msg: "sched: infeasible: task requires GPU=1 but the largest node has GPU=0"},

	// Spread (counter 0 here; rotation in TestSpreadRotation).
	{name: "spread ignores local", req: Request{Resources: P("CPU=1"), Strategy: Spread}, local: "b",
		nodes: []Node{node("a", "CPU=8", "CPU=7"), node("b", "CPU=8", "")},
		node:  "a", runNow: true, reason: ReasonSpread},
	{name: "spread infeasible", req: Request{Resources: P("GPU=1"), Strategy: Spread}, local: "a",
		nodes: []Node{node("a", "CPU=8", "")},
		err:   ErrInfeasible, msg: "sched: infeasible: task requires GPU=1 but the largest node has GPU=0"},
	{name: "spread no nodes", req: Request{Resources: P("CPU=1"), Strategy: Spread}, local: "a",
		nodes: []Node{dead(node("a", "CPU=8", ""))}, err: ErrNoNodes},
}

func TestPlace(t *testing.T) {
	for _, tt := range placeCases {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Place(tt.req, tt.nodes, tt.local, tt.opt)
			checkPlace(t, tt, d, err)
			if tt.err == nil && tt.nodes[d.Index].ID != d.Node {
				t.Errorf("Index %d is %q, not %q", d.Index, tt.nodes[d.Index].ID, d.Node)
			}
		})
	}
}

// TestPlaceOrderIndependent: except for Spread, the decision does not depend on the order of
// the nodes slice.
func TestPlaceOrderIndependent(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, tt := range placeCases {
		if tt.req.Strategy == Spread {
			continue
		}
		for range 20 {
			nodes := append([]Node(nil), tt.nodes...)
			rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
			d, err := Place(tt.req, nodes, tt.local, tt.opt)
			checkPlace(t, tt, d, err)
		}
	}
}

func checkPlace(t *testing.T, tt placeCase, d Decision, err error) {
	t.Helper()
	if tt.err != nil {
		if !errors.Is(err, tt.err) {
			t.Fatalf("%s: err = %v, want %v", tt.name, err, tt.err)
		}
		if tt.msg != "" && err.Error() != tt.msg {
			t.Fatalf("%s: message\n got %s\nwant %s", tt.name, err, tt.msg)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", tt.name, err)
	}
	if d.Node != tt.node || d.RunNow != tt.runNow || d.Reason != tt.reason {
		t.Fatalf("%s: got %s runNow=%v %v, want %s runNow=%v %v", tt.name, d.Node, d.RunNow, d.Reason, tt.node, tt.runNow, tt.reason)
	}
}

func TestInfeasibleErrorFields(t *testing.T) {
	_, err := Place(req("CPU=1 GPU=2"), []Node{node("a", "CPU=8 GPU=1", "")}, "a", Options{})
	var ie *InfeasibleError
	if !errors.As(err, &ie) {
		t.Fatalf("not an *InfeasibleError: %v", err)
	}
	if ie.Resource != GPU || ie.Need != 2*Unit || ie.Largest != Unit || ie.Node != "" || !ie.Request.Equal(P("CPU=1 GPU=2")) {
		t.Fatalf("fields: %+v", ie)
	}
}

func TestSpreadRotation(t *testing.T) {
	spread := Request{Resources: P("CPU=1"), Strategy: Spread}
	tests := []struct {
		name   string
		nodes  []Node
		want   string // node chosen for counters 0, 1, 2, ...
		runNow bool
	}{
		{"three idle", []Node{node("a", "CPU=1", ""), node("b", "CPU=1", ""), node("c", "CPU=1", "")}, "abcabc", true},
		{"dead and infeasible skipped evenly",
			[]Node{node("a", "CPU=1", ""), dead(node("x", "CPU=1", "")), node("y", "GPU=1", ""), node("b", "CPU=1", "")}, "ababab", true},
		{"busy nodes skipped while others can run",
			[]Node{node("a", "CPU=1", ""), node("x", "CPU=1", "CPU=1"), node("b", "CPU=1", "")}, "ababab", true},
		{"all busy: rotate over feasible and queue",
			[]Node{node("a", "CPU=1", "CPU=1"), node("b", "CPU=1", "CPU=1"), node("y", "GPU=1", "")}, "ababab", false},
		{"single", []Node{node("a", "CPU=1", "")}, "aaa", true},
	}
	for _, tt := range tests {
		var got strings.Builder
		for i := range len(tt.want) {
			d, err := Place(spread, tt.nodes, "b", Options{SpreadCounter: uint64(i)})
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if d.RunNow != tt.runNow || d.Reason != ReasonSpread {
				t.Fatalf("%s: %+v", tt.name, d)
			}
			got.WriteString(d.Node)
		}
		if got.String() != tt.want {
			t.Errorf("%s: rotation %s, want %s", tt.name, got.String(), tt.want)
		}
	}
	// Determinism: the same counter gives the same node.
	nodes := []Node{node("a", "CPU=1", ""), node("b", "CPU=1", ""), node("c", "CPU=1", "")}
	for c := uint64(0); c < 10; c++ {
		d1, _ := Place(spread, nodes, "", Options{SpreadCounter: c})
		d2, _ := Place(spread, nodes, "", Options{SpreadCounter: c})
		if d1 != d2 {
			t.Fatalf("counter %d: %v vs %v", c, d1, d2)
		}
	}
	// Huge counters wrap without bias.
	d, _ := Place(spread, nodes, "", Options{SpreadCounter: ^uint64(0)})
	if d.Node != "a" { // (2^64-1) mod 3 == 0
		t.Fatalf("max counter: %v", d.Node)
	}
}

// TestBurstSpills places a burst from a busy node, updating the view after each decision as
// the caller is meant to: the tasks spread over the idle nodes, then queue at the shortest
// queues.
func TestBurstSpills(t *testing.T) {
	nodes := []Node{node("local", "CPU=2", "CPU=2"), node("r1", "CPU=2", ""), node("r2", "CPU=2", ""), node("r3", "CPU=2", "")}
	r := req("CPU=1")
	var got []string
	for range 10 {
		d, err := Place(r, nodes, "local", Options{})
		if err != nil {
			t.Fatal(err)
		}
		if d.RunNow {
			nodes[d.Index].Available = nodes[d.Index].Available.Sub(r.Resources)
		} else {
			nodes[d.Index].Queued++
		}
		got = append(got, fmt.Sprintf("%s:%v", d.Node, d.RunNow))
	}
	want := "r1:true r2:true r3:true r1:true r2:true r3:true local:false r1:false r2:false r3:false"
	if strings.Join(got, " ") != want {
		t.Fatalf("burst\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

func TestOptionsDefaults(t *testing.T) {
	nan := 0.0
	nan /= nan
	for _, tt := range []struct {
		o         Options
		threshold float64
		weight    float64
	}{
		{Options{}, DefaultThreshold, DefaultLocalityWeight},
		{Options{Threshold: -1, LocalityWeight: -1}, DefaultThreshold, 0},
		{Options{Threshold: nan, LocalityWeight: nan}, DefaultThreshold, 0},
		{Options{Threshold: 0.8, LocalityWeight: 2}, 0.8, 2},
	} {
		if got := tt.o.threshold(); got != tt.threshold {
			t.Errorf("%+v threshold = %v", tt.o, got)
		}
		if got := tt.o.localityWeight(); got != tt.weight {
			t.Errorf("%+v weight = %v", tt.o, got)
		}
	}
}

func TestStrings(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{Default.String(), "default"},
		{Spread.String(), "spread"},
		{NodeAffinity.String(), "node-affinity"},
		{Strategy(7).String(), "Strategy(7)"},
		{ReasonPreferred.String(), "preferred"},
		{ReasonBest.String(), "best"},
		{ReasonSpread.String(), "spread"},
		{ReasonAffinity.String(), "affinity"},
		{Reason(0).String(), "Reason(0)"},
		{req("CPU=1").String(), "{CPU=1} default"},
		{affinity(req("GPU=1"), "n1", true).String(), `{GPU=1} node-affinity node="n1" soft=true`},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestPlaceAllocatesNothing(t *testing.T) {
	nodes := make([]Node, 100)
	for i := range nodes {
		nodes[i] = node(fmt.Sprintf("n%03d", i), "CPU=8 GPU=1 memory=1000 object_store_memory=1000", "CPU=6 memory=100")
	}
	r := withArgs(req("CPU=1 memory=10"), "n050", 1000, "n051", 10)
	for _, s := range []Strategy{Default, Spread} {
		r.Strategy = s
		n := testing.AllocsPerRun(100, func() {
			if _, err := Place(r, nodes, "n000", Options{}); err != nil {
				t.Fatal(err)
			}
		})
		if n != 0 {
			t.Errorf("%v: %v allocs", s, n)
		}
	}
}

func TestSpill(t *testing.T) {
	cases := []struct {
		name  string
		req   Request
		nodes []Node
		from  string
		want  string // "" : stays
	}{
		{"another node is free", req("CPU=1"), []Node{node("a", "CPU=1", "CPU=1"), node("b", "CPU=1", "")}, "a", "b"},
		{"every other node is busy too", req("CPU=1"), []Node{node("a", "CPU=1", "CPU=1"), node("b", "CPU=1", "CPU=1")}, "a", ""},
		{"the only node", req("CPU=1"), []Node{node("a", "CPU=1", "CPU=1")}, "a", ""},
		{"a dead free node does not count", req("CPU=1"), []Node{node("a", "CPU=1", "CPU=1"), dead(node("b", "CPU=1", ""))}, "a", ""},
		{"the freest of the others", req("CPU=1"), []Node{node("a", "CPU=2", "CPU=2"), node("b", "CPU=4", "CPU=3"), node("c", "CPU=4", "CPU=1")}, "a", "c"},
		{"towards its arguments", withArgs(req("CPU=1"), "c", 1<<20), []Node{node("a", "CPU=1", "CPU=1"), node("b", "CPU=4", ""), node("c", "CPU=4", "CPU=2")}, "a", "c"},
		{"too small elsewhere", req("CPU=2"), []Node{node("a", "CPU=4", "CPU=4"), node("b", "CPU=1", "")}, "a", ""},
		{"custom resource only where it waits", req("CPU=1 tpu=1"), []Node{node("a", "CPU=1 tpu=1", "CPU=1 tpu=1"), node("b", "CPU=8", "")}, "a", ""},
		{"hard affinity stays", affinity(req("CPU=1"), "a", false), []Node{node("a", "CPU=1", "CPU=1"), node("b", "CPU=1", "")}, "a", ""},
		{"soft affinity may go", affinity(req("CPU=1"), "a", true), []Node{node("a", "CPU=1", "CPU=1"), node("b", "CPU=1", "")}, "a", "b"},
		// Its arguments where it waits: counted there (CPU=1 of 2 in use is the request itself),
		// so the node has room: it stays; with every CPU in use by others it may go.
		{"its arguments where it waits, room there", withArgs(req("CPU=1"), "a", 8<<20), []Node{node("a", "CPU=2", "CPU=1"), node("b", "CPU=2", "")}, "a", ""},
		{"its arguments where it waits, no room there", withArgs(req("CPU=1"), "a", 8<<20), []Node{node("a", "CPU=2", "CPU=3"), node("b", "CPU=2", "")}, "a", "b"},
		{"small arguments where it waits", withArgs(req("CPU=1"), "a", 1000), []Node{node("a", "CPU=2", "CPU=1"), node("b", "CPU=2", "")}, "a", "b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, ok := Spill(c.req, c.nodes, c.from, Options{})
			got := ""
			if ok {
				got = d.Node
				if c.nodes[d.Index].ID != d.Node {
					t.Fatalf("Index %d names %s, not %s", d.Index, c.nodes[d.Index].ID, d.Node)
				}
				if !d.RunNow {
					t.Fatalf("spilled to %s, where it cannot run now", d.Node)
				}
			}
			if got != c.want {
				t.Fatalf("Spill = %q, want %q", got, c.want)
			}
		})
	}
}

// TestKeepsLocal: KeepsLocal says the Default policy keeps a request on the local node
// whatever the other nodes' loads exactly when Place does so by its fast path: the local
// node's choice is the same against idle peers and against saturated ones, and cases it
// refuses are those where another node could be chosen.
func TestKeepsLocal(t *testing.T) {
	gpuReq := req("CPU=1")
	for _, c := range []struct {
		name  string
		r     Request
		local Node
		want  bool
	}{
		{"idle local node", req("CPU=1"), node("a", "CPU=4", ""), true},
		{"under the threshold with it", req("CPU=1"), node("a", "CPU=4", "CPU=1"), true},
		{"at the threshold with it", req("CPU=1"), node("a", "CPU=2", "CPU=1"), false},
		{"no room now", req("CPU=1"), node("a", "CPU=2", "CPU=2"), false},
		{"too small in total", req("CPU=8"), node("a", "CPU=4", ""), false},
		{"dead", req("CPU=1"), dead(node("a", "CPU=4", "")), false},
		{"a GPU node to avoid", gpuReq, node("a", "CPU=4 GPU=1", ""), false},
		{"arguments elsewhere", withArgs(req("CPU=1"), "b", 1<<20), node("a", "CPU=4", ""), false},
		{"spread", Request{Resources: P("CPU=1"), Strategy: Spread}, node("a", "CPU=4", ""), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := KeepsLocal(c.r, c.local, Options{}); got != c.want {
				t.Fatalf("KeepsLocal = %v, want %v", got, c.want)
			}
			if !c.want {
				return
			}
			// Whatever the peers' loads, Place keeps it local.
			for _, peers := range [][]Node{
				{node("b", "CPU=4", ""), node("c", "CPU=16", "")},
				{node("b", "CPU=4", "CPU=4"), withQueue(node("c", "CPU=16", "CPU=16"), 9)},
			} {
				d, err := Place(c.r, append([]Node{c.local}, peers...), "a", Options{})
				if err != nil || d.Node != "a" || !d.RunNow {
					t.Fatalf("Place with peers %v: %+v, %v; want a, now", peers, d, err)
				}
			}
		})
	}
}
