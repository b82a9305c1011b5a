package envs

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Per-step reference tests.
//
// The golden file holds what Gymnasium printed, but only a few steps and the
// end states of some episodes, and it cannot grow here (no Python on the
// build machines). So every environment is also checked at every step
// against a second, independent implementation below: a line-by-line
// transcription of gymnasium/envs/classic_control/*.py (Gymnasium 1.4) that
// carries numpy 1.24's dtypes explicitly. Where the Python holds a float32
// array the reference holds float32 values, where it holds a float64 array
// (MountainCarContinuous after reset, Acrobot's np.append and rk4) float64;
// scalar expressions mixing a numpy float32 with a Python float are float64,
// as numpy 1.24 promotes them. Products are wrapped in float64(...) so that
// Go never fuses a multiply-add. The reference shares only the library
// functions with the package: numpy's sin/cos (sin, cos, sin32, cos32),
// C's pow (libmPow) and cos (pyCos), and numpy's random generator, each
// checked against the golden file on its own.
//
// Each test runs several seeds, several episodes per seed (Reset(seed), then
// Reset(-1) as Gymnasium's reset() continues the generator), with random
// actions (and for some episodes a simple controller with random actions
// mixed in, so that episodes both terminate and run into the TimeLimit), and
// compares at every step the observation bits, the reward, both flags and the
// full internal state.

// refMul is a float64 product rounded on its own (never fused).
func refMul(a, b float64) float64 { return float64(a * b) }

// refPyMinMax are Python's min(max(x, lo), hi) on floats.
func refPyMinMax(x, lo, hi float64) float64 {
	if lo > x { // max(x, lo) keeps x unless lo > x
		x = lo
	}
	if hi < x { // min(x, hi) keeps x unless hi < x
		x = hi
	}
	return x
}

// refNpClip is np.clip on a float64 scalar.
func refNpClip(x, lo, hi float64) float64 { return math.Min(math.Max(x, lo), hi) }

// refRemainder is numpy's float64 % (npy_divmod's remainder).
func refRemainder(a, b float64) float64 {
	mod := math.Mod(a, b)
	if mod == 0 {
		return math.Copysign(0, b)
	}
	if (b < 0) != (mod < 0) {
		mod += b
	}
	return mod
}

// refEnv is one reference environment (without the TimeLimit, which the
// runner applies: truncated on the limit-th step since reset).
type refEnv interface {
	reset(g *Generator) []float32
	step(a float64) (obs []float32, reward float64, terminated bool)
	state() []float64
}

// --- CartPole-v1 -----------------------------------------------------------

type refCartPole struct {
	s                     [4]float64 // np.float64 array
	stepsBeyondTerminated *int
}

func (r *refCartPole) reset(g *Generator) []float32 {
	// self.state = self.np_random.uniform(low=-0.05, high=0.05, size=(4,))
	for i := range r.s {
		r.s[i] = g.Uniform(-0.05, 0.05)
	}
	r.stepsBeyondTerminated = nil
	return r.obs()
}

func (r *refCartPole) obs() []float32 {
	return []float32{float32(r.s[0]), float32(r.s[1]), float32(r.s[2]), float32(r.s[3])}
}

func (r *refCartPole) state() []float64 { return r.s[:] }

