package node

import (
	"testing"
	"time"
)

func TestNodeLeaseTTL(t *testing.T) {
	for _, c := range []struct {
		env   string
		want  time.Duration
		wrong bool
	}{
		{"", DefaultNodeLeaseTTL, false},
		{"10s", 10 * time.Second, false},
		{"2s", 2 * time.Second, false},
		{"500ms", DefaultNodeLeaseTTL, true}, // too short: etcd's renewal loop would lose it
		{"soon", DefaultNodeLeaseTTL, true},
	} {
		got, err := ParseLeaseTTL(c.env)
		if got != c.want || (err != nil) != c.wrong {
			t.Errorf("%s=%q: %v, %v; want %v, error %v", LeaseTTLEnv, c.env, got, err, c.want, c.wrong)
		}
	}
}
