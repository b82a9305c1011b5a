// Package envs provides Gymnasium's classic-control environments for the RL
// suite, reproducing Gymnasium 1.4 (with numpy 1.24) bit for bit:
//
//	CartPole-v1               Discrete(2), obs 4, TimeLimit 500, solved at 475
//	Acrobot-v1                Discrete(3), obs 6, TimeLimit 500, solved at -100
//	Pendulum-v1               Box[-2, 2],  obs 3, TimeLimit 200, solved at -200 (a convention)
//	MountainCarContinuous-v0  Box[-1, 1],  obs 2, TimeLimit 999, solved at 90
//
// Make(id) returns what gymnasium.make(id) returns: the environment with its
// default parameters inside its registered TimeLimit (truncation on the
// max_episode_steps-th step) and Gymnasium's order enforcement (Step before
// Reset panics). Vec steps n copies with Gymnasium's SAME_STEP autoreset.
//
// # What is faithful, and how it was checked
//
// Dynamics, constants, rewards, termination thresholds, reset distributions,
// the order of the random draws, CartPole's euler integrator and
// steps_beyond_terminated (reward 0 for steps after termination), Acrobot's
// rk4 over one dt=0.2 interval with the "book" dynamics, wrap and bound, its
// float32 reset state, Pendulum's angle_normalize and the max_speed and
// max_torque clipping, MountainCarContinuous's power, clipping and goal
// reward of 100 - 0.1*action^2 (the unclipped action) and its float32 state:
// all follow gymnasium/envs/classic_control/*.py of Gymnasium 1.4.
//
// Every value in testdata/gymnasium_classic_control.json (produced by
// Gymnasium 1.4.0 and numpy 1.24.2) is a test, compared exactly: the numpy
// random streams; reset states and observations; ten fixed-action steps of
// CartPole and Acrobot and Pendulum steps under u = 3 sin(0.1 t) (states,
// observations, rewards, flags); and whole episodes under simple policies
// (returns, lengths, flags and final states, after up to 500 steps).
//
// Exactness after hundreds of steps needs more than the right formulas: every
// floating-point operation has to round as it did in the reference.
//   - Arithmetic is float64 in Python's evaluation order, with numpy 1.24's
//     scalar promotion rules (a float32 value in an expression with a Python
//     float is widened to float64). Products are wrapped in float64(...)
//     where Go would otherwise be allowed to fuse a multiply-add.
//   - numpy's float64 np.sin/np.cos (CartPole, Pendulum, Acrobot) are not the
//     C library's on the reference machine: numpy 1.24 on an AVX-512 CPU uses
//     Intel SVML's low-accuracy kernels, which this package transcribes
//     (trig.go). The golden data requires it: with correctly rounded sin,
//     Pendulum's first step is already one ulp off.
//   - x**2 on a float (Acrobot's dtheta**2 and d2**2, Pendulum's cost) is the
//     C library's pow, which differs from x*x when x*x is within ~0.001 ulp
//     of a rounding midpoint; this package carries glibc's pow, tables
//     included (libm.go). Without it the golden Acrobot seed-0 episode ends
//     with its final state 1e-13 off.
//   - numpy's float32 sin/cos (Acrobot's first observation, from the float32
//     reset state) are numpy's own FMA polynomial kernels, transcribed too.
//   - Python's math.cos (MountainCar) is computed with Go's math.Cos, which can
//     differ from glibc's in the last bit; the state is float32, and such a
//     difference reaches it with probability below 1e-6 per step (trig.go).
//
// The results do not depend on the machine running Go (math.FMA is exact on
// every platform). They are those of Gymnasium on an x86-64 CPU with AVX-512
// and FMA running numpy 1.24 and glibc's pow as glibc 2.36 builds it (the
// algorithm dates from glibc 2.28); Gymnasium itself gives last-bit-different
// trajectories on other CPUs or numpy versions.
//
// Numpy's random generators are written by hand here because no Go library
// reproduces numpy's streams: SeedSequence (entropy pool and hashmix),
// PCG64 (128-bit LCG, XSL-RR output, seeded through pcg64_set_seed) and the
// Generator methods random() and uniform(). Only the standard library is
// used.
//
// # Seeding
//
// Env.Reset(seed) with seed >= 0 is Gymnasium's reset(seed=seed): the
// environment's generator becomes np.random.default_rng(seed), that is
// NewGenerator(seed) = Generator(PCG64(SeedSequence(seed))), and the reset
// draws from it exactly as Gymnasium does (CartPole: uniform(-0.05, 0.05)
// four times; Acrobot: uniform(-0.1, 0.1) four times, stored as float32;
// Pendulum: uniform(-pi, pi) then uniform(-1, 1); MountainCarContinuous:
// uniform(-0.6, -0.4), stored as float32). Reset(-1) is reset() without a seed:
// the generator continues, so Reset(s) followed by Reset(-1) starts the same
// two episodes as in Gymnasium. An environment never seeded is seeded from
// 128 bits of OS entropy on its first Reset, like numpy's default_rng(None).
// Vec.Reset(seed) seeds copy i with seed+i, like Gymnasium's vector envs.
//
// # Observations and actions
//
// Observations are []float32 holding exactly the float32 values Gymnasium
// returns: the float64 state (or for Acrobot the cos/sin features, for
// Pendulum cos, sin and the angular velocity) rounded to float32. Every
// returned slice is fresh and owned by the caller; Step allocates that one
// slice and nothing else.
//
// Actions are []float64. A discrete action is the index in action[0] (an
// integer value in [0, n)). A Box action is used at float64 precision and
// clipped as Gymnasium clips it; Gymnasium given a float32 action array a
// computes exactly what Step computes given float64(float32(a)) (numpy 1.24
// widens the float32 scalar in every expression), which is how the golden
// Pendulum and MountainCar actions were passed.
//
// Step panics with a message naming the environment and the action when the
// action has the wrong length or a discrete action is not in the space
// (Gymnasium asserts action_space.contains(action)), and when called before
// the first Reset (Gymnasium raises ResetNeeded). Out-of-range Box actions are
// clipped, not rejected, as in Gymnasium.
//
// Environments and Vecs are not safe for concurrent use; Clone gives an
// independent copy (state, step count and generator state).
package envs
