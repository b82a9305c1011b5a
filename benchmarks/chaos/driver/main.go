// Command driver is the chaos suite's driver (package benchmarks/chaos runs it): a ray-go
// program that joins the cluster at RAY_ADDRESS and runs rounds of a mixed workload —
// chains of dependent tasks passing 4-8 MiB blocks, 50 pipelined calls on a long-lived
// checkpointed actor, nested tasks — checking every result against a value it computes
// itself. With -kill (the default) it SIGKILLs one worker process (one node of the job) at
// a random time inside each round, and reports per round how long callers stalled, what
// was re-executed, and whether anything was wrong, failed or hung.
//
// Its worker processes are started by the node agents from this same binary: everything
// before ray.Init runs in them too, so it only parses flags.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	ray "github.com/ray-go/ray"
	"github.com/ray-go/ray/benchmarks/chaos/report"
)

// Bounds of the waits between rounds.
const (
	// rejoinTimeout bounds the wait for a killed node's replacement (the agent's restart
	// backoff is at most 2 s, or up to a minute once its restart budget is spent).
	rejoinTimeout = 90 * time.Second
	// restartWindow and restartBudget mirror the agent's policy (internal/assembly/agent): at most
	// 3 worker restarts a minute. A node is a victim only if its agent has budget left.
	restartWindow = time.Minute + 2*time.Second
	restartBudget = 3
	// getGrace is how long past the round timeout the driver waits for Gets to return
	// before it gives up on them.
	getGrace = 10 * time.Second
	// shutdownTimeout bounds ray.Shutdown at the end.
	shutdownTimeout = 30 * time.Second
)

// RoundReport is what the driver reports for one round (one JSON line with -json).
type RoundReport = report.Round

// Summary is the driver's last line.
type Summary struct {
	Type          string  `json:"type"` // "summary"
	Seed          int64   `json:"seed"`
	Kill          bool    `json:"kill"`
	Rounds        int     `json:"rounds"` // measured rounds run (warm-up excluded)
	Killed        int     `json:"killed"`
	Wrong         int     `json:"wrong"`
	Errors        int     `json:"errors"`
	Hangs         int     `json:"hangs"`
	WarmupMS      float64 `json:"warmup_ms"`
	Retried       int64   `json:"tasks_retried"`
	Reconstructed int64   `json:"objects_reconstructed"`
	Fatal         string  `json:"fatal,omitempty"` // why the run stopped early
}

type config struct {
	rounds       int
	warmup       int
	seed         int64
	kill         bool
	roundTimeout time.Duration
	json         bool
	settle       time.Duration
	nodes        int
}

func main() {
	var cfg config
	flag.IntVar(&cfg.rounds, "rounds", 10, "measured rounds (after the warm-up)")
	flag.IntVar(&cfg.warmup, "warmup", 1, "fault-free warm-up rounds; the last one's duration sets the kill-time range")
	flag.Int64Var(&cfg.seed, "seed", 1, "seed of the workload's data, the kill times and the victims")
	flag.BoolVar(&cfg.kill, "kill", true, "SIGKILL one worker process per round (false: the fault-free reference run)")
	flag.DurationVar(&cfg.roundTimeout, "round-timeout", 60*time.Second, "a round that takes longer is a hang")
	flag.BoolVar(&cfg.json, "json", false, "print one JSON object per round and a summary line")
	flag.DurationVar(&cfg.settle, "settle", 0, "after a killed round, also wait until this long after the kill before the next "+
		"round (7s outlasts the killed node's 6 s lease: a workaround for stale-node placement in new worker processes, see README)")
	flag.IntVar(&cfg.nodes, "nodes", 2, "wait (at most a minute) until the job has this many nodes before the first round")
	flag.Parse()
	if cfg.rounds < 0 || cfg.warmup < 1 || cfg.roundTimeout <= 0 {
		fmt.Fprintln(os.Stderr, "driver: want -rounds >= 0, -warmup >= 1, -round-timeout > 0")
		os.Exit(2)
	}

	ctx, err := ray.Init(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "driver:", err)
		os.Exit(1)
	}
	sum := run(ctx, cfg)
	shut := make(chan error, 1)
	go func() { shut <- ray.Shutdown(ctx) }()
	select {
	case err := <-shut:
		if err != nil && sum.Fatal == "" {
			sum.Fatal = "shutdown: " + err.Error()
		}
	case <-time.After(shutdownTimeout):
		msg := fmt.Sprintf("ray.Shutdown did not return within %v", shutdownTimeout)
		if sum.Fatal != "" {
			msg = sum.Fatal + "; " + msg
		}
		sum.Fatal = msg
	}
	emit(cfg, sum, fmt.Sprintf("summary: %d rounds, %d killed, %d wrong, %d errors, %d hangs, %d retried, %d reconstructed%s",
		sum.Rounds, sum.Killed, sum.Wrong, sum.Errors, sum.Hangs, sum.Retried, sum.Reconstructed, ifNotEmpty(" FATAL: ", sum.Fatal)))
	if sum.Fatal != "" || sum.Wrong > 0 || sum.Errors > 0 || sum.Hangs > 0 {
		os.Exit(1)
	}
}