func (r *refCartPole) step(action float64) ([]float32, float64, bool) {
	const (
		gravity    = 9.8
		masspole   = 0.1
		masscart   = 1.0
		length     = 0.5
		forceMag   = 10.0
		tau        = 0.02
		xThreshold = 2.4
	)
	totalMass := float64(masspole) + float64(masscart)
	polemassLength := refMul(masspole, length)
	thetaThreshold := refMul(refMul(12, 2), math.Pi) / 360
	x, xDot, theta, thetaDot := r.s[0], r.s[1], r.s[2], r.s[3]
	force := -forceMag
	if action == 1 {
		force = forceMag
	}
	costheta := cos(theta)
	sintheta := sin(theta)
	temp := (force + refMul(refMul(polemassLength, refMul(thetaDot, thetaDot)), sintheta)) / totalMass
	thetaacc := (refMul(gravity, sintheta) - refMul(costheta, temp)) /
		refMul(length, 4.0/3.0-refMul(masspole, refMul(costheta, costheta))/totalMass)
	xacc := temp - refMul(refMul(polemassLength, thetaacc), costheta)/totalMass
	x = x + refMul(tau, xDot)
	xDot = xDot + refMul(tau, xacc)
	theta = theta + refMul(tau, thetaDot)
	thetaDot = thetaDot + refMul(tau, thetaacc)
	r.s = [4]float64{x, xDot, theta, thetaDot}
	terminated := x < -xThreshold || x > xThreshold || theta < -thetaThreshold || theta > thetaThreshold
	var reward float64
	switch {
	case !terminated:
		reward = 1.0
	case r.stepsBeyondTerminated == nil:
		n := 0
		r.stepsBeyondTerminated = &n
		reward = 1.0
	default:
		*r.stepsBeyondTerminated++
		reward = 0.0
	}
	return r.obs(), reward, terminated
}

// --- MountainCarContinuous-v0 -----------------------------------------------

type refMountainCarContinuous struct {
	// self.state: a float64 array after reset, a float32 array after a step.
	s64 [2]float64
	s32 [2]float32
	f32 bool
}

func (r *refMountainCarContinuous) reset(g *Generator) []float32 {
	// self.state = np.array([self.np_random.uniform(low=-0.6, high=-0.4), 0])
	r.s64 = [2]float64{g.Uniform(-0.6, -0.4), 0}
	r.f32 = false
	// return np.array(self.state, dtype=np.float32)
	return []float32{float32(r.s64[0]), float32(r.s64[1])}
}

func (r *refMountainCarContinuous) state() []float64 {
	if r.f32 {
		return []float64{float64(r.s32[0]), float64(r.s32[1])}
	}
	return r.s64[:]
}

// step takes a = float64(float32 action): the action array is float32.
func (r *refMountainCarContinuous) step(a float64) ([]float32, float64, bool) {
	const (
		minAction, maxAction     = -1.0, 1.0
		minPosition, maxPosition = -1.2, 0.6
		maxSpeed                 = 0.07
		goalPosition             = 0.45
		goalVelocity             = 0
		power                    = 0.0015
	)
	// position = self.state[0]; velocity = self.state[1]: numpy scalars,
	// float64 or float32; every expression below mixes them with Python
	// floats or ints, so numpy 1.24 computes in float64.
	var position, velocity float64
	if r.f32 {
		position, velocity = float64(r.s32[0]), float64(r.s32[1])
	} else {
		position, velocity = r.s64[0], r.s64[1]
	}
	force := refPyMinMax(a, minAction, maxAction)
	velocity += refMul(force, power) - refMul(0.0025, pyCos(refMul(3, position)))
	if velocity > maxSpeed {
		velocity = maxSpeed
	}
	if velocity < -maxSpeed {
		velocity = -maxSpeed
	}
	position += velocity
	if position > maxPosition {
		position = maxPosition
	}
	if position < minPosition {
		position = minPosition
	}
	if position == minPosition && velocity < 0 {
		velocity = 0
	}
	terminated := position >= goalPosition && velocity >= goalVelocity
	reward := 0.0
	if terminated {
		reward = 100.0
	}
	reward -= refMul(libmPow(a, 2), 0.1) // math.pow(action[0], 2) * 0.1
	// self.state = np.array([position, velocity], dtype=np.float32); returned as is
	r.s32 = [2]float32{float32(position), float32(velocity)}
	r.f32 = true
	return []float32{r.s32[0], r.s32[1]}, reward, terminated
}

// --- MountainCar-v0 -----------------------------------------------------------

type refMountainCar struct {
	s [2]float64 // a float64 array after reset, a tuple of float64 scalars after a step
}

