package main

// Messages by type, for the simulated control plane: each node's counted actors
// (node.Config.MessageTap) tell a msgTypes what they handle; a key is the receiver's role,
// the message's Go type, and where it came from (the sender's role, on this node or
// another, from the envelope's sender PID, or for lease requests and pushes from the owner
// they name; "-" when the message carries no sender).

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/pb"
)

// msgKey is one row of the counts by type.
type msgKey struct {
	Receiver string // the receiving actor's role (node.Config.MessageTap)
	Type     string // the message's Go type (unwrapped from its envelope)
	Sender   string // the sender's role, "-" when none; with " (peer)" when on another node
}

func (k msgKey) String() string { return fmt.Sprintf("%s <- %s: %s", k.Receiver, k.Sender, k.Type) }

// msgTypes counts messages by msgKey over all nodes of a simulated cluster.
type msgTypes struct {
	addrs atomic.Pointer[[]string] // the nodes' addresses, by index (set once they run)
	mu    sync.Mutex
	n     map[msgKey]int64
}

func newMsgTypes() *msgTypes { return &msgTypes{n: map[msgKey]int64{}} }

// tap is node i's node.Config.MessageTap.
func (t *msgTypes) tap(i int) func(role string, msg any) {
	return func(role string, msg any) {
		k := msgKey{Receiver: role, Sender: "-"}
		if env, ok := msg.(*actor.MessageEnvelope); ok {
			msg = env.Message
			if env.Sender != nil {
				k.Sender = t.from(i, env.Sender.Address, env.Sender.Id)
			}
		}
		if k.Sender == "-" {
			// The lease protocol sends without an envelope sender but names the owner's
			// shard in the message: count requests and pushes from peers apart (a task
			// the policy placed on another node than its submitter's).
			switch m := msg.(type) {
			case *pb.LeaseRequest:
				if m.Owner != nil {
					k.Sender = t.from(i, m.Owner.Address, m.Owner.Id)
				}
			case *pb.LeasePush:
				if m.ReplyTo != nil {
					k.Sender = t.from(i, m.ReplyTo.Address, m.ReplyTo.Id)
				}
			}
		}
		k.Type = fmt.Sprintf("%T", msg)
		t.mu.Lock()
		t.n[k]++
		t.mu.Unlock()
	}
}

// from is the sender key of a message node i got from the actor at address with id: its
// role, with " (peer)" when on another node.
func (t *msgTypes) from(i int, address, id string) string {
	r := senderRole(id)
	if a := t.addrs.Load(); a != nil && i < len(*a) && address != (*a)[i] {
		r += " (peer)"
	}
	return r
}

// setAddrs records the nodes' addresses (to tell peers' messages from the node's own).
func (t *msgTypes) setAddrs(a []string) { t.addrs.Store(&a) }

// snapshot copies the counts.
func (t *msgTypes) snapshot() map[msgKey]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[msgKey]int64, len(t.n))
	for k, v := range t.n {
		out[k] = v
	}
	return out
}

var shardID = regexp.MustCompile(`^owner-.*-s[0-9]+$`)

// senderRole is the role of the actor whose PID has id: a grain's kind (its ID is
// "kind/identity$n"), the runtime's owner actor ("owner-<job>-<x>") or one of its shards
// ("owner-<job>-<x>-s<i>"), a future ("future$n": a request's reply), else the ID up to
// its first '/' or '$'.
func senderRole(id string) string {
	switch {
	case shardID.MatchString(id):
		return "shard"
	case strings.HasPrefix(id, "owner-"):
		return "owner"
	}
	if i := strings.IndexAny(id, "/$"); i > 0 {
		return id[:i]
	}
	return id
}

// msgTypeRow is one type's messages per task in a timed window.
type msgTypeRow struct {
	Key     string  `json:"message"`
	PerTask float64 `json:"per_task"`
	// NetOfIdle: less the same type's idle rate times the window.
	NetOfIdle float64 `json:"per_task_net_of_idle"`
}

// typeRows returns the per-task counts by type of the window (d: counts in the window,
// idle: counts per second idle, window seconds, tasks), largest net figure first, rows
// under min per task (both figures) left out.
func typeRows(d map[msgKey]int64, idle map[msgKey]float64, window, tasks, minPerTask float64) []msgTypeRow {
	keys := map[msgKey]bool{}
	for k := range d {
		keys[k] = true
	}
	for k := range idle {
		keys[k] = true
	}
	var rows []msgTypeRow
	for k := range keys {
		r := msgTypeRow{Key: k.String(), PerTask: float64(d[k]) / tasks}
		r.NetOfIdle = r.PerTask - idle[k]*window/tasks
		if r.PerTask < minPerTask && (r.NetOfIdle < minPerTask && r.NetOfIdle > -minPerTask) {
			continue
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].NetOfIdle != rows[j].NetOfIdle {
			return rows[i].NetOfIdle > rows[j].NetOfIdle
		}
		return rows[i].Key < rows[j].Key
	})
	return rows
}

// subCounts is a - b.
func subCounts(a, b map[msgKey]int64) map[msgKey]int64 {
	out := make(map[msgKey]int64, len(a))
	for k, v := range a {
		if d := v - b[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}
