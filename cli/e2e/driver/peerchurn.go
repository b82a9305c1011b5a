package main

import (
	"context"
	"fmt"
	"sort"
	"syscall"
	"time"

	ray "github.com/ray-go/ray"
)

// The peerchurn check's bounds.
const (
	churnKills = 3               // worker processes SIGKILLed, one after the other
	churnTail  = 5 * time.Second // rounds after the last replacement joined (the endpoint writer retries 2 s apart)
	churnJoin  = time.Minute     // bound of the wait for a killed node's replacement
	churnTask  = 20 * time.Millisecond
)

// peerChurn is the job of the log-hygiene test (cli/e2e/peerlog_test.go): rounds of small
// tasks spread over the job's worker processes, so that every process talks to every other;
// churnKills times it SIGKILLs one of them while a round runs (a different one each time,
// in node ID order) and keeps running rounds until the agent's replacement has joined the
// job; then rounds for churnTail more, so that every process that talked to a dead one
// has had the time to log about it. It reports the victims' member addresses (what the
// endpoint writer's lines name) and any task that failed or answered wrong.
func peerChurn(ctx context.Context, nodes []ray.Node, out map[string]any) error {
	want := len(nodes)
	var victims []map[string]any
	rounds, tasks, wrong := 0, 0, 0
	// round submits 2 tasks per node (spread) and returns a function that gets them.
	round := func() func() error {
		refs := make([]ray.ObjectRef[int], 2*want)
		for i := range refs {
			refs[i] = slowDouble.Options(ray.Spread()).Remote(ctx, ray.V(i), ray.V(churnTask))
		}
		return func() error {
			rounds++
			for i, r := range refs {
				v, err := ray.Get(ctx, r)
				if err != nil {
					return fmt.Errorf("round %d task %d: %w", rounds, i, err)
				}
				tasks++
				if v != 2*i {
					wrong++
				}
			}
			return nil
		}
	}
	for k := range churnKills {
		sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
		victim := nodes[k%len(nodes)]
		get := round()
		time.Sleep(2 * churnTask) // pacing: the round's tasks run now
		if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
			return fmt.Errorf("kill worker process %d: %w", victim.PID, err)
		}
		victims = append(victims, map[string]any{"id": victim.ID, "pid": victim.PID, "address": victim.Address})
		if err := get(); err != nil {
			return err
		}
		// Rounds until the replacement has joined: want nodes, the victim not among them.
		deadline := time.Now().Add(churnJoin)
		for {
			all, err := ray.Nodes(ctx)
			if err != nil {
				return err
			}
			now := all.Alive()
			gone := true
			for _, n := range now {
				gone = gone && n.ID != victim.ID
			}
			if gone && len(now) == want {
				nodes = now
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("no replacement for node %s (pid %d) joined within %v: nodes %v", victim.ID, victim.PID, churnJoin, now)
			}
			if err := round()(); err != nil {
				return err
			}
		}
	}
	for end := time.Now().Add(churnTail); time.Now().Before(end); {
		if err := round()(); err != nil {
			return err
		}
	}
	out["peerchurn"] = map[string]any{"victims": victims, "rounds": rounds, "tasks": tasks, "wrong": wrong}
	return nil
}
