package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"

	ray "github.com/ray-go/ray"
)

// The shape of one round's workload.
const (
	numChains     = 4  // chains of dependent tasks
	chainSteps    = 4  // tasks per chain, each returning a 4-8 MiB block
	actorCalls    = 50 // pipelined Add calls on the long-lived actor
	nestedParents = 2  // tasks that each submit nestedLeaves subtasks
	nestedLeaves  = 8
	leafWork      = 1 << 20 // xorshift iterations per nested leaf
	minBlock      = 4 << 20
	blockSpread   = 4 << 20 // blocks are minBlock + [0, blockSpread) bytes, a multiple of 8
)

// Remote functions and the actor class. They are registered at package level so that the
// worker processes (started from this same binary) find them by name.
var (
	// chainStart makes the first block of a chain.
	chainStart = ray.Task2("chaos.ChainStart", func(_ context.Context, seed int64, k stepKey) ([]byte, error) {
		return block(seed, k.Round, k.Chain, k.Step, nil), nil
	})
	// chainStep makes the next block of a chain from the previous one.
	chainStep = ray.Task3("chaos.ChainStep", func(_ context.Context, seed int64, k stepKey, prev []byte) ([]byte, error) {
		return block(seed, k.Round, k.Chain, k.Step, prev), nil
	})
	// chainHash returns the SHA-256 (hex) of a chain's last block.
	chainHash = ray.Task1("chaos.ChainHash", func(_ context.Context, b []byte) (string, error) {
		sum := sha256.Sum256(b)
		return hex.EncodeToString(sum[:]), nil
	})
	// nestedLeaf is one subtask of nestedParent.
	nestedLeaf = ray.Task3("chaos.NestedLeaf", func(_ context.Context, seed int64, round, leaf int) (uint64, error) {
		return leafValue(seed, round, leaf), nil
	})
	// nestedParent submits nestedLeaves subtasks (it owns them) and sums their results.
	nestedParent = ray.Task3("chaos.NestedParent", func(ctx context.Context, seed int64, round, parent int) (uint64, error) {
		refs := make([]ray.ObjectRef[uint64], nestedLeaves)
		for i := range refs {
			refs[i] = nestedLeaf.Options(ray.Spread()).Remote(ctx, ray.V(seed), ray.V(round), ray.V(parent*nestedLeaves+i))
		}
		var sum uint64
		for _, r := range refs {
			v, err := ray.Get(ctx, r)
			if err != nil {
				return 0, err
			}
			sum += v
		}
		return sum, nil
	})

	counterClass = ray.Actor("chaos.Counter", func() *counter { return &counter{} })
	counterAdd   = ray.Method1(counterClass, "Add", (*counter).Add)
)

// stepKey names one step of one chain of one round.
type stepKey struct{ Round, Chain, Step int }

// counter is the long-lived actor: a running sum, checkpointed (ray.Checkpointer).
type counter struct {
	Sum   uint64
	Calls int
}

// Add adds by to the running sum and returns it: deterministic given state and argument,
// as exactly-once replay needs.
func (c *counter) Add(_ context.Context, by uint64) (uint64, error) {
	c.Sum += by
	c.Calls++
	return c.Sum, nil
}

// SaveCheckpoint implements ray.Checkpointer.
func (c *counter) SaveCheckpoint(context.Context) ([]byte, error) { return json.Marshal(c) }

// RestoreCheckpoint implements ray.Checkpointer.
func (c *counter) RestoreCheckpoint(_ context.Context, b []byte) error { return json.Unmarshal(b, c) }

// mix is splitmix64's finaliser over a running combination of its arguments.
func mix(xs ...uint64) uint64 {
	h := uint64(0x9E3779B97F4A7C15)
	for _, x := range xs {
		h ^= x
		h += 0x9E3779B97F4A7C15
		h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9
		h = (h ^ (h >> 27)) * 0x94D049BB133111EB
		h ^= h >> 31
	}
	return h
}

// block is the deterministic content of step of chain in round: a 4-8 MiB xorshift stream
// seeded by (seed, round, chain, step) and the SHA-256 of the previous block.
func block(seed int64, round, chain, step int, prev []byte) []byte {
	var ph uint64
	if prev != nil {
		sum := sha256.Sum256(prev)
		ph = binary.LittleEndian.Uint64(sum[:8])
	}
	x := mix(uint64(seed), uint64(round), uint64(chain), uint64(step), ph, uint64(len(prev)))
	n := minBlock + int(x%blockSpread)&^7
	if x == 0 {
		x = 1
	}
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(b[i:], x)
	}
	return b
}

// chainDigest computes in the driver what a chain's final chainHash returns.
func chainDigest(seed int64, round, chain int) string {
	var b []byte
	for step := range chainSteps {
		b = block(seed, round, chain, step, b)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// leafValue is a nested leaf's result: leafWork xorshift steps from a seeded state.
func leafValue(seed int64, round, leaf int) uint64 {
	x := mix(uint64(seed), uint64(round), uint64(leaf), 0x1eaf) | 1
	for range leafWork {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

// nestedSum computes in the driver what nestedParent returns.
func nestedSum(seed int64, round, parent int) uint64 {
	var sum uint64
	for i := range nestedLeaves {
		sum += leafValue(seed, round, parent*nestedLeaves+i)
	}
	return sum
}

// addend is the argument of the i-th actor call of a round.
func addend(seed int64, round, i int) uint64 {
	return mix(uint64(seed), uint64(round), uint64(i), 0xadd)%1000 + 1
}