func (r *refMountainCar) reset(g *Generator) []float32 {
	r.s = [2]float64{g.Uniform(-0.6, -0.4), 0}
	return []float32{float32(r.s[0]), float32(r.s[1])}
}

func (r *refMountainCar) state() []float64 { return r.s[:] }

func (r *refMountainCar) step(a float64) ([]float32, float64, bool) {
	const (
		minPosition, maxPosition = -1.2, 0.6
		maxSpeed                 = 0.07
		goalPosition             = 0.5
		goalVelocity             = 0
		force                    = 0.001
		gravity                  = 0.0025
	)
	position, velocity := r.s[0], r.s[1]
	// velocity += (action - 1) * self.force + math.cos(3 * position) * (-self.gravity)
	velocity += refMul(float64(int(a)-1), force) + refMul(pyCos(refMul(3, position)), -gravity)
	velocity = refNpClip(velocity, -maxSpeed, maxSpeed)
	position += velocity
	position = refNpClip(position, minPosition, maxPosition)
	if position == minPosition && velocity < 0 {
		velocity = 0
	}
	terminated := position >= goalPosition && velocity >= goalVelocity
	r.s = [2]float64{position, velocity}
	return []float32{float32(position), float32(velocity)}, -1.0, terminated
}

// --- Pendulum-v1 ----------------------------------------------------------------

type refPendulum struct{ s [2]float64 }

func (r *refPendulum) reset(g *Generator) []float32 {
	// high = np.array([np.pi, 1.0]); uniform(low=-high, high=high)
	r.s[0] = g.Uniform(-math.Pi, math.Pi)
	r.s[1] = g.Uniform(-1.0, 1.0)
	return r.obs()
}

func (r *refPendulum) obs() []float32 {
	return []float32{float32(cos(r.s[0])), float32(sin(r.s[0])), float32(r.s[1])}
}

func (r *refPendulum) state() []float64 { return r.s[:] }

// step takes a = float64(float32 action).
func (r *refPendulum) step(a float64) ([]float32, float64, bool) {
	const (
		g, m, l, dt = 10.0, 1.0, 1.0, 0.05
		maxSpeed    = 8.0
		maxTorque   = 2.0
	)
	th, thdot := r.s[0], r.s[1]
	// u = np.clip(u, -2, 2)[0] on the float32 array: a float32 scalar
	u := float64(float32(refNpClip(a, -maxTorque, maxTorque)))
	an := refRemainder(th+math.Pi, refMul(2, math.Pi)) - math.Pi
	costs := libmPow(an, 2) + refMul(0.1, libmPow(thdot, 2)) + refMul(0.001, libmPow(u, 2))
	gterm := refMul(3, g) / refMul(2, l)
	uterm := 3.0 / refMul(m, libmPow(l, 2))
	newthdot := thdot + refMul(refMul(gterm, sin(th))+refMul(uterm, u), dt)
	newthdot = refNpClip(newthdot, -maxSpeed, maxSpeed)
	newth := th + refMul(newthdot, dt)
	r.s = [2]float64{newth, newthdot}
	return r.obs(), -costs, false
}

// --- Acrobot-v1 ----------------------------------------------------------------

type refAcrobot struct {
	// self.state: float32 after reset (uniform(...).astype(np.float32)), the
	// float64 rk4 output after a step.
	s32 [4]float32
	s64 [4]float64
	f32 bool
}

func (r *refAcrobot) reset(g *Generator) []float32 {
	for i := range r.s32 {
		r.s32[i] = float32(g.Uniform(-0.1, 0.1))
	}
	r.f32 = true
	return r.obs()
}

func (r *refAcrobot) state() []float64 {
	if r.f32 {
		return []float64{float64(r.s32[0]), float64(r.s32[1]), float64(r.s32[2]), float64(r.s32[3])}
	}
	return r.s64[:]
}

