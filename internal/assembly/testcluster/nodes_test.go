package testcluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	ray "github.com/ray-go/ray"
	"github.com/ray-go/ray/internal/assembly/core"
)

// TestNodesListsDeadNodes: ray.Nodes lists every node the job's runtime knows, as Ray's
// ray.nodes() does: the running ones with Alive true, and a stopped one with Alive false,
// when it died and why; NodeList.Alive leaves it out. (In a process of its own, with a
// cluster of its own: runAlone.)
func TestNodesListsDeadNodes(t *testing.T) {
	if !runAlone(t) {
		return
	}
	base, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(base, Config{Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	if err := c.AwaitViews(base); err != nil {
		t.Fatal(err)
	}
	ctx := core.WithTask(base, c.Nodes[0].Core.NewDriver())
	const dies = 2
	victim := string(c.Nodes[dies].ID)
	before, err := ray.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := findNode(before, victim); len(before) != 3 || !ok || !n.Alive || !n.DiedAt.IsZero() || n.DeathReason != "" {
		t.Fatalf("node %s before it stops: %+v (listed %v) of %s, want it alive among 3", victim, n, ok, describeNodes(before))
	}
	stopped := time.Now()
	if err := c.StopNode(base, dies); err != nil {
		t.Fatal(err)
	}
	var after ray.NodeList
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if after, err = ray.Nodes(ctx); err != nil {
			t.Fatal(err)
		}
		if n, ok := findNode(after, victim); ok && !n.Alive {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s not listed dead 30 s after it stopped: %s", victim, describeNodes(after))
		}
	}
	t.Logf("after node %s stopped: %s", victim, describeNodes(after))
	n, _ := findNode(after, victim)
	if n.DiedAt.Before(stopped) || n.DiedAt.After(time.Now()) || n.DeathReason == "" || n.Resources["CPU"] != 2 || n.PID == 0 {
		t.Fatalf("the stopped node: %+v, want when it died (after %v), why, and its last record", n, stopped)
	}
	for i, node := range c.Nodes {
		if n, ok := findNode(after, string(node.ID)); i != dies && (!ok || !n.Alive) {
			t.Errorf("running node %d (%s): listed %v, %+v, want alive", i, node.ID, ok, n)
		}
	}
	live := after.Alive()
	if _, ok := findNode(live, victim); ok || len(live) != 2 {
		t.Errorf("NodeList.Alive: %s, want the 2 running nodes", describeNodes(live))
	}
}

func findNode(nodes ray.NodeList, id string) (ray.Node, bool) {
	for _, n := range nodes {
		if n.ID == id {
			return n, true
		}
	}
	return ray.Node{}, false
}

func describeNodes(nodes ray.NodeList) string {
	s := ""
	for _, n := range nodes {
		s += fmt.Sprintf("\n  %s alive=%v died=%v why=%q", n.ID, n.Alive, n.DiedAt.Format(time.StampMilli), n.DeathReason)
	}
	return s
}
