// Command driver is the test driver of the multi-process tests (package cli/e2e): a
// ray-go program that joins the cluster at RAY_ADDRESS, runs one check and prints its
// findings as one JSON object on stdout. Its worker processes are started by the node
// agents from this same binary.
package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	ray "github.com/ray-go/ray"
)

var (
	busy = ray.Task1("e2e.Busy", func(ctx context.Context, d time.Duration) (string, error) {
		time.Sleep(d)
		return ray.NodeID(ctx)
	})
	makeBlob = ray.Task1("e2e.MakeBlob", func(ctx context.Context, n int) ([]byte, error) {
		b := make([]byte, n)
		x := uint64(0x9E3779B97F4A7C15)
		for i := range b {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			b[i] = byte(x)
		}
		return b, nil
	})
	hashBlob = ray.Task1("e2e.HashBlob", func(ctx context.Context, b []byte) (hashed, error) {
		node, err := ray.NodeID(ctx)
		sum := sha256.Sum256(b)
		return hashed{Node: node, Size: len(b), SHA256: hex.EncodeToString(sum[:])}, err
	})
	add = ray.Task2("e2e.Add", func(ctx context.Context, a, b int) (int, error) { return a + b, nil })
	// slowDouble sleeps, then doubles: tasks long enough to be running when a node dies.
	slowDouble = ray.Task2("e2e.SlowDouble", func(ctx context.Context, x int, d time.Duration) (int, error) {
		time.Sleep(d)
		return 2 * x, nil
	})

	// xorBlob flips every byte: a second step of lineage after makeBlob.
	xorBlob = ray.Task1("e2e.XorBlob", func(ctx context.Context, b []byte) ([]byte, error) {
		out := make([]byte, len(b))
		for i, c := range b {
			out[i] = c ^ 0x5a
		}
		return out, nil
	})
	// makeOwned runs on the node that is about to die and owns what it makes there: an
	// 8 MiB object two tasks deep (makeBlob then xorBlob, both on this node) and a small
	// one kept inline by its owner. The caller borrows them through the refs returned.
	makeOwned = ray.Task0("e2e.MakeOwned", func(ctx context.Context) (owned, error) {
		self, err := ray.NodeID(ctx)
		if err != nil {
			return owned{}, err
		}
		here := ray.NodeAffinity(self, true) // soft: a re-run may go elsewhere
		blob := makeBlob.Options(here).Remote(ctx, ray.V(8<<20))
		x := xorBlob.Options(here).Remote(ctx, blob)
		small := add.Remote(ctx, ray.V(1), ray.V(2))
		if _, _, err := ray.Wait(ctx, []ray.ObjectRef[[]byte]{x}); err != nil {
			return owned{}, err
		}
		if _, err := ray.Get(ctx, small); err != nil {
			return owned{}, err
		}
		return owned{Big: x, Small: small, Owner: self}, nil
	})

	// exePath answers the executable its worker process runs and where it runs.
	exePath = ray.Task0("e2e.Exe", func(ctx context.Context) ([2]string, error) {
		exe, err := os.Executable()
		if err != nil {
			return [2]string{}, err
		}
		node, err := ray.NodeID(ctx)
		return [2]string{exe, node}, err
	})

	// fail fails with its message (the state API test looks for it).
	fail = ray.Task1("e2e.Fail", func(ctx context.Context, msg string) (int, error) { return 0, errors.New(msg) })

	accelClass = ray.Actor("e2e.Accel", func() *accel { return &accel{} })
	accelWhere = ray.Method0(accelClass, "Where", (*accel).Where)
	accelAdd   = ray.Method1(accelClass, "Add", (*accel).Add)
	accelShout = ray.Method1(accelClass, "Shout", (*accel).Shout)
	accelEcho  = ray.Method1(accelClass, "Echo", (*accel).Shout) // logs: tiny calls back to back
	// accelNap sleeps, then answers N: a call still running when the cluster goes away.
	accelNap = ray.Method1(accelClass, "Nap", func(a *accel, _ context.Context, d time.Duration) (int, error) {
		time.Sleep(d)
		return a.N, nil
	})

	// say prints its marker and five numbered lines to its worker process's output (what
	// `rayctl logs` shows).
	say = ray.Task1("e2e.Say", func(ctx context.Context, marker string) (string, error) {
		fmt.Println(marker)
		for i := 1; i <= 5; i++ {
			fmt.Printf("say line %d\n", i)
		}
		return ray.NodeID(ctx)
	})
)