// obs is _get_ob: numpy's cos/sin of a float32 scalar are float32 ufunc loops.
func (r *refAcrobot) obs() []float32 {
	if r.f32 {
		s := r.s32
		return []float32{cos32(s[0]), sin32(s[0]), cos32(s[1]), sin32(s[1]), s[2], s[3]}
	}
	s := r.s64
	return []float32{float32(cos(s[0])), float32(sin(s[0])), float32(cos(s[1])), float32(sin(s[1])),
		float32(s[2]), float32(s[3])}
}

// refAcrobotDsdt is AcrobotEnv._dsdt (book) on the augmented float64 state.
func refAcrobotDsdt(sa []float64) []float64 {
	const (
		m1, m2, l1, lc1, lc2, I1, I2, g = 1.0, 1.0, 1.0, 0.5, 0.5, 1.0, 1.0, 9.8
	)
	a := sa[4]
	theta1, theta2, dtheta1, dtheta2 := sa[0], sa[1], sa[2], sa[3]
	pow2 := func(x float64) float64 { return libmPow(x, 2) }
	d1 := refMul(m1, pow2(lc1)) + refMul(m2, pow2(l1)+pow2(lc2)+refMul(refMul(refMul(2, l1), lc2), cos(theta2))) + I1 + I2
	d2 := refMul(m2, pow2(lc2)+refMul(refMul(l1, lc2), cos(theta2))) + I2
	phi2 := refMul(refMul(refMul(m2, lc2), g), cos(theta1+theta2-math.Pi/2.0))
	// phi1 = -m2 * l1 * lc2 * dtheta2**2 * sin(theta2)
	//        - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * sin(theta2)
	//        + (m1 * lc1 + m2 * l1) * g * cos(theta1 - pi / 2) + phi2
	t1 := refMul(refMul(refMul(refMul(-m2, l1), lc2), pow2(dtheta2)), sin(theta2))
	t2 := refMul(refMul(refMul(refMul(refMul(refMul(2, m2), l1), lc2), dtheta2), dtheta1), sin(theta2))
	t3 := refMul(refMul(refMul(m1, lc1)+refMul(m2, l1), g), cos(theta1-math.Pi/2))
	phi1 := t1 - t2 + t3 + phi2
	ddtheta2 := (a + refMul(d2/d1, phi1) - refMul(refMul(refMul(refMul(m2, l1), lc2), pow2(dtheta1)), sin(theta2)) - phi2) /
		(refMul(m2, pow2(lc2)) + I2 - pow2(d2)/d1)
	ddtheta1 := -(refMul(d2, ddtheta2) + phi1) / d1
	return []float64{dtheta1, dtheta2, ddtheta1, ddtheta2, 0.0}
}

// refRK4 is acrobot.rk4(derivs, y0, t) for a general list of times,
// returning yout[-1][:4]. Array expressions are elementwise float64.
func refRK4(derivs func([]float64) []float64, y0 []float64, t []float64) []float64 {
	n := len(y0)
	yout := make([][]float64, len(t))
	yout[0] = append([]float64(nil), y0...)
	axpy := func(y []float64, h float64, k []float64) []float64 { // y + h * k
		out := make([]float64, n)
		for j := range out {
			out[j] = y[j] + refMul(h, k[j])
		}
		return out
	}
	for i := 0; i < len(t)-1; i++ {
		this := t[i]
		dt := t[i+1] - this
		dt2 := dt / 2.0
		y := yout[i]
		k1 := derivs(y)
		k2 := derivs(axpy(y, dt2, k1))
		k3 := derivs(axpy(y, dt2, k2))
		k4 := derivs(axpy(y, dt, k3))
		// y0 + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4): the sum is elementwise,
		// left to right.
		sum := make([]float64, n)
		for j := range sum {
			sum[j] = k1[j] + refMul(2, k2[j]) + refMul(2, k3[j]) + k4[j]
		}
		yout[i+1] = axpy(y, dt/6.0, sum)
	}
	return yout[len(t)-1][:4]
}

