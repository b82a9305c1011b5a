package envs

import "math"

// Pendulum-v1: gymnasium/envs/classic_control/pendulum.py, PendulumEnv with
// g=10.0, TimeLimit 200.

var (
	pdMaxSpeed  = 8.0
	pdMaxTorque = 2.0
	pdDt        = 0.05
	pdG         = 10.0
	pdM         = 1.0
	pdL         = 1.0
	pdPi        = math.Pi
	pdTwoPi     = 2 * pdPi
	// 3 * g / (2 * l) and 3.0 / (m * l**2), rounded per operation as Python does.
	pdGravTerm   = float64(3*pdG) / float64(2*pdL)
	pdTorqueTerm = 3.0 / float64(pdM*float64(pdL*pdL))
)

type pendulum struct {
	core
	state [2]float64 // th, thdot
}

func newPendulum() *pendulum { return &pendulum{core: newCore("Pendulum-v1", 200)} }

func (e *pendulum) ObservationSize() int { return 3 }
func (e *pendulum) ActionSpace() Space {
	return Space{Low: []float64{-pdMaxTorque}, High: []float64{pdMaxTorque}}
}

func (e *pendulum) Clone() Env {
	c := *e
	c.core = e.core.clone()
	return &c
}

// obs is _get_obs: [cos(theta), sin(theta), thetadot] as float32.
func (e *pendulum) obs() []float32 {
	return []float32{float32(cos(e.state[0])), float32(sin(e.state[0])), float32(e.state[1])}
}

// Reset: high = [pi, 1]; self.state = self.np_random.uniform(low=-high, high=high).
func (e *pendulum) Reset(seed int64) []float32 {
	e.reset(seed)
	e.state[0] = e.rng.Uniform(-pdPi, pdPi)
	e.state[1] = e.rng.Uniform(-1.0, 1.0)
	return e.obs()
}

// angleNormalize is ((x + np.pi) % (2 * np.pi)) - np.pi with Python's
// floored modulo.
func angleNormalize(x float64) float64 {
	return pyMod(x+pdPi, pdTwoPi) - pdPi
}

// pyMod is Python's float % (and numpy's np.remainder): the result takes the
// divisor's sign.
func pyMod(a, b float64) float64 {
	m := math.Mod(a, b)
	if m != 0 {
		if (b < 0) != (m < 0) {
			m += b
		}
	} else {
		m = math.Copysign(0, b)
	}
	return m
}

// Step: the action is used at float64 precision. Gymnasium given a float32
// action array computes exactly as this does given float64(float32(u)) (numpy
// 1.24 promotes the float32 scalar to float64 in every expression that uses it).
func (e *pendulum) Step(action []float64) ([]float32, float64, bool, bool) {
	e.box(action, 1)
	th, thdot := e.state[0], e.state[1]
	u := npClip(action[0], -pdMaxTorque, pdMaxTorque)
	an := angleNormalize(th)
	// costs = angle_normalize(th) ** 2 + 0.1 * thdot**2 + 0.001 * (u**2)
	costs := pySquare(an) + float64(0.1*pySquare(thdot)) + float64(0.001*pySquare(u))
	// newthdot = thdot + (3 * g / (2 * l) * np.sin(th) + 3.0 / (m * l**2) * u) * dt
	newthdot := thdot + float64((float64(pdGravTerm*sin(th))+float64(pdTorqueTerm*u))*pdDt)
	newthdot = npClip(newthdot, -pdMaxSpeed, pdMaxSpeed)
	newth := th + float64(newthdot*pdDt)
	e.state = [2]float64{newth, newthdot}
	return e.obs(), -costs, false, e.tick()
}
