// Command actors trains a linear regression model with an asynchronous parameter server:
// one exactly-once actor holds the weights, worker tasks pull them, compute a gradient on
// their data shard (kept in the object store) and push it back. Halfway through, the
// parameter server is killed and restarted; it comes back with the same weights, from its
// last checkpoint plus the replay of its method log. The program exits non-zero when the
// model did not converge, so it doubles as a smoke test.
//
//	go run ./examples/actors
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/ray-go/ray"
)

// Training setup. The data is generated from trueWeights (the last one is the bias,
// multiplied by a constant feature 1) plus Gaussian noise of standard deviation noise, so
// the best possible mean squared error is about noise².
var trueWeights = []float64{2.0, -3.5, 1.25, 0.5, -1.0, 4.0}

const (
	numWorkers      = 4
	samplesPerShard = 1000
	noise           = 0.1
	seed            = 42

	epochs         = 8
	roundsPerEpoch = 5 // pull-gradient-push rounds each worker does per epoch
	learningRate   = 0.02
	killAfterEpoch = 4
	// checkpointEvery is in calls (Pulls count too): small, so that the restart below
	// restores a checkpoint and replays only the calls logged after it.
	checkpointEvery = 25

	maxLoss        = 2 * noise * noise // the smoke test: final loss near the noise floor
	maxWeightError = 0.05
)

// ParameterServer holds the model. Its methods are deterministic given its state and their
// arguments, which is what the method log needs: a restarted instance replays the logged
// calls and must end up in the same state.
type ParameterServer struct {
	weights []float64
	version uint64 // gradients applied so far
}

// Snapshot is what Pull returns (exported fields: it travels as CBOR).
type Snapshot struct {
	Weights []float64
	Version uint64
}

// Pull returns a copy of the current weights and their version.
func (ps *ParameterServer) Pull(context.Context) (Snapshot, error) {
	return Snapshot{Weights: slices.Clone(ps.weights), Version: ps.version}, nil
}

// Push applies one gradient step and returns the new version.
func (ps *ParameterServer) Push(_ context.Context, grad []float64, lr float64) (uint64, error) {
	if len(grad) != len(ps.weights) {
		return ps.version, fmt.Errorf("gradient has %d entries, the model %d", len(grad), len(ps.weights))
	}
	for i, g := range grad {
		ps.weights[i] -= lr * g
	}
	ps.version++
	return ps.version, nil
}

// SaveCheckpoint encodes version and weights: 8 bytes of version, then 8 bytes per weight
// (IEEE 754 bits, little-endian), so a restore is bit-exact.
func (ps *ParameterServer) SaveCheckpoint(context.Context) ([]byte, error) {
	b := binary.LittleEndian.AppendUint64(make([]byte, 0, 8*(1+len(ps.weights))), ps.version)
	for _, w := range ps.weights {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(w))
	}
	return b, nil
}

// RestoreCheckpoint decodes what SaveCheckpoint wrote into a freshly constructed instance.
func (ps *ParameterServer) RestoreCheckpoint(_ context.Context, b []byte) error {
	if len(b) != 8*(1+len(ps.weights)) {
		return fmt.Errorf("checkpoint of %d bytes does not fit a model of %d weights", len(b), len(ps.weights))
	}
	ps.version = binary.LittleEndian.Uint64(b)
	for i := range ps.weights {
		ps.weights[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*(i+1):]))
	}
	// Printing is not state, so it does not break determinism. In local mode the actor
	// runs in this process and the line shows up in the program's output.
	fmt.Printf("  [ps] restored checkpoint at version %d; the calls logged after it are replayed\n", ps.version)
	return nil
}

// Shard is one worker's part of the data set: Rows rows of Dim features in X (row-major)
// and their targets in Y.
type Shard struct {
	X    []float64
	Y    []float64
	Rows int
	Dim  int
}

// Report is what a worker returns after its rounds.
type Report struct {
	Pushes    int
	Staleness uint64 // over all pushes: how many other workers' pushes landed between Pull and Push
}

// LossPart is one shard's sum of squared errors.
type LossPart struct {
	SumSq float64
	N     int
}

