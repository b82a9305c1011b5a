package membership

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/eventstream"
)

// MemberInfo is one member incarnation as registered under members/<ID> (JSON).
type MemberInfo struct {
	// ID is "<actor system ID>#<incarnation>". A member that loses its lease registers
	// again under a new incarnation, because protoactor's MemberList blocks a member ID
	// for good once it has left the topology. (The MemberList knows a process by the ID of
	// the first incarnation it saw; see the package doc.)
	ID      string   `json:"id"`
	NodeID  string   `json:"node"`
	Address string   `json:"address"` // host:port exactly as the member's ActorSystem.Address()
	Host    string   `json:"host"`
	Port    int      `json:"port"`
	Kinds   []string `json:"kinds"`
	// Rev is the GCS revision that created the key (not stored in the value). When two
	// live incarnations claim one node ID, the newer (higher Rev) wins.
	Rev int64 `json:"-"`
}

// HasKind reports whether the member hosts grains of kind.
func (m MemberInfo) HasKind(kind string) bool { return slices.Contains(m.Kinds, kind) }

func (m MemberInfo) member() *cluster.Member {
	kinds := m.Kinds
	if kinds == nil {
		kinds = []string{}
	}
	return &cluster.Member{Id: m.ID, Host: m.Host, Port: int32(m.Port), Kinds: kinds}
}

func (m MemberInfo) marshal() []byte {
	b, err := json.Marshal(m)
	if err != nil { // cannot happen for this struct
		panic(fmt.Sprintf("membership: marshal member: %v", err))
	}
	return b
}

func unmarshalMember(b []byte, createRev int64) (MemberInfo, error) {
	var m MemberInfo
	if err := json.Unmarshal(b, &m); err != nil {
		return MemberInfo{}, fmt.Errorf("membership: bad member record: %w", err)
	}
	if m.ID == "" || m.Address == "" {
		return MemberInfo{}, fmt.Errorf("membership: member record without id or address")
	}
	if m.Port < 1 || m.Port > 65535 { // protoactor keeps it as an int32: it would wrap
		return MemberInfo{}, fmt.Errorf("membership: member record %s has port %d", m.ID, m.Port)
	}
	m.Rev = createRev
	return m, nil
}

// MemberEventType says what happened to a member.
type MemberEventType uint8

const (
	// MemberJoined: a member key appeared (a new member, or a new incarnation of one).
	MemberJoined MemberEventType = iota + 1
	// MemberUnreachable: the remote Watch on the member's membership actor delivered
	// Terminated (its process died or its connection broke), typically within
	// milliseconds of a kill and long before its lease expires. Lookups stop routing to
	// it at once. It is followed by MemberReachable if it answers a probe again, or by
	// MemberLeft when its key goes.
	MemberUnreachable
	// MemberReachable: an unreachable member answered a probe; it is routed to again.
	MemberReachable
	// MemberLeft: the member key is gone (lease expired or revoked, or deregistered).
	// Final for this member ID, not for its process: a process that lost its lease (a GCS
	// outage longer than the TTL) registers again as a new incarnation, and its node and
	// grains live on. MemberGone says when the process is gone.
	MemberLeft
	// MemberGone: the process is out of the cluster. Its last incarnation left and none
	// registered again within the grace period (LeaseTTL) while it stayed reachable, or it
	// is unreachable with no incarnation registered. Until then its node stays in Nodes and
	// MemberForNode. Final for the process (its address); Member is its newest
	// incarnation.
	MemberGone
	// MemberDown: an unreachable member's address refuses connections: no process listens
	// there (it exited; the usual case). It leaves Suspects; MemberLeft and MemberGone
	// follow when its key goes.
	MemberDown
)

func (t MemberEventType) String() string {
	switch t {
	case MemberJoined:
		return "joined"
	case MemberUnreachable:
		return "unreachable"
	case MemberReachable:
		return "reachable"
	case MemberLeft:
		return "left"
	case MemberGone:
		return "gone"
	case MemberDown:
		return "down"
	default:
		return fmt.Sprintf("MemberEventType(%d)", uint8(t))
	}
}

// MemberEvent is published on the actor system's EventStream (as *MemberEvent) by the
// Provider's membership actor, in the order things happened. Self is true for events about
// this process's own incarnations (e.g. MemberLeft of our own old incarnation after a lost
// lease: other members have seen us leave and may have failed over our work).
type MemberEvent struct {
	Type   MemberEventType
	Member MemberInfo
	Self   bool
}

// SubscribeMemberEvents calls fn for every *MemberEvent published on system's EventStream.
// fn runs on the publisher's goroutine and must not block (send to an actor instead).
// Stop with system.EventStream.Unsubscribe.
func SubscribeMemberEvents(system *actor.ActorSystem, fn func(*MemberEvent)) *eventstream.Subscription {
	return system.EventStream.Subscribe(func(evt any) {
		if e, ok := evt.(*MemberEvent); ok {
			fn(e)
		}
	})
}

// gossipInterval is as long as protoactor allows "off" to be (a zero interval panics).
const gossipInterval = time.Hour

// WithoutGossip is a cluster.ConfigOption that idles protoactor's gossip (one round an
// hour; it cannot be switched off). Pass it to cluster.Configure with this Provider:
//   - gossip keys members by ActorSystem.ID, while our member IDs carry an incarnation,
//     so every round logs "gossip request from unknown member";
//   - its heartbeat expiry and graceful-leave handling block ActorSystem IDs, which makes
//     peers refuse the connections of a member that re-registered after a lost lease;
//   - it races (a global math/rand, unlocked MemberList reads) when several members share
//     a process, as in tests;
//   - ray-go uses none of it: membership comes from the GCS, failure detection from
//     leases and remote Watch.
func WithoutGossip() cluster.ConfigOption {
	return func(c *cluster.Config) {
		c.GossipInterval = gossipInterval
		c.HeartbeatExpiration = 100 * 365 * 24 * time.Hour // never block on missed heartbeats
	}
}
