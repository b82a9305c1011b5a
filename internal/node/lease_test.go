package node

import (
	"testing"
	"time"
)

func TestNodeLeaseTTL(t *testing.T) {
	for _, c := range []struct {
		env  string
		want time.Duration
	}{
		{"", DefaultNodeLeaseTTL},
		{"10s", 10 * time.Second},
		{"2s", 2 * time.Second},
		{"500ms", DefaultNodeLeaseTTL}, // too short: etcd's renewal loop would lose it
		{"soon", DefaultNodeLeaseTTL},
	} {
		if got := nodeLeaseTTL(c.env); got != c.want {
			t.Errorf("RAY_NODE_LEASE_TTL=%q: %v, want %v", c.env, got, c.want)
		}
	}
}
