package membership

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBadIdentity is returned by ParseIdentity for a string that follows neither scheme.
var ErrBadIdentity = errors.New("membership: bad identity")

const (
	nodeIdentityPrefix  = "n/"
	actorIdentityPrefix = "a/"
)

// IdentityKind says how an identity is placed.
type IdentityKind uint8

const (
	// NodePinned identities ("n/<nodeID>[/<rest>]") live on the member that registered nodeID.
	NodePinned IdentityKind = iota + 1
	// ActorPlaced identities ("a/<actorID>") live on the node named by the GCS key
	// placement/<actorID>.
	ActorPlaced
)

func (k IdentityKind) String() string {
	switch k {
	case NodePinned:
		return "node"
	case ActorPlaced:
		return "actor"
	default:
		return fmt.Sprintf("IdentityKind(%d)", uint8(k))
	}
}

// Identity is a parsed grain identity (the Identity half of a cluster.ClusterIdentity;
// the grain kind is the other half and plays no part in placement).
type Identity struct {
	Kind    IdentityKind
	NodeID  string // NodePinned: the node the grain is pinned to
	Rest    string // NodePinned: what tells grains of one kind on one node apart (may be empty)
	ActorID string // ActorPlaced: the key under placement/
}

// String returns the identity in its wire form.
func (id Identity) String() string {
	switch id.Kind {
	case NodePinned:
		return NodeIdentity(id.NodeID, id.Rest)
	case ActorPlaced:
		return ActorIdentity(id.ActorID)
	default:
		return ""
	}
}

// NodeIdentity returns the identity of a grain pinned to nodeID: "n/<nodeID>/<rest>", or
// "n/<nodeID>" when rest is empty. nodeID must be non-empty and contain no '/'; rest may
// contain anything.
func NodeIdentity(nodeID, rest string) string {
	if rest == "" {
		return nodeIdentityPrefix + nodeID
	}
	return nodeIdentityPrefix + nodeID + "/" + rest
}

// ActorIdentity returns the identity of a grain placed through placement/<actorID>:
// "a/<actorID>". actorID must be non-empty.
func ActorIdentity(actorID string) string {
	return actorIdentityPrefix + actorID
}

// ParseIdentity parses an identity built by NodeIdentity or ActorIdentity.
func ParseIdentity(s string) (Identity, error) {
	switch {
	case strings.HasPrefix(s, nodeIdentityPrefix):
		rest := s[len(nodeIdentityPrefix):]
		node, tail, hasTail := strings.Cut(rest, "/")
		if node == "" {
			return Identity{}, fmt.Errorf("%w: %q has an empty node ID", ErrBadIdentity, s)
		}
		if !hasTail {
			tail = ""
		}
		return Identity{Kind: NodePinned, NodeID: node, Rest: tail}, nil
	case strings.HasPrefix(s, actorIdentityPrefix):
		actorID := s[len(actorIdentityPrefix):]
		if actorID == "" {
			return Identity{}, fmt.Errorf("%w: %q has an empty actor ID", ErrBadIdentity, s)
		}
		return Identity{Kind: ActorPlaced, ActorID: actorID}, nil
	default:
		return Identity{}, fmt.Errorf("%w: %q is neither n/<node>/... nor a/<actor>", ErrBadIdentity, s)
	}
}