type owned struct {
	Big   ray.ObjectRef[[]byte]
	Small ray.ObjectRef[int]
	Owner string
}

type hashed struct {
	Node   string
	Size   int
	SHA256 string
}

type accel struct{ N int } // exported: the runtime checkpoints it by itself

func (a *accel) Where(ctx context.Context) (string, error) { return ray.NodeID(ctx) }
func (a *accel) Shout(_ context.Context, marker string) (int, error) {
	fmt.Println(marker)
	return a.N, nil
}

func (a *accel) Add(_ context.Context, by int) (int, error) {
	a.N += by
	return a.N, nil
}

func main() {
	check := flag.String("check", "all", "spread|locality|bigobject|actor|sum|all, hang (runs a long task until killed), dashboard (a named actor, a failed task, then hangs), "+
		"shipped (prints \"registered\", then on a stdin line \"go\" waits for one more node to join the job and runs tasks there), logs (prints markers from an actor and a task, \"logs ready ACTOR_ID\", then on a stdin line \"follow\" one more from a task on every node, \"followed\", and ends at EOF), nodedeath (kills one of the job's worker processes while tasks run on it), ownerdeath (kills the process that owns "+
		"objects the driver borrows), actordeath (kills an actor's host under pipelined calls), sortdeath (kills a worker process while a Sort's output arrives), actorowner (kills the process that created a non-detached and a detached actor), actorowner-driver (a named actor, \"owner ready\", then waits to be killed), or gcsfailover (rounds until 4 s after printing ready), shared (\"shared ready\", then on a stdin line 6 one-CPU tasks of 400 ms at once, reporting when each ran), adopt-keeper or adopt-owner (a detached actor keeps another job's objects, whose owner is then killed), peerchurn (spread tasks while it SIGKILLs worker processes one after the other), taskevents (5,000 nested tasks from a task; how many the job lists), dropped (actors needing the cluster's one \"accel\" dropped in one process while another waits for it), ownerjob (the named actor -actor, 1 MiB put, \"owner ready\", then waits to be stopped or killed), clusterlost (six long tasks, \"lost ready\", then every call fails once the test stopped the cluster), droppedobjects (task results the driver dropped, in a worker process's store that fills up), actorfree (objects only a killed, dropped or at-most-once actor's state kept: freed once its worker process collects), "+
		"clusterlost-actor (an actor on the node with \"accel\", a call running on it, \"lost ready\", then how its calls fail once the test killed the head), zerocpu (a head of no CPUs and a node of one: the job's nodes, where one-CPU tasks ran, where a task needing nothing pinned to each node ran), driverstore (8 MiB put, \"store ready NODE JOB\", then holds it until stdin ends), actornodedeath (kills the whole node, agent and worker process, of exactly-once actors under pipelined calls), tasklist (9 tasks and calls; what ListTasks and SummarizeTasks say of them, five times), subfail (an unknown function and an infeasible task, \"subfail ready\", then waits to be killed), nestedsentinels (tasks that return a nested killed actor call's, cancelled task's or released object's error, two levels down: the driver's error and the sentinels it matches; and a registered error type's fields), cancelrec (a task on the node with \"near\" whose child runs on the node with \"far\" and grandchild anywhere, cancelled: the states of its child and grandchild and the available resources after), cancelrestart (an AtMostOnce actor on a node with \"spare\": a call cancelled behind a running one, then its worker process SIGKILLed; again with the Cancel after the kill: whether the cancelled call ran, what Get said), hol (\"hol ready\", then commands on stdin: hold, big, small N, mixed N, wait; see hol.go), rejoin (a task needing the resource \"rejoin\", tried until it lands), namespace (the detached actor \"counter\" without a namespace, found by name from the driver and a task; see namespace.go), spill (task results beyond the worker process's store, \"spill ready\", then on a stdin line reads them back: \"spill ok\"), driverspill (puts beyond the driver's own 16 MiB store: how many spill files E2E_SPILL_ROOT holds then, and whether they read back), actoraffinity (actors with hard and soft NodeAffinity to each of the job's nodes, and to nodes that are none: where each ran, or its error), pg-holder or pg-other (a placement group of one job that another job tries to use: see pgjobs.go), argborrow (refs passed inside a task's argument to a worker process: how soon that process's borrows of them end once the task returned), nestedput (a 1 MiB object a task's worker process made with Put and returned nested, read right after that process was SIGKILLed, before and after ray.Wait found it ready: the errors and the sentinels they match), demands (work that waits for resources, then released: see demands.go), jobstop or exit3 (three tasks, then \"jobstop ready\" and a long task, or exit status 3 without ray.Shutdown: see jobend.go), gcsrecords (held task results and a put, \"records ready\", then returns, or with E2E_HOLD set waits to be killed)")
	bigMiB := flag.Int("big-mib", 200, "size of the bigobject check's object in MiB")
	flag.StringVar(&actorName, "actor", actorName, "the detached actor the detached-b check uses")
	taskEvents := flag.Int("task-events", 0, "ray.WithTaskEvents (0: the default); the job's worker processes parse the same flags")
	ns := flag.String("ns", "", "ray.WithNamespace (\"\": RAY_GO_JOB_NAMESPACE, else an anonymous one)")
	flag.StringVar(&nsOther, "ns-other", "", "the namespace check also gets and kills the \"counter\" of this namespace")
	flag.BoolVar(&nsKill, "ns-kill", false, "the namespace check kills the \"counter\" it found by name")
	flag.Parse()
	// TestInitOutlastsItsCertificate: a worker process (the agent started it: RAY_GO_MODE
	// is set) waits E2E_WORKER_DELAY (from its agent's environment) before it joins, so
	// that its driver's ray.Init, which waits for it, lasts that long.
	if d, err := time.ParseDuration(os.Getenv("E2E_WORKER_DELAY")); err == nil && os.Getenv("RAY_GO_MODE") != "" {
		time.Sleep(d)
	}
	start := time.Now()
	opts := []ray.InitOption{ray.WithTaskEvents(*taskEvents), ray.WithNamespace(*ns)}
	if *check == "driverspill" {
		opts = append(opts, ray.WithObjectStoreMemory(16<<20)) // its puts go past its store
	}
	ctx, err := ray.Init(context.Background(), opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "driver:", err)
		os.Exit(1)
	}
	out := map[string]any{}
	if *check == "rejoin" {
		err = rejoinCheck(ctx, start, out)
	} else {
		err = run(ctx, *check, *bigMiB, out)
	}
	stopAt := time.Now()
	serr := ray.Shutdown(ctx)
	if *check == "clusterlost" || *check == "clusterlost-actor" {
		out["shutdown_seconds"] = time.Since(stopAt).Seconds()
		if errors.Is(serr, ray.ErrClusterLost) {
			serr = nil // what the driver could not write to a GCS that is gone: expected
		}
	}
	if err == nil {
		err = serr
	}
	if err != nil {
		out["error"] = err.Error()
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	if err != nil {
		os.Exit(1)
	}
}