// The actor class, its methods and the tasks are registered at package level under
// unique names.
var (
	PS = ray.Actor1("examples.ps.ParameterServer", func(_ context.Context, dim int) (*ParameterServer, error) {
		if dim <= 0 {
			return nil, fmt.Errorf("a model needs at least one weight, got %d", dim)
		}
		fmt.Printf("  [ps] new instance: %d weights at zero\n", dim)
		return &ParameterServer{weights: make([]float64, dim)}, nil
	})
	Pull = ray.Method0(PS, "Pull", (*ParameterServer).Pull)
	Push = ray.Method2(PS, "Push", (*ParameterServer).Push)

	// Train is one worker: rounds of pull, gradient on its shard, push. The shard arrives
	// as a value (the driver passes a ref; the task gets what it refers to); the handle
	// is a plain value too.
	Train = ray.Task4("examples.ps.train", func(ctx context.Context, ps ray.ActorHandle[ParameterServer], shard Shard, rounds int, lr float64) (Report, error) {
		var rep Report
		for range rounds {
			snap, err := ray.Get(ctx, Pull.Remote(ctx, ps))
			if err != nil {
				return rep, fmt.Errorf("pull: %w", err)
			}
			grad := gradient(shard, snap.Weights)
			v, err := ray.Get(ctx, Push.Remote(ctx, ps, ray.V(grad), ray.V(lr)))
			if err != nil {
				return rep, fmt.Errorf("push: %w", err)
			}
			rep.Pushes++
			rep.Staleness += v - snap.Version - 1
		}
		return rep, nil
	})

	// Loss evaluates the model on one shard.
	Loss = ray.Task2("examples.ps.loss", func(_ context.Context, shard Shard, w []float64) (LossPart, error) {
		part := LossPart{N: shard.Rows}
		for i := range shard.Rows {
			r := dot(shard.X[i*shard.Dim:(i+1)*shard.Dim], w) - shard.Y[i]
			part.SumSq += r * r
		}
		return part, nil
	})
)

// gradient is the gradient of the mean squared error on shard at w: (2/n) Xᵀ(Xw − y).
func gradient(shard Shard, w []float64) []float64 {
	g := make([]float64, shard.Dim)
	for i := range shard.Rows {
		x := shard.X[i*shard.Dim : (i+1)*shard.Dim]
		r := dot(x, w) - shard.Y[i]
		for j, xj := range x {
			g[j] += r * xj
		}
	}
	for j := range g {
		g[j] *= 2 / float64(shard.Rows)
	}
	return g
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// makeShards generates the data set deterministically: features N(0, 1), a constant 1 for
// the bias, targets from trueWeights plus N(0, noise²).
func makeShards() []Shard {
	rng := rand.New(rand.NewPCG(seed, seed))
	dim := len(trueWeights)
	shards := make([]Shard, numWorkers)
	for s := range shards {
		sh := Shard{X: make([]float64, samplesPerShard*dim), Y: make([]float64, samplesPerShard), Rows: samplesPerShard, Dim: dim}
		for i := range samplesPerShard {
			x := sh.X[i*dim : (i+1)*dim]
			for j := range dim - 1 {
				x[j] = rng.NormFloat64()
			}
			x[dim-1] = 1
			sh.Y[i] = dot(x, trueWeights) + noise*rng.NormFloat64()
		}
		shards[s] = sh
	}
	return shards
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "actors:", err)
		os.Exit(1)
	}
}

func run() (err error) {
	rctx, err := ray.Init(context.Background())
	if err != nil {
		return fmt.Errorf("start ray: %w", err)
	}
	defer func() {
		if serr := ray.Shutdown(rctx); serr != nil && err == nil {
			err = fmt.Errorf("shut down ray: %w", serr)
		}
	}()
	// A bound on the whole run, so that a hang is an error instead of a stuck smoke test.
	ctx, cancel := context.WithTimeout(rctx, 2*time.Minute)
	defer cancel()
	start := time.Now()

	// The data goes into the object store once; workers and loss tasks get refs.
	shards := makeShards()
	refs := make([]ray.ObjectRef[Shard], len(shards))
	for i, sh := range shards {
		if refs[i], err = ray.Put(ctx, sh); err != nil {
			return fmt.Errorf("put shard %d: %w", i, err)
		}
	}
	fmt.Printf("linear regression: %d samples in %d shards, %d weights, %d async workers, lr %g\n",
		numWorkers*samplesPerShard, numWorkers, len(trueWeights), numWorkers, learningRate)

	// The parameter server: exactly-once (the default), one restart allowed, a checkpoint
	// every checkpointEvery calls. The constructor runs on the actor, not here.
	ps := PS.Remote(ctx, ray.V(len(trueWeights)),
		ray.Name("parameter-server"), ray.MaxRestarts(1), ray.CheckpointEvery(checkpointEvery))
	if err := ps.Err(); err != nil {
		return fmt.Errorf("create the parameter server: %w", err)
	}

	loss, err := evaluate(ctx, ps, refs)
	if err != nil {
		return err
	}
	fmt.Printf("epoch 0: loss %9.4f  version %3d\n", loss.mse, loss.version)

	for epoch := 1; epoch <= epochs; epoch++ {
		// All workers at once; nobody waits for anybody: each pushes a gradient computed
		// from whatever version it pulled (Ray's asynchronous parameter server).
		jobs := make([]ray.ObjectRef[Report], numWorkers)
		for w := range jobs {
			jobs[w] = Train.Remote(ctx, ray.V(ps), refs[w], ray.V(roundsPerEpoch), ray.V(learningRate))
		}
		reports, err := ray.GetAll(ctx, jobs)
		if err != nil {
			return fmt.Errorf("epoch %d: %w", epoch, err)
		}
		pushes, stale := 0, uint64(0)
		for _, r := range reports {
			pushes += r.Pushes
			stale += r.Staleness
		}
		loss, err := evaluate(ctx, ps, refs)
		if err != nil {
			return err
		}
		fmt.Printf("epoch %d: loss %9.4f  version %3d  (%d pushes, mean staleness %.2f)\n",
			epoch, loss.mse, loss.version, pushes, float64(stale)/float64(pushes))

		if epoch == killAfterEpoch {
			if err := killAndCheck(ctx, ps); err != nil {
				return err
			}
		}
	}

	// Exactly once: every push of every worker was applied once, the restart included.
	final, err := ray.Get(ctx, Pull.Remote(ctx, ps))
	if err != nil {
		return fmt.Errorf("final pull: %w", err)
	}
	if want := uint64(epochs * numWorkers * roundsPerEpoch); final.Version != want {
		return fmt.Errorf("the parameter server applied %d gradients, the workers pushed %d", final.Version, want)
	}
	loss, err = evaluate(ctx, ps, refs)
	if err != nil {
		return err
	}
	fmt.Printf("\n%-6s %8s %8s\n", "weight", "true", "learned")
	worst := 0.0
	for i, w := range final.Weights {
		name := fmt.Sprintf("w%d", i)
		if i == len(final.Weights)-1 {
			name = "bias"
		}
		fmt.Printf("%-6s %8.4f %8.4f\n", name, trueWeights[i], w)
		worst = max(worst, math.Abs(w-trueWeights[i]))
	}
	fmt.Printf("final loss %.4f (noise floor %.4f), largest weight error %.4f, %d gradients applied, %.1fs\n",
		loss.mse, noise*noise, worst, final.Version, time.Since(start).Seconds())
	if !(loss.mse <= maxLoss) || worst > maxWeightError { // !(<=) also catches NaN
		return fmt.Errorf("did not converge: loss %.4f (want <= %.4f), weight error %.4f (want <= %.4f)",
			loss.mse, maxLoss, worst, maxWeightError)
	}
	fmt.Println("converged")
	return nil
}