func ifNotEmpty(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

// emit prints v as a JSON line (-json) or the human line.
func emit(cfg config, v any, human string) {
	if cfg.json {
		b, _ := json.Marshal(v)
		fmt.Println(string(b))
		return
	}
	fmt.Println(human)
}

// run runs the warm-up and the measured rounds and returns the summary.
func run(ctx context.Context, cfg config) Summary {
	sum := Summary{Type: "summary", Seed: cfg.seed, Kill: cfg.kill}
	var nodes []ray.Node
	var err error
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		all, err := ray.Nodes(ctx)
		if err != nil {
			sum.Fatal = err.Error()
			return sum
		}
		nodes = all.Alive()
		if len(nodes) >= cfg.nodes || time.Now().After(deadline) {
			break
		}
	}
	if len(nodes) < max(2, cfg.nodes) {
		sum.Fatal = fmt.Sprintf("the job has %d node(s); the chaos suite needs at least %d (-nodes, and never fewer than 2)", len(nodes), max(2, cfg.nodes))
		return sum
	}
	want := len(nodes)
	d := &driver{
		ctx:   ctx,
		cfg:   cfg,
		rng:   rand.New(rand.NewPCG(uint64(cfg.seed), 0xc4a05)),
		kills: map[int][]time.Time{},
		actor: counterClass.Remote(ctx, ray.MaxRestarts(-1), ray.CheckpointEvery(10)),
	}
	if err := d.actor.Err(); err != nil {
		sum.Fatal = "create the actor: " + err.Error()
		return sum
	}
	defer func() { _ = ray.Kill(ctx, d.actor, true) }()

	var warm time.Duration
	for i := range cfg.warmup + cfg.rounds {
		round := i - cfg.warmup + 1 // warm-up rounds are <= 0
		plan := killPlan{}
		if round > 0 && cfg.kill {
			plan, err = d.plan(warm, want)
			if err != nil {
				sum.Fatal = err.Error()
				return sum
			}
		}
		rep := d.round(round, plan)
		if round <= 0 {
			rep.Warmup = true
			warm = time.Duration(rep.DurationMS * float64(time.Millisecond))
			sum.WarmupMS = rep.DurationMS
		} else {
			sum.Rounds++
		}
		if rep.Killed {
			sum.Killed++
		}
		sum.Wrong += rep.Wrong
		sum.Errors += len(rep.Errors)
		if rep.Hang {
			sum.Hangs++
		}
		sum.Retried += rep.TasksRetried
		sum.Reconstructed += rep.ObjectsReconstructed
		emit(cfg, rep, human(rep))
		if rep.Hang {
			sum.Fatal = fmt.Sprintf("round %d hung (over %v)", round, cfg.roundTimeout)
			dumpStacks(ctx)
			return sum
		}
		if len(rep.Errors) > 0 && rep.RejoinMS < 0 {
			sum.Fatal = rep.Errors[len(rep.Errors)-1]
			return sum
		}
	}
	return sum
}