func run(ctx context.Context, check string, bigMiB int, out map[string]any) error {
	listed, err := ray.Nodes(ctx)
	if err != nil {
		return err
	}
	nodes := listed.Alive()
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	out["nodes"] = nodes
	if check == "hold-sum" { // TestCertsBounded: wait E2E_HOLD (outlive the first certificate), then a task
		d, _ := time.ParseDuration(os.Getenv("E2E_HOLD"))
		time.Sleep(d)
		if out["sum"], err = ray.Get(ctx, add.Remote(ctx, ray.V(2), ray.V(3))); err != nil {
			return err
		}
		// A named actor: its name is registered in the GCS by this driver.
		h := accelClass.Remote(ctx, ray.Name(fmt.Sprintf("held-%d", os.Getpid())), ray.Namespace("e2e"))
		if out["actor"], err = ray.Get(ctx, accelAdd.Remote(ctx, h, ray.V(1))); err != nil {
			return err
		}
		return ray.Kill(ctx, h, true)
	}
	if check == "driverspill" {
		return driverSpillCheck(ctx, out)
	}
	if check == "shipped" {
		return shippedCheck(ctx, nodes, out)
	}
	if strings.HasPrefix(check, "detached-") {
		return detachedCheck(ctx, check, out)
	}
	if check == "shared" {
		return sharedCheck(ctx, out)
	}
	if check == "hol" {
		return holCheck(ctx)
	}
	if check == "taskevents" {
		return taskEventsCheck(ctx, out)
	}
	if check == "tasklist" {
		return taskListCheck(ctx, out)
	}
	if check == "namespace" {
		return namespaceCheck(ctx, out)
	}
	if check == "dropped" {
		return droppedCheck(ctx, out)
	}
	if check == "droppedobjects" {
		return droppedObjectsCheck(ctx, out)
	}
	if check == "actorfree" {
		return actorFreeCheck(ctx, out)
	}
	if check == "clusterlost" {
		return clusterLostCheck(ctx, out)
	}
	if check == "clusterlost-actor" {
		return clusterLostActorCheck(ctx, out)
	}
	if strings.HasPrefix(check, "adopt-") {
		return adoptCheck(ctx, check, out)
	}
	if check == "ownerjob" {
		return ownerJobCheck(ctx)
	}
	if check == "zerocpu" {
		return zeroCPUCheck(ctx, out)
	}
	if check == "actoraffinity" {
		return actorAffinityCheck(ctx, out)
	}
	if check == "nestedsentinels" {
		return nestedSentinelsCheck(ctx, out)
	}
	if check == "cancelrec" {
		return cancelRecCheck(ctx, out)
	}
	if check == "cancelrestart" {
		return cancelRestartCheck(ctx, out)
	}
	if check == "driverstore" {
		return driverStoreCheck(ctx)
	}
	if check == "gcsrecords" {
		return gcsRecordsCheck(ctx)
	}
	if check == "spill" {
		return spillCheck(ctx)
	}
	if check == "argborrow" {
		return argBorrowCheck(ctx)
	}
	if check == "nestedput" {
		return nestedPutCheck(ctx)
	}
	if check == "newnode" {
		return newNodeCheck(ctx)
	}
	if check == "subfail" {
		return subFailCheck(ctx)
	}
	if strings.HasPrefix(check, "pg-") {
		return pgJobsCheck(ctx, check, out)
	}
	if check == "demands" {
		return demandsCheck(ctx)
	}
	if check == "workerexit" {
		return workerExitCheck(ctx)
	}
	if check == "jobstop" || check == "exit3" {
		return jobEndCheck(ctx, check)
	}
	if len(nodes) < 2 {
		return fmt.Errorf("the job has %d nodes, the checks need 2", len(nodes))
	}
	if check == "dashboard" {
		// For the dashboard's browser test: a named actor, finished tasks, one that fails,
		// then a long task that keeps the job running until the test stops it.
		h := accelClass.Remote(ctx, ray.Name("dash-counter"))
		if _, err := ray.Get(ctx, accelAdd.Remote(ctx, h, ray.V(1))); err != nil {
			return err
		}
		if err := chainAndFailure(ctx); err != nil {
			return err
		}
		// An object of 3 MiB this driver puts (into the store of its node: larger than
		// the inline limit), for the Objects page.
		obj, err := ray.Put(ctx, make([]byte, 3<<20))
		if err != nil {
			return err
		}
		fmt.Println("dashboard object", obj.ID())
		fmt.Println("dashboard ready")
		_, err = ray.Get(ctx, busy.Remote(ctx, ray.V(10*time.Minute)))
		// The named actor lives as long as a handle to it (Ray's semantics), the object
		// as long as its ref: keep both until the test has seen them on the dashboard,
		// or the collector may end them.
		runtime.KeepAlive(h)
		runtime.KeepAlive(obj)
		return err
	}
	if check == "logs" {
		return logsCheck(ctx, nodes)
	}
	if check == "sortdeath" {
		return sortDeath(ctx, nodes, out)
	}
	if check == "peerchurn" {
		return peerChurn(ctx, nodes, out)
	}
	if check == "actornodedeath" {
		return actorNodeDeath(ctx, out)
	}
	if check == "actorpoison" {
		return actorPoison(ctx, out)
	}
	if check == "actorowner" {
		return actorOwnerCheck(ctx, nodes, out)
	}
	if check == "actorowner-driver" {
		return actorOwnerDriverCheck(ctx)
	}
	if check == "workerout" {
		return workerOutCheck(ctx, out)
	}
	if check == "hang" {
		// A 16 MiB object stays alive (rayctl memory shows it), then a long task runs.
		blob := makeBlob.Remote(ctx, ray.V(16<<20))
		if _, _, err := ray.Wait(ctx, []ray.ObjectRef[[]byte]{blob}); err != nil {
			return err
		}
		defer blob.Release()
		// For the state API: a chain of 10 tasks and one that fails (chainAndFailure), and
		// tasks that a worker process submits (makeOwned's).
		if err := chainAndFailure(ctx); err != nil {
			return err
		}
		if _, err := ray.Get(ctx, makeOwned.Remote(ctx)); err != nil {
			return err
		}
		fmt.Println("hanging") // the test kills the driver now
		_, err := ray.Get(ctx, busy.Remote(ctx, ray.V(10*time.Minute)))
		return err
	}
	if check == "gcsfailover" {
		// Rounds of 20 tasks and one exactly-once actor call (a GCS write before it runs)
		// until 4 s and 20 rounds after "ready", which tells the test to stop a GCS member.
		h := accelClass.Remote(ctx)
		var before, after []time.Duration
		var readyAt time.Time
		for i := 0; ; i++ {
			start := time.Now()
			refs := make([]ray.ObjectRef[int], 20)
			for k := range refs {
				refs[k] = add.Remote(ctx, ray.V(i), ray.V(k))
			}
			for k, r := range refs {
				if v, err := ray.Get(ctx, r); err != nil || v != i+k {
					return fmt.Errorf("round %d task %d: %d, %v", i, k, v, err)
				}
			}
			if v, err := ray.Get(ctx, accelAdd.Remote(ctx, h, ray.V(1))); err != nil || v != i+1 {
				return fmt.Errorf("round %d actor call: %d, %v (want %d)", i, v, err, i+1)
			}
			if readyAt.IsZero() {
				before = append(before, time.Since(start))
				if i == 50 {
					fmt.Println("ready")
					readyAt = time.Now()
				}
				continue
			}
			after = append(after, time.Since(start))
			if time.Since(readyAt) > 4*time.Second && len(after) >= 20 {
				break
			}
		}
		stat := func(d []time.Duration) map[string]float64 {
			sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
			return map[string]float64{"median_ms": float64(d[len(d)/2].Microseconds()) / 1000, "max_ms": float64(d[len(d)-1].Microseconds()) / 1000}
		}
		out["gcsfailover"] = map[string]any{"rounds": len(before) + len(after), "before": stat(before), "after": stat(after)}
		return nil
	}
	if check == "gcsoutage" {
		// Rounds of 20 tasks and one exactly-once actor call. After "ready" the test stops
		// the GCS's quorum for longer than the nodes' lease TTL, then writes "resumed" on
		// stdin; the rounds go on for 15 s after that, past the head's grace for a job
		// whose driver's lease expired. Every round must come back right: the job and its
		// worker processes live through the outage.
		h := accelClass.Remote(ctx)
		resumed := make(chan struct{})
		var resumedAt time.Time
		rounds, during, longest := 0, 0, time.Duration(0)
		for i := 0; ; i++ {
			start := time.Now()
			rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			refs := make([]ray.ObjectRef[int], 20)
			for k := range refs {
				refs[k] = add.Remote(rctx, ray.V(i), ray.V(k))
			}
			for k, r := range refs {
				if v, err := ray.Get(rctx, r); err != nil || v != i+k {
					cancel()
					return fmt.Errorf("round %d task %d: %d, %v", i, k, v, err)
				}
			}
			v, err := ray.Get(rctx, accelAdd.Remote(rctx, h, ray.V(1)))
			cancel()
			if err != nil || v != i+1 {
				return fmt.Errorf("round %d actor call: %d, %v (want %d)", i, v, err, i+1)
			}
			rounds++
			longest = max(longest, time.Since(start))
			if i == 20 {
				fmt.Println("ready")
				go func() {
					line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
					if strings.TrimSpace(line) == "resumed" {
						close(resumed)
					}
				}()
			}
			if i < 20 {
				continue
			}
			if resumedAt.IsZero() {
				during++
				select {
				case <-resumed:
					resumedAt = time.Now()
				default:
				}
				continue
			}
			if time.Since(resumedAt) > 15*time.Second && i > 20+during+10 {
				break
			}
		}
		out["gcsoutage"] = map[string]any{"rounds": rounds, "during": during, "longest_ms": longest.Milliseconds()}
		return nil
	}
	if check == "actordeath" {
		// An actor's host process is killed while 30 calls are in flight: the actor restarts
		// on another process from its method log, and every call completes exactly once (the
		// i-th call returns the running sum 1+...+i).
		h := accelClass.Remote(ctx, ray.MaxRestarts(3), ray.CheckpointEvery(8))
		where, err := ray.Get(ctx, accelWhere.Remote(ctx, h))
		if err != nil {
			return err
		}
		var victim *ray.Node
		for i := range nodes {
			if nodes[i].ID == where {
				victim = &nodes[i]
			}
		}
		if victim == nil {
			return fmt.Errorf("the actor runs on %s, not a node of the job", where)
		}
		for i := 1; i <= 20; i++ {
			if _, err := ray.Get(ctx, accelAdd.Remote(ctx, h, ray.V(i))); err != nil {
				return err
			}
		}
		refs := make([]ray.ObjectRef[int], 0, 30)
		for i := 21; i <= 50; i++ {
			refs = append(refs, accelAdd.Remote(ctx, h, ray.V(i)))
		}
		start := time.Now()
		if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
			return fmt.Errorf("kill worker process %d: %w", victim.PID, err)
		}
		wrong := 0
		for k, r := range refs {
			i := 21 + k
			v, err := ray.Get(ctx, r)
			if err != nil {
				return fmt.Errorf("call %d after the actor's host died: %w", i, err)
			}
			if v != i*(i+1)/2 {
				wrong++
			}
		}
		seconds := time.Since(start).Seconds()
		after, err := ray.Get(ctx, accelWhere.Remote(ctx, h))
		if err != nil {
			return err
		}
		final, err := ray.Get(ctx, accelAdd.Remote(ctx, h, ray.V(0)))
		if err != nil {
			return err
		}
		out["actordeath"] = map[string]any{"victim": victim.ID, "calls": len(refs), "wrong": wrong, "seconds": seconds,
			"restarted_on": after, "final": final}
		return nil
	}
	if check == "ownerdeath" {
		victim := nodes[0]
		o, err := ray.Get(ctx, makeOwned.Options(ray.NodeAffinity(victim.ID, false)).Remote(ctx))
		if err != nil {
			return err
		}
		if o.Owner != victim.ID {
			return fmt.Errorf("makeOwned ran on %s, not on %s", o.Owner, victim.ID)
		}
		big, err := ray.Get(ctx, o.Big)
		if err != nil {
			return err
		}
		before := sha256.Sum256(big)
		big = nil
		time.Sleep(300 * time.Millisecond) // the owner's lineage reaches the GCS (written in batches)
		start := time.Now()
		if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
			return fmt.Errorf("kill worker process %d: %w", victim.PID, err)
		}
		big, err = ray.Get(ctx, o.Big)
		if err != nil {
			return fmt.Errorf("reading an 8 MiB object whose owner (node %s) died: %w", victim.ID, err)
		}
		seconds := time.Since(start).Seconds()
		after := sha256.Sum256(big)
		small, err := ray.Get(ctx, o.Small)
		if err != nil {
			return fmt.Errorf("reading a small object whose owner (node %s) died: %w", victim.ID, err)
		}
		// The adopted object is an ordinary owned one now: it is an argument like any other.
		h, err := ray.Get(ctx, hashBlob.Remote(ctx, o.Big))
		if err != nil {
			return fmt.Errorf("passing the adopted object to a task: %w", err)
		}
		out["ownerdeath"] = map[string]any{"victim": victim.ID, "seconds": seconds, "same": before == after,
			"small": small, "task_same": h.SHA256 == hex.EncodeToString(before[:]), "read_on": h.Node}
		return nil
	}
	if check == "nodedeath" {
		victim := nodes[0]
		// An object that lives only on the victim: after the kill it is recreated from
		// lineage (its task runs again elsewhere, soft affinity) with the same bytes.
		lost := makeBlob.Options(ray.NodeAffinity(victim.ID, true)).Remote(ctx, ray.V(8<<20))
		before, err := ray.Get(ctx, hashBlob.Options(ray.NodeAffinity(victim.ID, false)).Remote(ctx, lost))
		if err != nil {
			return err
		}
		refs := make([]ray.ObjectRef[int], 4*len(nodes))
		for i := range refs {
			refs[i] = slowDouble.Options(ray.Spread()).Remote(ctx, ray.V(i), ray.V(time.Second))
		}
		time.Sleep(400 * time.Millisecond) // the tasks run now
		start := time.Now()
		if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
			return fmt.Errorf("kill worker process %d: %w", victim.PID, err)
		}
		wrong := 0
		for i, r := range refs {
			v, err := ray.Get(ctx, r)
			if err != nil {
				return fmt.Errorf("task %d after the death of node %s: %w", i, victim.ID, err)
			}
			if v != 2*i {
				wrong++
			}
		}
		after, err := ray.Nodes(ctx)
		if err != nil {
			return err
		}
		stillListed, listedDead := false, ""
		for _, n := range after {
			stillListed = stillListed || n.ID == victim.ID && n.Alive
			if n.ID == victim.ID && !n.Alive {
				listedDead = n.DeathReason
			}
		}
		elapsed := time.Since(start).Seconds()
		after2, err := ray.Get(ctx, hashBlob.Remote(ctx, lost))
		if err != nil {
			return fmt.Errorf("reading an object lost with node %s: %w", victim.ID, err)
		}
		out["nodedeath"] = map[string]any{"victim": victim.ID, "tasks": len(refs), "wrong": wrong,
			"seconds": elapsed, "victim_listed_after": stillListed, "victim_dead_reason": listedDead,
			"recreated_same": after2.SHA256 == before.SHA256 && after2.Size == before.Size, "recreated_on": after2.Node}
		return nil
	}
	all := check == "all"
	if all || check == "sum" {
		refs := make([]ray.ObjectRef[int], 100)
		for i := range refs {
			refs[i] = add.Remote(ctx, ray.V(i), ray.V(1))
		}
		total := 0
		for _, r := range refs {
			v, err := ray.Get(ctx, r)
			if err != nil {
				return err
			}
			total += v
		}
		out["sum"] = total
	}
	if all || check == "spread" {
		var refs []ray.ObjectRef[string]
		for range 6 * len(nodes) {
			refs = append(refs, busy.Options(ray.Spread()).Remote(ctx, ray.V(20*time.Millisecond)))
		}
		seen := map[string]int{}
		for _, r := range refs {
			id, err := ray.Get(ctx, r)
			if err != nil {
				return err
			}
			seen[id]++
		}
		out["spread"] = seen
	}
	if all || check == "locality" {
		target := nodes[len(nodes)-1].ID
		blob := makeBlob.Options(ray.NodeAffinity(target, false)).Remote(ctx, ray.V(8<<20))
		var ran []string
		for range 3 {
			h, err := ray.Get(ctx, hashBlob.Remote(ctx, blob))
			if err != nil {
				return err
			}
			ran = append(ran, h.Node)
		}
		out["locality"] = map[string]any{"target": target, "ran": ran}
	}
	if all || check == "bigobject" {
		a, b := nodes[0].ID, nodes[1].ID
		blob := makeBlob.Options(ray.NodeAffinity(a, false)).Remote(ctx, ray.V(bigMiB<<20))
		ha, err := ray.Get(ctx, hashBlob.Options(ray.NodeAffinity(a, false)).Remote(ctx, blob))
		if err != nil {
			return err
		}
		start := time.Now()
		hb, err := ray.Get(ctx, hashBlob.Options(ray.NodeAffinity(b, false)).Remote(ctx, blob))
		if err != nil {
			return err
		}
		remote := time.Since(start)
		out["bigobject"] = map[string]any{"on": ha, "read": hb, "remote_seconds": remote.Seconds()}
	}
	if all || check == "actor" {
		h := accelClass.Remote(ctx, ray.Resources(map[string]float64{"accel": 1}))
		where, err := ray.Get(ctx, accelWhere.Remote(ctx, h))
		if err != nil {
			return err
		}
		n := 0
		for i := 1; i <= 50; i++ {
			if n, err = ray.Get(ctx, accelAdd.Remote(ctx, h, ray.V(i))); err != nil {
				return err
			}
		}
		out["actor"] = map[string]any{"node": where, "sum": n}
	}
	return nil
}