type lossAt struct {
	mse     float64
	version uint64
}

// evaluate pulls the current weights and computes the mean squared error over all shards,
// one Loss task per shard.
func evaluate(ctx context.Context, ps ray.ActorHandle[ParameterServer], refs []ray.ObjectRef[Shard]) (lossAt, error) {
	snap, err := ray.Get(ctx, Pull.Remote(ctx, ps))
	if err != nil {
		return lossAt{}, fmt.Errorf("pull: %w", err)
	}
	parts := make([]ray.ObjectRef[LossPart], len(refs))
	for i, r := range refs {
		parts[i] = Loss.Remote(ctx, r, ray.V(snap.Weights))
	}
	vals, err := ray.GetAll(ctx, parts)
	if err != nil {
		return lossAt{}, fmt.Errorf("loss: %w", err)
	}
	sum, n := 0.0, 0
	for _, p := range vals {
		sum += p.SumSq
		n += p.N
	}
	return lossAt{mse: sum / float64(n), version: snap.Version}, nil
}

// killAndCheck kills the parameter server with a restart allowed and checks that it comes
// back with the very same weights and version.
func killAndCheck(ctx context.Context, ps ray.ActorHandle[ParameterServer]) error {
	before, err := ray.Get(ctx, Pull.Remote(ctx, ps))
	if err != nil {
		return fmt.Errorf("pull before the kill: %w", err)
	}
	fmt.Printf("\nkilling the parameter server (restart allowed) at version %d\n", before.Version)
	if err := ray.Kill(ctx, ps, false); err != nil {
		return fmt.Errorf("kill: %w", err)
	}
	// A call made while the actor restarts waits for it.
	after, err := ray.Get(ctx, Pull.Remote(ctx, ps))
	if err != nil {
		if errors.Is(err, ray.ErrActorDied) {
			return fmt.Errorf("the parameter server did not come back: %w", err)
		}
		return fmt.Errorf("pull after the restart: %w", err)
	}
	if after.Version != before.Version || !slices.Equal(after.Weights, before.Weights) {
		return fmt.Errorf("state lost in the restart: version %d -> %d, weights %.6f -> %.6f",
			before.Version, after.Version, before.Weights, after.Weights)
	}
	st, err := ray.GetActorState(ctx, ps)
	if err != nil {
		return fmt.Errorf("actor state: %w", err)
	}
	if st.Phase != "Alive" || st.Restarts != 1 {
		return fmt.Errorf("after the restart the actor is %s with %d restarts, want Alive with 1", st.Phase, st.Restarts)
	}
	byName, err := ray.GetActor(ctx, PS, "parameter-server")
	if err != nil {
		return fmt.Errorf("look up the parameter server by name: %w", err)
	}
	if byName.ID() != ps.ID() {
		return fmt.Errorf("GetActor found actor %s, want %s", byName.ID(), ps.ID())
	}
	fmt.Printf("back at version %d with bit-identical weights; state %s, restarts %d, incarnation %d\n\n",
		after.Version, st.Phase, st.Restarts, st.Incarnation)
	return nil
}
