package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	ray "github.com/ray-go/ray"
)

// actorNodeDeath is the actornodedeath check (TestActorNodeDeath): on a cluster of a head
// and two agents with the resource "spare" (none of the actors asks for it), 24
// exactly-once actors are spread over the job's three worker processes; the one of the
// spare agents' worker processes with the smallest node ID (the actor manager's leader
// when it is the smallest of all) is the victim. Each actor takes 10 calls, then 20 more
// pipelined; the victim's whole node goes with SIGKILL (its agent and its worker
// process), and 20 more calls each follow. Every call must complete exactly once (the i-th returns 1+...+i), the victim's
// actors restarting elsewhere. It reports how long the last call took to answer after
// the kill (seconds), and the detail of each restarted actor's Restarting transition.
func actorNodeDeath(ctx context.Context, out map[string]any) error {
	var nodes []ray.Node
	deadline := time.Now().Add(time.Minute)
	for {
		var err error
		all, err := ray.Nodes(ctx)
		if err != nil {
			return err
		}
		nodes = all.Alive()
		spare := 0
		for _, n := range nodes {
			if n.Resources["spare"] > 0 {
				spare++
			}
		}
		if len(nodes) >= 3 && spare >= 2 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the job has %d nodes (%d spare) after a minute, the check needs 3 (2 spare)", len(nodes), spare)
		}
		time.Sleep(100 * time.Millisecond)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	var victim *ray.Node
	for i := range nodes {
		if nodes[i].Resources["spare"] > 0 {
			victim = &nodes[i]
			break
		}
	}
	agent, err := parentPID(victim.PID)
	if err != nil {
		return err
	}
	const actors, warm, piped = 24, 10, 20
	hs := make([]ray.ActorHandle[accel], actors)
	where := make([]string, actors)
	onVictim := 0
	for k := range hs {
		hs[k] = accelClass.Remote(ctx, ray.MaxRestarts(3), ray.CheckpointEvery(8))
		if where[k], err = ray.Get(ctx, accelWhere.Remote(ctx, hs[k])); err != nil {
			return err
		}
		if where[k] == victim.ID {
			onVictim++
		}
	}
	if onVictim == 0 {
		return fmt.Errorf("none of %d actors runs on the victim %s: %v", actors, victim.ID, where)
	}
	for i := 1; i <= warm; i++ {
		for _, h := range hs {
			if _, err := ray.Get(ctx, accelAdd.Remote(ctx, h, ray.V(i))); err != nil {
				return err
			}
		}
	}
	refs := make([][]ray.ObjectRef[int], actors)
	submit := func(from, to int) {
		for i := from; i <= to; i++ {
			for k, h := range hs {
				refs[k] = append(refs[k], accelAdd.Remote(ctx, h, ray.V(i)))
			}
		}
	}
	submit(warm+1, warm+piped)
	start := time.Now()
	if err := syscall.Kill(agent, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill agent %d: %w", agent, err)
	}
	if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill worker process %d: %w", victim.PID, err)
	}
	submit(warm+piped+1, warm+2*piped) // calls made after the kill: they need the restarted actors
	wrong := 0
	gctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for k := range hs {
		for j, r := range refs[k] {
			i := warm + 1 + j
			v, err := ray.Get(gctx, r)
			if err != nil {
				return fmt.Errorf("actor %d call %d after its node died (%.1f s): %w", k, i, time.Since(start).Seconds(), err)
			}
			if v != i*(i+1)/2 {
				wrong++
			}
		}
	}
	seconds := time.Since(start).Seconds()
	var finals []int
	var restartedOn, details []string
	for k, h := range hs {
		final, err := ray.Get(ctx, accelAdd.Remote(ctx, h, ray.V(0)))
		if err != nil {
			return err
		}
		finals = append(finals, final)
		if where[k] != victim.ID {
			continue
		}
		st, err := ray.GetActorState(ctx, h)
		if err != nil {
			return err
		}
		restartedOn = append(restartedOn, st.Node)
		for _, t := range st.History {
			if t.Phase == ray.ActorRestarting && t.Node == "" {
				details = append(details, t.Detail)
			}
		}
	}
	out["actornodedeath"] = map[string]any{"victim": victim.ID, "on_victim": onVictim, "calls": actors * 2 * piped,
		"wrong": wrong, "seconds": seconds, "finals": finals, "restarted_on": restartedOn, "details": details}
	return nil
}

// parentPID is the parent process of pid (Linux: /proc/PID/stat): a worker process's
// node agent.
func parentPID(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // after "pid (comm)": state, ppid, ...
	if len(f) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	return strconv.Atoi(f[1])
}