// chainAndFailure runs what the state API and the dashboard tests look for: a chain of 10
// tasks (each takes the last one's result) and a task that fails with a known message.
func chainAndFailure(ctx context.Context) error {
	r := add.Remote(ctx, ray.V(0), ray.V(1))
	for i := range 9 {
		r = add.Remote(ctx, r, ray.V(i))
	}
	if _, err := ray.Get(ctx, r); err != nil {
		return err
	}
	if _, err := ray.Get(ctx, fail.Remote(ctx, ray.V("e2e: this task fails on purpose"))); err == nil {
		return errors.New("e2e.Fail did not fail")
	}
	return nil
}

// logsCheck is `rayctl logs`'s test (see the -check flag).
func logsCheck(ctx context.Context, nodes []ray.Node) error {
	h := accelClass.Remote(ctx)
	if _, err := ray.Get(ctx, accelShout.Remote(ctx, h, ray.V("e2e-actor-marker"))); err != nil {
		return err
	}
	if _, err := ray.Get(ctx, say.Remote(ctx, ray.V("e2e-log-marker"))); err != nil {
		return err
	}
	// Three tiny calls sent together (each prints one line, well under the time after which
	// a call reads its log's end itself).
	var echoes []ray.ObjectRef[int]
	for _, m := range []string{"e2e-echo-a", "e2e-echo-b", "e2e-echo-c"} {
		echoes = append(echoes, accelEcho.Remote(ctx, h, ray.V(m)))
	}
	if _, err := ray.GetAll(ctx, echoes); err != nil {
		return err
	}
	fmt.Println("logs ready", h.ID())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() != "follow" {
			continue
		}
		var refs []ray.ObjectRef[string]
		for _, n := range nodes {
			refs = append(refs, say.Options(ray.NodeAffinity(n.ID, false)).Remote(ctx, ray.V("e2e-follow-marker")))
		}
		if _, err := ray.GetAll(ctx, refs); err != nil {
			return err
		}
		fmt.Println("followed")
	}
	return in.Err()
}

