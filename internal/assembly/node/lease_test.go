package node

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/tasks/sched"
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

// TestStartFailsCleanly: a Start that fails part-way (here: its directory is a file)
// returns the error, after stopping what it started; it used to panic, stopping a nil
// node (the failure paths return nil for the named result the deferred Stop used).
func TestStartFailsCleanly(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, _ := sched.FromMap(map[string]float64{sched.CPU: 1})
	n, err := Start(context.Background(), Config{Dir: file, Resources: res})
	if err == nil || n != nil {
		t.Fatalf("Start in a file: %v, %v; want an error and no node", n, err)
	}
	if !strings.Contains(err.Error(), file) {
		t.Fatalf("the error does not name the directory: %v", err)
	}
}