func human(r RoundReport) string {
	var b strings.Builder
	name := "round " + strconv.Itoa(r.Round)
	if r.Warmup {
		name = "warm-up"
	}
	fmt.Fprintf(&b, "%-9s %7.0f ms  %d/%d results, %d wrong, %d errors", name, r.DurationMS, r.Completed, r.Results, r.Wrong, len(r.Errors))
	if r.Killed {
		fmt.Fprintf(&b, "; killed node %.8s (pid %d) at %.0f ms with %d outstanding, recovered in %.0f ms, rejoined after %.0f ms",
			r.Victim, r.VictimPID, r.KillAtMS, r.OutstandingAtKill, r.RecoveryMS, r.RejoinMS)
	} else if r.KillSkipped != "" {
		fmt.Fprintf(&b, "; no kill: %s", r.KillSkipped)
	}
	fmt.Fprintf(&b, "; retried %d, reconstructed %d", r.TasksRetried, r.ObjectsReconstructed)
	if r.Hang {
		b.WriteString("; HANG")
	}
	for _, e := range r.WrongResults {
		b.WriteString("\n    WRONG: " + e)
	}
	for _, e := range r.Errors {
		b.WriteString("\n    error: " + e)
	}
	return b.String()
}

type driver struct {
	ctx   context.Context
	cfg   config
	rng   *rand.Rand
	kills map[int][]time.Time // agent pid -> kill times of its worker processes
	actor ray.ActorHandle[counter]
	sum   uint64 // the actor's running sum as the driver computes it
}

// killPlan says whom to kill and when in a round.
type killPlan struct {
	kill     bool
	at       time.Duration
	victim   ray.Node
	agentPID int
	nodes    int // the job's node count to restore after the kill
}

// plan picks the kill time (uniform over 0.1..0.6 of the warm-up round's duration: rounds
// vary, and one that finishes before its kill time counts as a round without a kill) and a
// victim: a random node whose agent has restart budget left, never the last node. When
// no agent has budget, it waits (bounded) until one has.
func (d *driver) plan(warm time.Duration, want int) (killPlan, error) {
	at := time.Duration((0.1 + 0.5*d.rng.Float64()) * float64(warm))
	deadline := time.Now().Add(restartWindow + 5*time.Second)
	for {
		all, err := ray.Nodes(d.ctx)
		if err != nil {
			return killPlan{}, err
		}
		nodes := all.Alive()
		if len(nodes) < 2 {
			return killPlan{}, fmt.Errorf("only %d node(s) left; the suite never kills the last one", len(nodes))
		}
		sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
		now := time.Now()
		var candidates []ray.Node
		var agents []int
		earliest := now.Add(restartWindow)
		for _, n := range nodes {
			agent := parentPID(n.PID)
			recent := 0
			for _, t := range d.kills[agent] {
				if now.Sub(t) < restartWindow {
					recent++
					if t.Add(restartWindow).Before(earliest) {
						earliest = t.Add(restartWindow)
					}
				}
			}
			if recent < restartBudget {
				candidates = append(candidates, n)
				agents = append(agents, agent)
			}
		}
		if len(candidates) > 0 {
			i := d.rng.IntN(len(candidates))
			return killPlan{kill: true, at: at, victim: candidates[i], agentPID: agents[i], nodes: want}, nil
		}
		if now.After(deadline) {
			return killPlan{}, errors.New("no node's agent has restart budget left")
		}
		time.Sleep(min(time.Until(earliest)+100*time.Millisecond, time.Until(deadline)+100*time.Millisecond))
	}
}

// parentPID is the parent of pid (a worker process's agent), or pid if unknown.
func parentPID(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return pid
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return pid
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return pid
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return pid
	}
	return ppid
}

// Kinds of results.
const (
	kindChain = iota
	kindActor
	kindNested
)

// tracker records when each result of a round completed, under one lock with the kill.
type tracker struct {
	mu          sync.Mutex
	kind        []int
	doneAt      []time.Time
	completed   int
	wrong       int
	errs        []string
	wrongs      []string
	outstanding []int // indices not done at the kill
	killAt      time.Time
}

func (t *tracker) add(kind int) int {
	t.kind = append(t.kind, kind)
	t.doneAt = append(t.doneAt, time.Time{})
	return len(t.kind) - 1
}

