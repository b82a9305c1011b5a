package envs

// MountainCarContinuous-v0: gymnasium/envs/classic_control/continuous_mountain_car.py,
// Continuous_MountainCarEnv with goal_velocity=0, TimeLimit 999.

var (
	mcMinAction    = -1.0
	mcMaxAction    = 1.0
	mcMinPosition  = -1.2
	mcMaxPosition  = 0.6
	mcMaxSpeed     = 0.07
	mcGoalPosition = 0.45
	mcGoalVelocity = 0.0
	mcPower        = 0.0015
)

type mountainCarContinuous struct {
	core
	state [2]float32 // position, velocity: Gymnasium keeps them as float32
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

func (e *mountainCarContinuous) obs() []float32 { return []float32{e.state[0], e.state[1]} }

// Reset: self.state = np.array([self.np_random.uniform(low=-0.6, high=-0.4), 0], dtype=np.float32).
func (e *mountainCarContinuous) Reset(seed int64) []float32 {
	e.reset(seed)
	e.state = [2]float32{float32(e.rng.Uniform(-0.6, -0.4)), 0}
	return e.obs()
}

// Step: the action is used at float64 precision; given a float32 action,
// Gymnasium computes exactly as this does given float64(float32(a)).
func (e *mountainCarContinuous) Step(action []float64) ([]float32, float64, bool, bool) {
	e.box(action, 1)
	position := float64(e.state[0])
	velocity := float64(e.state[1])
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
	e.state = [2]float32{float32(position), float32(velocity)}
	return e.obs(), reward, terminated, e.tick()
}