func (r *refAcrobot) step(action float64) ([]float32, float64, bool) {
	torque := []float64{-1.0, 0.0, +1}[int(action)]
	// s_augmented = np.append(s, torque): float32 (after reset) or float64
	// state and a Python float concatenate to float64.
	sa := append(r.state(), torque)
	ns := refRK4(refAcrobotDsdt, sa, []float64{0, 0.2})
	wrap := func(x, m, M float64) float64 {
		diff := M - m
		for x > M {
			x = x - diff
		}
		for x < m {
			x = x + diff
		}
		return x
	}
	ns[0] = wrap(ns[0], -math.Pi, math.Pi)
	ns[1] = wrap(ns[1], -math.Pi, math.Pi)
	ns[2] = refPyMinMax(ns[2], -4*math.Pi, 4*math.Pi)
	ns[3] = refPyMinMax(ns[3], -9*math.Pi, 9*math.Pi)
	copy(r.s64[:], ns)
	r.f32 = false
	s := r.s64
	terminated := -cos(s[0])-cos(s[1]+s[0]) > 1.0
	reward := -1.0
	if terminated {
		reward = 0.0
	}
	return r.obs(), reward, terminated
}

// --- the runner ------------------------------------------------------------------

// refPolicy picks the next action from the last observation: random with
// probability eps (or always, when ctrl is nil), else the controller.
type refPolicy struct {
	rng  *rand.Rand
	eps  float64
	ctrl func(obs []float32) float64
	draw func(r *rand.Rand) float64 // a random action
}

func (p refPolicy) act(obs []float32) float64 {
	if p.ctrl == nil || p.rng.Float64() < p.eps {
		return p.draw(p.rng)
	}
	return p.ctrl(obs)
}

type refCase struct {
	id    string
	limit int
	ref   func() refEnv
	state func(Env) []float64 // the implementation's internal state
	draw  func(r *rand.Rand) float64
	ctrl  func(obs []float32) float64
	// pastTermination: in the third episode of each seed (random actions),
	// keep stepping after termination until truncation (Gymnasium allows it;
	// CartPole then pays 0).
	pastTermination bool
}

func discreteDraw(n int) func(r *rand.Rand) float64 {
	return func(r *rand.Rand) float64 { return float64(r.IntN(n)) }
}

// boxDraw draws float32 actions in [-hi, hi] (beyond the space, to exercise
// the clipping), as Gymnasium receives a float32 array.
func boxDraw(hi float64) func(r *rand.Rand) float64 {
	return func(r *rand.Rand) float64 { return float64(float32((2*r.Float64() - 1) * hi)) }
}

var refCases = []refCase{
	{
		id: "CartPole-v1", limit: 500,
		ref:   func() refEnv { return &refCartPole{} },
		state: func(e Env) []float64 { return e.(*cartPole).state[:] },
		draw:  discreteDraw(2),
		ctrl: func(o []float32) float64 { // push the cart under the pole
			if o[2]+0.5*o[3]+0.01*o[0]+0.1*o[1] > 0 {
				return 1
			}
			return 0
		},
		pastTermination: true,
	},
	{
		id: "MountainCar-v0", limit: 200,
		ref:   func() refEnv { return &refMountainCar{} },
		state: func(e Env) []float64 { return e.(*mountainCar).state[:] },
		draw:  discreteDraw(3),
		ctrl: func(o []float32) float64 { // push along the velocity
			if o[1] < 0 {
				return 0
			}
			return 2
		},
	},
	{
		id: "MountainCarContinuous-v0", limit: 999,
		ref:   func() refEnv { return &refMountainCarContinuous{} },
		state: func(e Env) []float64 { return e.(*mountainCarContinuous).state[:] },
		draw:  boxDraw(1.5),
		ctrl: func(o []float32) float64 {
			if o[1] < 0 {
				return -1
			}
			return 1
		},
	},
	{
		id: "Pendulum-v1", limit: 200,
		ref:   func() refEnv { return &refPendulum{} },
		state: func(e Env) []float64 { return e.(*pendulum).state[:] },
		draw:  boxDraw(3),
		ctrl: func(o []float32) float64 { // pump energy
			return float64(float32(2 * math.Copysign(1, float64(o[2]))))
		},
	},
	{
		id: "Acrobot-v1", limit: 500,
		ref:   func() refEnv { return &refAcrobot{} },
		state: func(e Env) []float64 { return e.(*acrobot).state[:] },
		draw:  discreteDraw(3),
		ctrl: func(o []float32) float64 { // pump energy: torque along the second joint's velocity
			if o[5] > 0 {
				return 2
			}
			return 0
		},
	},
}

