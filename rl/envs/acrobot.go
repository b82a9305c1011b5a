package envs

import "math"

// Acrobot-v1: gymnasium/envs/classic_control/acrobot.py, AcrobotEnv with
// book_or_nips="book", torque_noise_max=0, dt=0.2, rk4 integration,
// TimeLimit 500.

var (
	acDt      = 0.2
	acL1      = 1.0 // LINK_LENGTH_1
	acM1      = 1.0 // LINK_MASS_1
	acM2      = 1.0 // LINK_MASS_2
	acLc1     = 0.5 // LINK_COM_POS_1
	acLc2     = 0.5 // LINK_COM_POS_2
	acI1      = 1.0 // LINK_MOI
	acI2      = 1.0 // LINK_MOI
	acG       = 9.8
	acPi      = math.Pi
	acMaxVel1 = 4 * acPi
	acMaxVel2 = 9 * acPi
	acTorque  = [3]float64{-1.0, 0.0, +1}
)

type acrobot struct {
	core
	// state is theta1, theta2, dtheta1, dtheta2. After Reset Gymnasium holds it
	// as float32 (uniform(...).astype(np.float32)); the values stored here are
	// then exactly those float32 values. After a step it is float64 (rk4's
	// output); f32 records which, because the first observation is computed
	// with numpy's float32 cos/sin.
	state [4]float64
	f32   bool
}

func newAcrobot() *acrobot { return &acrobot{core: newCore("Acrobot-v1", 500)} }

func (e *acrobot) ObservationSize() int { return 6 }
func (e *acrobot) ActionSpace() Space   { return Space{Discrete: 3} }

func (e *acrobot) Clone() Env {
	c := *e
	c.core = e.core.clone()
	return &c
}

// obs is _get_ob: [cos(s0), sin(s0), cos(s1), sin(s1), s2, s3] as float32.
func (e *acrobot) obs() []float32 {
	s := &e.state
	if e.f32 {
		return []float32{cos32(float32(s[0])), sin32(float32(s[0])), cos32(float32(s[1])), sin32(float32(s[1])),
			float32(s[2]), float32(s[3])}
	}
	return []float32{float32(cos(s[0])), float32(sin(s[0])), float32(cos(s[1])), float32(sin(s[1])),
		float32(s[2]), float32(s[3])}
}

// Reset: self.state = self.np_random.uniform(low=-0.1, high=0.1, size=(4,)).astype(np.float32).
func (e *acrobot) Reset(seed int64) []float32 {
	e.reset(seed)
	for i := range e.state {
		e.state[i] = float64(float32(e.rng.Uniform(-0.1, 0.1)))
	}
	e.f32 = true
	return e.obs()
}

func (e *acrobot) Step(action []float64) ([]float32, float64, bool, bool) {
	a := e.discrete(action, 3)
	torque := acTorque[a]
	// s_augmented = np.append(s, torque); ns = rk4(self._dsdt, s_augmented, [0, self.dt])
	ns := rk4(e.state, torque)
	ns[0] = wrap(ns[0], -acPi, acPi)
	ns[1] = wrap(ns[1], -acPi, acPi)
	ns[2] = bound(ns[2], -acMaxVel1, acMaxVel1)
	ns[3] = bound(ns[3], -acMaxVel2, acMaxVel2)
	e.state = ns
	e.f32 = false
	terminated := e.terminal()
	reward := -1.0
	if terminated {
		reward = 0
	}
	return e.obs(), reward, terminated, e.tick()
}

// terminal is _terminal: -cos(s[0]) - cos(s[1] + s[0]) > 1.0.
func (e *acrobot) terminal() bool {
	s := &e.state
	return -cos(s[0])-cos(s[1]+s[0]) > 1.0
}

// wrap is acrobot.wrap: shift x by M-m until it is in [m, M].
func wrap(x, m, M float64) float64 {
	diff := M - m
	for x > M {
		x = x - diff
	}
	for x < m {
		x = x + diff
	}
	return x
}

// bound is acrobot.bound: min(max(x, m), M) with Python's builtins.
func bound(x, m, M float64) float64 { return pyMin(pyMax(x, m), M) }