// await gets ref and checks it against want, recording the completion time.
func await[T comparable](ctx context.Context, t *tracker, wg *sync.WaitGroup, i int, name string, ref ray.ObjectRef[T], want T) {
	defer wg.Done()
	v, err := ray.Get(ctx, ref)
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.doneAt[i] = now
	switch {
	case err != nil:
		t.errs = append(t.errs, fmt.Sprintf("%s: %v", name, err))
	case v != want:
		t.completed++
		t.wrong++
		t.wrongs = append(t.wrongs, fmt.Sprintf("%s: got %v, want %v", name, v, want))
	default:
		t.completed++
	}
}

// round runs one round: it computes the expected values, submits the whole workload, kills
// the planned victim at the planned time, and waits for every result (bounded).
func (d *driver) round(round int, plan killPlan) RoundReport {
	seed := d.cfg.seed
	rep := RoundReport{Type: "round", Round: round, KillPlanned: plan.kill}
	if nodes, err := ray.Nodes(d.ctx); err == nil {
		rep.Nodes = len(nodes.Alive())
	}
	// The expected values, computed before the clock starts.
	var wantChain [numChains]string
	for c := range wantChain {
		wantChain[c] = chainDigest(seed, round, c)
	}
	var wantNested [nestedParents]uint64
	for p := range wantNested {
		wantNested[p] = nestedSum(seed, round, p)
	}
	var wantActor [actorCalls]uint64
	var args [actorCalls]uint64
	for i := range wantActor {
		args[i] = addend(seed, round, i)
		d.sum += args[i]
		wantActor[i] = d.sum
	}
	before, _ := ray.Stats(d.ctx)

	ctx, cancel := context.WithTimeout(d.ctx, d.cfg.roundTimeout)
	defer cancel()
	t := &tracker{}
	var wg sync.WaitGroup
	var release []func()
	start := time.Now()

	// Chains: the first step spread over the nodes, the next ones where the data is.
	for c := range numChains {
		ref := chainStart.Options(ray.Spread()).Remote(ctx, ray.V(seed), ray.V(stepKey{round, c, 0}))
		release = append(release, ref.Release)
		for s := 1; s < chainSteps; s++ {
			ref = chainStep.Remote(ctx, ray.V(seed), ray.V(stepKey{round, c, s}), ref)
			release = append(release, ref.Release)
		}
		h := chainHash.Remote(ctx, ref)
		release = append(release, h.Release)
		wg.Add(1)
		go await(ctx, t, &wg, t.add(kindChain), fmt.Sprintf("chain %d", c), h, wantChain[c])
	}
	// Actor calls, pipelined.
	for i := range actorCalls {
		ref := counterAdd.Remote(ctx, d.actor, ray.V(args[i]))
		release = append(release, ref.Release)
		wg.Add(1)
		go await(ctx, t, &wg, t.add(kindActor), fmt.Sprintf("actor call %d", i), ref, wantActor[i])
	}
	// Nested tasks.
	for p := range nestedParents {
		ref := nestedParent.Options(ray.Spread()).Remote(ctx, ray.V(seed), ray.V(round), ray.V(p))
		release = append(release, ref.Release)
		wg.Add(1)
		go await(ctx, t, &wg, t.add(kindNested), fmt.Sprintf("nested %d", p), ref, wantNested[p])
	}
	rep.Results = len(t.kind)

	// The kill, under the tracker's lock: the outstanding set is exact.
	var timer *time.Timer
	killDone := make(chan struct{})
	allDone := false
	if plan.kill {
		timer = time.AfterFunc(time.Until(start.Add(plan.at)), func() {
			defer close(killDone)
			t.mu.Lock()
			defer t.mu.Unlock()
			if allDone {
				return
			}
			for i, at := range t.doneAt {
				if at.IsZero() {
					t.outstanding = append(t.outstanding, i)
				}
			}
			if err := syscall.Kill(plan.victim.PID, syscall.SIGKILL); err != nil {
				t.errs = append(t.errs, fmt.Sprintf("kill node %s (pid %d): %v", plan.victim.ID, plan.victim.PID, err))
				t.outstanding = nil
				return
			}
			t.killAt = time.Now()
		})
	}

	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(d.cfg.roundTimeout + getGrace):
		t.mu.Lock()
		t.errs = append(t.errs, fmt.Sprintf("Get did not return %v after the round's deadline", getGrace))
		t.mu.Unlock()
		rep.Hang = true
	}
	t.mu.Lock()
	allDone = true
	t.mu.Unlock()
	if plan.kill {
		if timer.Stop() {
			close(killDone) // every result came before the kill time: no kill this round
			rep.KillSkipped = "every result completed before the planned kill time"
		}
		<-killDone
	}
	after, _ := ray.Stats(d.ctx)
	rep.TasksRetried = after.TasksRetried - before.TasksRetried
	rep.ObjectsReconstructed = after.ObjectsReconstructed - before.ObjectsReconstructed
	if ctx.Err() != nil {
		rep.Hang = true
	}

	t.mu.Lock()
	var last time.Time
	for _, at := range t.doneAt {
		if at.After(last) {
			last = at
		}
	}
	if last.IsZero() {
		last = time.Now()
	}
	rep.DurationMS = ms(last.Sub(start))
	rep.Completed, rep.Wrong, rep.Errors, rep.WrongResults = t.completed, t.wrong, t.errs, t.wrongs
	if !t.killAt.IsZero() {
		rep.Killed = true
		rep.Victim, rep.VictimPID, rep.VictimAgentPID = plan.victim.ID, plan.victim.PID, plan.agentPID
		rep.KillAtMS = ms(t.killAt.Sub(start))
		rep.OutstandingAtKill = len(t.outstanding)
		var rec time.Duration
		for _, i := range t.outstanding {
			var kindRec *float64
			switch t.kind[i] {
			case kindChain:
				rep.OutstandingChains++
				kindRec = &rep.RecoveryChainMS
			case kindActor:
				rep.OutstandingActor++
				kindRec = &rep.RecoveryActorMS
			case kindNested:
				rep.OutstandingNested++
				kindRec = &rep.RecoveryNestedMS
			}
			if at := t.doneAt[i]; !at.IsZero() {
				rec = max(rec, at.Sub(t.killAt))
				*kindRec = max(*kindRec, ms(at.Sub(t.killAt)))
			}
		}
		rep.RecoveryMS = ms(rec)
		d.kills[plan.agentPID] = append(d.kills[plan.agentPID], t.killAt)
	}
	killAt := t.killAt
	t.mu.Unlock()
	for _, f := range release {
		f()
	}

	if rep.Killed && !rep.Hang {
		// The next round starts with the job's original node count: the victim gone and
		// its replacement (a new node ID) joined.
		rejoined, err := waitRejoin(d.ctx, plan.victim.ID, plan.nodes)
		if err != nil {
			rep.Errors = append(rep.Errors, err.Error())
			rep.RejoinMS = -1
		} else {
			rep.RejoinMS = ms(rejoined.Sub(killAt))
		}
		if wait := time.Until(killAt.Add(d.cfg.settle)); wait > 0 {
			time.Sleep(wait)
		}
	}
	return rep
}

