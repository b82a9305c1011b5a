package envs

import "math"

// CartPole-v1: gymnasium/envs/classic_control/cartpole.py, CartPoleEnv with
// its defaults (euler integrator, sutton_barto_reward=False), TimeLimit 500.

// Constants are float64 variables, not Go constants, so that derived values
// are computed with float64 rounding at every operation as in Python.
var (
	cpGravity        = 9.8
	cpMassCart       = 1.0
	cpMassPole       = 0.1
	cpTotalMass      = cpMassPole + cpMassCart
	cpLength         = 0.5 // half the pole's length
	cpPoleMassLength = cpMassPole * cpLength
	cpForceMag       = 10.0
	cpTau            = 0.02
	cpThetaThreshold = float64(12*2*cpPi) / 360 // 12 * 2 * math.pi / 360, rounded per operation
	cpPi             = math.Pi
	cpXThreshold     = 2.4
	cpFourThirds     = 4.0 / 3.0
)

type cartPole struct {
	core
	state [4]float64 // x, x_dot, theta, theta_dot (float64, as Gymnasium)
	// stepsBeyondTerminated is Gymnasium's steps_beyond_terminated; -1 is None.
	stepsBeyondTerminated int
}

func newCartPole() *cartPole {
	return &cartPole{core: newCore("CartPole-v1", 500), stepsBeyondTerminated: -1}
}

func (e *cartPole) ObservationSize() int { return 4 }
func (e *cartPole) ActionSpace() Space   { return Space{Discrete: 2} }

func (e *cartPole) Clone() Env {
	c := *e
	c.core = e.core.clone()
	return &c
}

func (e *cartPole) obs() []float32 {
	return []float32{float32(e.state[0]), float32(e.state[1]), float32(e.state[2]), float32(e.state[3])}
}

// Reset: self.state = self.np_random.uniform(low=-0.05, high=0.05, size=(4,)).
func (e *cartPole) Reset(seed int64) []float32 {
	e.reset(seed)
	for i := range e.state {
		e.state[i] = e.rng.Uniform(-0.05, 0.05)
	}
	e.stepsBeyondTerminated = -1
	return e.obs()
}

func (e *cartPole) Step(action []float64) ([]float32, float64, bool, bool) {
	a := e.discrete(action, 2)
	x, xDot, theta, thetaDot := e.state[0], e.state[1], e.state[2], e.state[3]
	force := cpForceMag
	if a != 1 {
		force = -cpForceMag
	}
	costheta := cos(theta)
	sintheta := sin(theta)
	// Explicit float64(...) conversions forbid fused multiply-adds (Go spec),
	// so every operation rounds as numpy's does.
	// temp = (force + polemass_length * np.square(theta_dot) * sintheta) / total_mass
	temp := (force + float64(float64(cpPoleMassLength*float64(thetaDot*thetaDot))*sintheta)) / cpTotalMass
	// thetaacc = (gravity * sintheta - costheta * temp) /
	//     (length * (4.0 / 3.0 - masspole * np.square(costheta) / total_mass))
	thetaAcc := (float64(cpGravity*sintheta) - float64(costheta*temp)) /
		float64(cpLength*(cpFourThirds-float64(cpMassPole*float64(costheta*costheta))/cpTotalMass))
	// xacc = temp - polemass_length * thetaacc * costheta / total_mass
	xAcc := temp - float64(float64(cpPoleMassLength*thetaAcc)*costheta)/cpTotalMass
	// euler
	x = x + float64(cpTau*xDot)
	xDot = xDot + float64(cpTau*xAcc)
	theta = theta + float64(cpTau*thetaDot)
	thetaDot = thetaDot + float64(cpTau*thetaAcc)
	e.state = [4]float64{x, xDot, theta, thetaDot}

	terminated := x < -cpXThreshold || x > cpXThreshold ||
		theta < -cpThetaThreshold || theta > cpThetaThreshold
	var reward float64
	switch {
	case !terminated:
		reward = 1
	case e.stepsBeyondTerminated < 0:
		e.stepsBeyondTerminated = 0
		reward = 1
	default:
		// Gymnasium warns once here ("You are calling 'step()' even though this
		// environment has already returned terminated = True").
		e.stepsBeyondTerminated++
		reward = 0
	}
	return e.obs(), reward, terminated, e.tick()
}