// Constant subexpressions of _dsdt, evaluated in Python's order (x**2 is
// the C library's pow, pySquare).
var (
	acD1a    = acM1 * pySquare(acLc1)                           // m1 * lc1**2
	acD1b    = pySquare(acL1) + pySquare(acLc2)                 // l1**2 + lc2**2
	acD1c    = float64(2*acL1) * acLc2                          // 2 * l1 * lc2
	acD2a    = pySquare(acLc2)                                  // lc2**2
	acD2b    = acL1 * acLc2                                     // l1 * lc2
	acPhi2c  = float64(acM2*acLc2) * acG                        // m2 * lc2 * g
	acPhi1a  = float64(-acM2*acL1) * acLc2                      // -m2 * l1 * lc2
	acPhi1b  = float64(float64(2*acM2)*acL1) * acLc2            // 2 * m2 * l1 * lc2
	acPhi1c  = (float64(acM1*acLc1) + float64(acM2*acL1)) * acG // (m1 * lc1 + m2 * l1) * g
	acDd2a   = float64(acM2*acL1) * acLc2                       // m2 * l1 * lc2
	acDd2den = float64(acM2*pySquare(acLc2)) + acI2             // m2 * lc2**2 + I2
	acHalfPi = acPi / 2.0
)

// dsdt is AcrobotEnv._dsdt for the "book" dynamics, operation by operation:
// numpy float64 scalar arithmetic, numpy's sin/cos, pow for **2, and
// float64(...) conversions wherever Go could otherwise fuse a multiply-add.
//
//	d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * cos(theta2)) + I1 + I2
//	d2 = m2 * (lc2**2 + l1 * lc2 * cos(theta2)) + I2
//	phi2 = m2 * lc2 * g * cos(theta1 + theta2 - pi / 2.0)
//	phi1 = -m2 * l1 * lc2 * dtheta2**2 * sin(theta2)
//	       - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * sin(theta2)
//	       + (m1 * lc1 + m2 * l1) * g * cos(theta1 - pi / 2) + phi2
//	ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * dtheta1**2 * sin(theta2) - phi2)
//	           / (m2 * lc2**2 + I2 - d2**2 / d1)
//	ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
//	return dtheta1, dtheta2, ddtheta1, ddtheta2, 0.0
func dsdt(s [4]float64, a float64) [4]float64 {
	theta1, theta2, dtheta1, dtheta2 := s[0], s[1], s[2], s[3]
	c2 := cos(theta2)
	s2 := sin(theta2)
	d1 := acD1a + float64(acM2*(acD1b+float64(acD1c*c2))) + acI1 + acI2
	d2 := float64(acM2*(acD2a+float64(acD2b*c2))) + acI2
	phi2 := float64(acPhi2c * cos(theta1+theta2-acHalfPi))
	phi1 := float64(float64(acPhi1a*pySquare(dtheta2))*s2) -
		float64(float64(float64(acPhi1b*dtheta2)*dtheta1)*s2) +
		float64(acPhi1c*cos(theta1-acHalfPi)) + phi2
	ddtheta2 := (a + float64(float64(d2/d1)*phi1) -
		float64(float64(acDd2a*pySquare(dtheta1))*s2) - phi2) /
		(acDd2den - pySquare(d2)/d1)
	ddtheta1 := -(float64(d2*ddtheta2) + phi1) / d1
	return [4]float64{dtheta1, dtheta2, ddtheta1, ddtheta2}
}

// rk4 is acrobot.rk4(derivs, y0, [0, dt]) for one interval, returning
// yout[-1][:4] (the torque component has derivative 0 and is dropped).
func rk4(y0 [4]float64, a float64) [4]float64 {
	dt := acDt - 0 // t[i + 1] - this
	dt2 := dt / 2.0
	dt6 := dt / 6.0
	var y [4]float64
	k1 := dsdt(y0, a)
	for i := range y {
		y[i] = y0[i] + float64(dt2*k1[i])
	}
	k2 := dsdt(y, a)
	for i := range y {
		y[i] = y0[i] + float64(dt2*k2[i])
	}
	k3 := dsdt(y, a)
	for i := range y {
		y[i] = y0[i] + float64(dt*k3[i])
	}
	k4 := dsdt(y, a)
	var out [4]float64
	for i := range out {
		// y0 + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
		out[i] = y0[i] + float64(dt6*(k1[i]+float64(2*k2[i])+float64(2*k3[i])+k4[i]))
	}
	return out
}