// waitRejoin waits (bounded) until the job lists want nodes and not the victim.
func waitRejoin(ctx context.Context, victim string, want int) (time.Time, error) {
	deadline := time.Now().Add(rejoinTimeout)
	for {
		all, err := ray.Nodes(ctx)
		nodes := all.Alive()
		if err == nil && len(nodes) >= want {
			listed := false
			for _, n := range nodes {
				listed = listed || n.ID == victim
			}
			if !listed {
				return time.Now(), nil
			}
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("the job did not get back to %d nodes within %v after killing node %s (it lists %d; error %v)",
				want, rejoinTimeout, victim, len(nodes), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dumpStacks is the evidence of a hang: the driver's goroutines go to its stderr, and each
// worker process of the job gets SIGQUIT, so that Go writes its goroutines to its log
// (<session-dir>/agent-*/logs/worker-<job>.log) as it exits.
func dumpStacks(ctx context.Context) {
	fmt.Fprintln(os.Stderr, "driver: the round hung; the driver's goroutines:")
	_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
	nodes, err := ray.Nodes(ctx)
	if err != nil {
		return
	}
	for _, n := range nodes.Alive() {
		fmt.Fprintf(os.Stderr, "driver: SIGQUIT to node %s (pid %d): its goroutines go to its worker log\n", n.ID, n.PID)
		_ = syscall.Kill(n.PID, syscall.SIGQUIT)
	}
	time.Sleep(time.Second)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
