// Package envs provides Gymnasium's classic-control environments for the RL
// suite, reproducing Gymnasium 1.4 (with numpy 1.24) bit for bit:
//
//	CartPole-v1               Discrete(2), obs 4, TimeLimit 500, solved at 475
//	Acrobot-v1                Discrete(3), obs 6, TimeLimit 500, solved at -100
//	Pendulum-v1               Box[-2, 2],  obs 3, TimeLimit 200, solved at -200 (a convention)
//	MountainCar-v0            Discrete(3), obs 2, TimeLimit 200, solved at -110
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
// reward of 100 - 0.1*action^2 (the unclipped action), MountainCar's force,
// gravity and clipping: all follow gymnasium/envs/classic_control/*.py of
// Gymnasium 1.4. So do the dtypes of the state, which matter because the
// next step computes from it: CartPole and Pendulum keep a float64 state;
// Acrobot's reset state is float32 (and its first observation takes float32
// cos/sin), after a step float64; MountainCarContinuous's reset state is the
// float64 draw (np.array([uniform, 0])), and each step stores the new state
// as float32 (np.array([position, velocity], dtype=np.float32)), so the first
// step computes from the unrounded draw; MountainCar-v0's state is float64
// throughout. Only the returned observations are float32.
//
// Every value in testdata/gymnasium_classic_control.json (produced by
// Gymnasium 1.4.0 and numpy 1.24.2) is a test, compared exactly: the numpy
// random streams; reset states and observations; ten fixed-action steps of
// CartPole and Acrobot and Pendulum steps under u = 3 sin(0.1 t) (states,
// observations, rewards, flags); and whole episodes under simple policies
// (returns, lengths, flags and final states, after up to 500 steps).
//
// Every step of every environment is also compared, bit for bit (observation,
// reward, flags and the whole internal state), with a second implementation
// in reference_test.go: an independent line-by-line transcription of the
// Python that carries numpy 1.24's float32/float64 dtypes explicitly, run for
// several seeds and episodes with random actions (and controllers, so that
// episodes both terminate and reach the TimeLimit, and CartPole is stepped
// past termination). It shares with the package only the library functions
// (numpy's sin/cos, C's pow and cos, numpy's generator), which the golden
// values check.
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
//   - Python's math.cos (both MountainCars) is computed with Go's math.Cos,
//     which can differ from glibc's in the last bit. MountainCarContinuous
//     stores its state as float32, where such a difference shows with
//     probability below 1e-6 per step (trig.go). MountainCar-v0 keeps a
//     float64 state, so there a last-bit difference in cos can move the
//     float64 velocity by one ulp (~1e-18); the float32 observations and the
//     goal test see it only when a value lies that close to a float32
//     rounding boundary or to the goal (chance ~1e-9 per step), but the
//     internal float64 state may differ from Gymnasium's in its last bits.
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
// Pendulum: uniform(-pi, pi) then uniform(-1, 1); both MountainCars:
// uniform(-0.6, -0.4), kept as float64). Reset(-1) is reset() without a seed:
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
