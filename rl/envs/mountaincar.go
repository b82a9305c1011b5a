package envs

// MountainCarContinuous-v0: gymnasium/envs/classic_control/continuous_mountain_car.py,
// Continuous_MountainCarEnv with goal_velocity=0, TimeLimit 999.
// MountainCar-v0: gymnasium/envs/classic_control/mountain_car.py,
// MountainCarEnv with goal_velocity=0, TimeLimit 200.

var (
	mcMinAction    = -1.0
	mcMaxAction    = 1.0
	mcMinPosition  = -1.2
	mcMaxPosition  = 0.6
	mcMaxSpeed     = 0.07
	mcGoalPosition = 0.45
	mcGoalVelocity = 0.0
	mcPower        = 0.0015

	// MountainCar-v0 (discrete) differs in its goal, force and gravity.
	mdGoalPosition = 0.5
	mdForce        = 0.001
	mdGravity      = 0.0025
)

type mountainCarContinuous struct {
	core
	// state is position, velocity. Gymnasium's reset stores the float64
	// uniform draw in a float64 array (np.array([uniform, 0])); each step
	// stores np.array([position, velocity], dtype=np.float32). So the state is
	// float64 until the first step and float32 values after it; the values
	// are kept here exactly, as float64.
	state [2]float64
}

func newMountainCarContinuous() *mountainCarContinuous {
	return &mountainCarContinuous{core: newCore("MountainCarContinuous-v0", 999)}
}

func (e *mountainCarContinuous) ObservationSize() int { return 2 }
func (e *mountainCarContinuous) ActionSpace() Space {
	return Space{Low: []float64{mcMinAction}, High: []float64{mcMaxAction}}
}

func (e *mountainCarContinuous) Clone() Env {
	c := *e
	c.core = e.core.clone()
	return &c
}

func (e *mountainCarContinuous) obs() []float32 {
	return []float32{float32(e.state[0]), float32(e.state[1])}
}

// Reset: self.state = np.array([self.np_random.uniform(low=-0.6, high=-0.4), 0])
// (float64), and returns np.array(self.state, dtype=np.float32).
func (e *mountainCarContinuous) Reset(seed int64) []float32 {
	e.reset(seed)
	e.state = [2]float64{e.rng.Uniform(-0.6, -0.4), 0}
	return e.obs()
}

// Step: the action is used at float64 precision; given a float32 action,
// Gymnasium computes exactly as this does given float64(float32(a)). Every
// operation is float64 (numpy 1.24 widens the float32 state and action
// scalars in expressions with Python floats).
func (e *mountainCarContinuous) Step(action []float64) ([]float32, float64, bool, bool) {
	e.box(action, 1)
	position := e.state[0]
	velocity := e.state[1]
	force := pyMin(pyMax(action[0], mcMinAction), mcMaxAction)
	// velocity += force * self.power - 0.0025 * math.cos(3 * position)
	velocity += float64(force*mcPower) - float64(0.0025*pyCos(3*position))
	if velocity > mcMaxSpeed {
		velocity = mcMaxSpeed
	}
	if velocity < -mcMaxSpeed {
		velocity = -mcMaxSpeed
	}
	position += velocity
	if position > mcMaxPosition {
		position = mcMaxPosition
	}
	if position < mcMinPosition {
		position = mcMinPosition
	}
	if position == mcMinPosition && velocity < 0 {
		velocity = 0
	}
	terminated := position >= mcGoalPosition && velocity >= mcGoalVelocity
	reward := 0.0
	if terminated {
		reward = 100.0
	}
	// reward -= math.pow(action[0], 2) * 0.1
	reward -= float64(pySquare(action[0]) * 0.1)
	// self.state = np.array([position, velocity], dtype=np.float32)
	e.state = [2]float64{float64(float32(position)), float64(float32(velocity))}
	return e.obs(), reward, terminated, e.tick()
}

// mountainCar is MountainCar-v0: Discrete(3) (push left, none, right),
// reward -1 per step. Its state stays float64 throughout (a tuple of numpy
// float64 scalars after a step); only observations are float32.
type mountainCar struct {
	core
	state [2]float64 // position, velocity
}

func newMountainCar() *mountainCar {
	return &mountainCar{core: newCore("MountainCar-v0", 200)}
}

func (e *mountainCar) ObservationSize() int { return 2 }
func (e *mountainCar) ActionSpace() Space   { return Space{Discrete: 3} }

func (e *mountainCar) Clone() Env {
	c := *e
	c.core = e.core.clone()
	return &c
}

func (e *mountainCar) obs() []float32 {
	return []float32{float32(e.state[0]), float32(e.state[1])}
}

// Reset: self.state = np.array([self.np_random.uniform(low=-0.6, high=-0.4), 0]).
func (e *mountainCar) Reset(seed int64) []float32 {
	e.reset(seed)
	e.state = [2]float64{e.rng.Uniform(-0.6, -0.4), 0}
	return e.obs()
}

func (e *mountainCar) Step(action []float64) ([]float32, float64, bool, bool) {
	a := e.discrete(action, 3)
	position, velocity := e.state[0], e.state[1]
	// velocity += (action - 1) * self.force + math.cos(3 * position) * (-self.gravity)
	velocity += float64(float64(a-1)*mdForce) + float64(pyCos(3*position)*(-mdGravity))
	velocity = npClip(velocity, -mcMaxSpeed, mcMaxSpeed)
	position += velocity
	position = npClip(position, mcMinPosition, mcMaxPosition)
	if position == mcMinPosition && velocity < 0 {
		velocity = 0
	}
	terminated := position >= mdGoalPosition && velocity >= mcGoalVelocity
	e.state = [2]float64{position, velocity}
	return e.obs(), -1, terminated, e.tick()
}