// shippedCheck: after "registered" the test removes this program's file and starts one more
// agent, which must fetch the program from the GCS to start its worker process; on a stdin
// line "go" this waits (at most 2 minutes) for that node to join the job and runs 20 tasks
// pinned to it, reporting their sum, where they ran and the executable the node runs.
func shippedCheck(ctx context.Context, nodes []ray.Node, out map[string]any) error {
	fmt.Println("registered")
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "go" {
		return fmt.Errorf("stdin: %q, %v (want \"go\")", line, err)
	}
	known := map[string]bool{}
	for _, n := range nodes {
		known[n.ID] = true
	}
	var added *ray.Node
	for deadline := time.Now().Add(2 * time.Minute); added == nil; {
		if time.Now().After(deadline) {
			return fmt.Errorf("no node joined the job within 2 minutes (it had %d)", len(nodes))
		}
		time.Sleep(100 * time.Millisecond)
		all, err := ray.Nodes(ctx)
		if err != nil {
			return err
		}
		now := all.Alive()
		for i := range now {
			if !known[now[i].ID] {
				added = &now[i]
			}
		}
	}
	there := ray.NodeAffinity(added.ID, false)
	refs := make([]ray.ObjectRef[int], 20)
	for i := range refs {
		refs[i] = add.Options(there).Remote(ctx, ray.V(i), ray.V(i))
	}
	sum := 0
	for _, r := range refs {
		v, err := ray.Get(ctx, r)
		if err != nil {
			return err
		}
		sum += v
	}
	where, err := ray.Get(ctx, exePath.Options(there).Remote(ctx))
	if err != nil {
		return err
	}
	out["shipped"] = map[string]any{"node": added.ID, "sum": sum, "exe": where[0], "ran_on": where[1]}
	return nil
}