// TestReferenceEveryStep compares every step of every environment with the
// reference transcription: 5 seeds x 4 episodes, alternating purely random
// actions and a controller with 20% random actions.
func TestReferenceEveryStep(t *testing.T) {
	seeds := []int64{0, 1, 7, 42, 2024}
	for _, tc := range refCases {
		t.Run(tc.id, func(t *testing.T) {
			var steps, terminations, truncations, pastTerm int
			for _, seed := range seeds {
				e := mustMake(t, tc.id)
				ref := tc.ref()
				var g *Generator
				pol := refPolicy{rng: rand.New(rand.NewPCG(uint64(seed), 23)), eps: 0.2, ctrl: tc.ctrl, draw: tc.draw}
				for ep := 0; ep < 4; ep++ {
					var got []float32
					if ep == 0 {
						got = e.Reset(seed)
						g = NewGenerator(uint64(seed))
					} else {
						got = e.Reset(-1) // Gymnasium's reset(): the generator continues
					}
					want := ref.reset(g)
					where := fmt.Sprintf("seed %d episode %d reset", seed, ep)
					refCompare(t, where, got, want, tc.state(e), ref.state())
					p := pol
					if ep%2 == 0 {
						p.ctrl = nil // purely random
					}
					keepGoing := tc.pastTermination && ep == 2
					terminatedBefore := false
					for n := 1; ; n++ {
						a := p.act(got)
						obs, r, te, tr := e.Step([]float64{a})
						wobs, wr, wte := ref.step(a)
						wtr := n >= tc.limit
						steps++
						where := fmt.Sprintf("seed %d episode %d step %d (action %v)", seed, ep, n, a)
						refCompare(t, where, obs, wobs, tc.state(e), ref.state())
						if r != wr || te != wte || tr != wtr {
							t.Fatalf("%s: reward %v terminated %v truncated %v, reference %v %v %v", where, r, te, tr, wr, wte, wtr)
						}
						if terminatedBefore {
							pastTerm++
						}
						got = obs
						if te && !terminatedBefore {
							terminations++
						}
						if tr {
							truncations++
							break
						}
						if te && !keepGoing {
							break
						}
						terminatedBefore = terminatedBefore || te
					}
				}
			}
			t.Logf("%d steps, %d terminations, %d truncations, %d steps after termination", steps, terminations, truncations, pastTerm)
			// The runs must cover both ends of an episode.
			if truncations == 0 {
				t.Errorf("no episode ran into the TimeLimit")
			}
			if terminations == 0 && tc.id != "Pendulum-v1" {
				t.Errorf("no episode terminated")
			}
			if tc.pastTermination && pastTerm == 0 {
				t.Errorf("no steps after termination")
			}
		})
	}
}

func refCompare(t *testing.T, where string, obs, wobs []float32, state, wstate []float64) {
	t.Helper()
	if len(obs) != len(wobs) || len(state) != len(wstate) {
		t.Fatalf("%s: obs %v state %v, reference %v %v", where, obs, state, wobs, wstate)
	}
	for i := range obs {
		if math.Float32bits(obs[i]) != math.Float32bits(wobs[i]) {
			t.Fatalf("%s: obs[%d] = %v, reference %v (obs %v, reference %v)", where, i, obs[i], wobs[i], obs, wobs)
		}
	}
	for i := range state {
		if math.Float64bits(state[i]) != math.Float64bits(wstate[i]) {
			t.Fatalf("%s: state[%d] = %v, reference %v (%d ulp)", where, i, state[i], wstate[i], ulps(state[i], wstate[i]))
		}
	}
}
