package envs

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Space describes an action space: Discrete > 0 for a discrete space of that
// many actions (Gymnasium's Discrete(n), actions 0..n-1); otherwise a Box of
// len(Low) dimensions with bounds Low[i] <= a[i] <= High[i].
type Space struct {
	Discrete  int
	Low, High []float64
}

// Dim is the length of an action vector: 1 for discrete spaces (the action is
// one number, the index), else len(Low).
func (s Space) Dim() int {
	if s.Discrete > 0 {
		return 1
	}
	return len(s.Low)
}

// Env is one Gymnasium environment as gymnasium.make(id) builds it: the
// environment inside its registered TimeLimit, with Gymnasium's order
// enforcement (Step before the first Reset panics).
//
// Returned observations are fresh slices that the caller owns and may keep:
// Step and Reset allocate exactly one small []float32 per call and nothing
// else. Observations are the float32 values Gymnasium returns (the float64
// state cast to float32 with round-to-nearest).
//
// An Env is not safe for concurrent use; use one per goroutine (Clone).
type Env interface {
	// Name is the Gymnasium id: "CartPole-v1", ...
	Name() string
	// ObservationSize is the length of every observation.
	ObservationSize() int
	// ActionSpace describes the actions Step accepts.
	ActionSpace() Space
	// Reset starts an episode. seed >= 0 reseeds the environment's generator
	// exactly as Gymnasium's reset(seed=seed) does (np.random.default_rng(seed));
	// seed < 0 continues with the current generator, like reset() (an env never
	// seeded behaves as if seeded from a random seed, like Gymnasium's
	// OS-entropy seeding).
	Reset(seed int64) []float32
	// Step applies an action: for a discrete space action[0] holds the action
	// index (as a float64); for a Box, the action vector (the env clips as
	// Gymnasium does). Truncated is the TimeLimit's truncation: true on the
	// step that reaches the registered limit. As in Gymnasium, stepping past
	// termination is allowed (CartPole then returns reward 0).
	//
	// Step panics, with a message naming the env and the action, when the
	// action has the wrong length, when a discrete action is not an integer in
	// [0, n) (Gymnasium asserts action_space.contains(action)), or when Reset
	// was never called (Gymnasium's ResetNeeded). Box actions are not
	// range-checked: the environments clip them, exactly as Gymnasium does.
	Step(action []float64) (obs []float32, reward float64, terminated, truncated bool)
	// Clone returns an independent copy: same state, same step count, same
	// generator state. Stepping either leaves the other unchanged.
	Clone() Env
}

type registration struct {
	solve float64
	make  func() Env
}

// registry holds each id's constructor and solve threshold.
var registry = map[string]registration{
	"CartPole-v1":              {475, func() Env { return newCartPole() }},
	"Pendulum-v1":              {-200, func() Env { return newPendulum() }},
	"Acrobot-v1":               {-100, func() Env { return newAcrobot() }},
	"MountainCarContinuous-v0": {90, func() Env { return newMountainCarContinuous() }},
	"MountainCar-v0":           {-110, func() Env { return newMountainCar() }},
}

// Make returns a new environment by Gymnasium id; an unknown id is an error
// listing the known ones.
func Make(id string) (Env, error) {
	r, ok := registry[id]
	if !ok {
		return nil, fmt.Errorf("envs: unknown environment %q (known: %s)", id, strings.Join(Names(), ", "))
	}
	return r.make(), nil
}

// Names lists the known environment ids, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for id := range registry {
		names = append(names, id)
	}
	sort.Strings(names)
	return names
}

// SolveThreshold is the score (mean episode return) at which the env counts
// as solved: Gymnasium's reward_threshold for CartPole-v1 (475), Acrobot-v1
// (-100), MountainCar-v0 (-110) and MountainCarContinuous-v0 (90);
// Pendulum-v1 -200 (a convention: Gymnasium registers none).
func SolveThreshold(id string) (float64, bool) {
	r, ok := registry[id]
	if !ok {
		return 0, false
	}
	return r.solve, true
}

// core is the part every environment shares: the generator (Gymnasium's
// env.np_random), the TimeLimit counter and the reset-before-step check.
type core struct {
	name    string
	rng     *Generator
	limit   int // registered max_episode_steps
	elapsed int // steps since the last Reset
	started bool
}

// newCore: limit is the id's registered max_episode_steps.
func newCore(name string, limit int) core {
	return core{name: name, limit: limit}
}

func (c *core) Name() string { return c.name }

// reset is Env.reset's super().reset(seed=seed) plus TimeLimit.reset.
func (c *core) reset(seed int64) {
	if seed >= 0 {
		c.rng = NewGenerator(uint64(seed))
	} else if c.rng == nil {
		c.rng = newRandomGenerator()
	}
	c.elapsed = 0
	c.started = true
}

// tick counts a step and reports the TimeLimit's truncation.
func (c *core) tick() bool {
	c.elapsed++
	return c.elapsed >= c.limit
}

func (c *core) clone() core {
	cc := *c
	if c.rng != nil {
		g := *c.rng
		cc.rng = &g
	}
	return cc
}

func (c *core) mustStarted(action []float64) {
	if !c.started {
		panic(fmt.Sprintf("envs: %s: Step(%v) before Reset (Gymnasium: ResetNeeded)", c.name, action))
	}
}

// discrete validates a Discrete(n) action and returns its index.
func (c *core) discrete(action []float64, n int) int {
	c.mustStarted(action)
	if len(action) != 1 {
		panic(fmt.Sprintf("envs: %s: bad action %v: want 1 value, the index of a Discrete(%d) action", c.name, action, n))
	}
	a := action[0]
	if !(a >= 0 && a < float64(n)) || a != math.Trunc(a) {
		panic(fmt.Sprintf("envs: %s: bad action %v: not in Discrete(%d) (an integer in [0, %d))", c.name, action, n, n))
	}
	return int(a)
}

// box validates the length of a Box action.
func (c *core) box(action []float64, dim int) {
	c.mustStarted(action)
	if len(action) != dim {
		panic(fmt.Sprintf("envs: %s: bad action %v: want %d values", c.name, action, dim))
	}
}

// pyMax and pyMin are Python's builtin max(a, b) and min(a, b) on two floats
// (they keep the first argument unless the second compares greater/less, so
// a NaN first argument survives).
func pyMax(a, b float64) float64 {
	if b > a {
		return b
	}
	return a
}

func pyMin(a, b float64) float64 {
	if b < a {
		return b
	}
	return a
}

// npClip is np.clip(x, lo, hi) on a float64 scalar: NaN stays NaN.
func npClip(x, lo, hi float64) float64 {
	if x < lo {
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}
