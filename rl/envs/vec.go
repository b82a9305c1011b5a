package envs

import "fmt"

// Vec steps n copies of an environment together, resetting each copy as soon
// as its episode ends (Gymnasium's SyncVectorEnv with AutoresetMode.SAME_STEP):
// after a step where copy i terminated or truncated, Obs()[i] (the obs
// returned by Step) is the first observation of its next episode, and
// FinalObs()[i] the last observation of the finished one; the reward and the
// terminated/truncated flags are those of the finished episode's last step.
// The automatic reset continues the copy's generator (reset() without a
// seed), as Gymnasium does.
//
// Reset(seed) with seed >= 0 seeds copy i with seed+i, like Gymnasium's
// vector reset(seed=seed); seed < 0 resets every copy without reseeding.
//
// Every slice returned is fresh and owned by the caller. A Vec is not safe for
// concurrent use.
type Vec struct {
	id    string
	envs  []Env
	final [][]float32
}

// NewVec makes n copies of the environment id (n >= 1).
func NewVec(id string, n int) (*Vec, error) {
	if n < 1 {
		return nil, fmt.Errorf("envs: NewVec(%q, %d): need at least one copy", id, n)
	}
	v := &Vec{id: id, envs: make([]Env, n)}
	for i := range v.envs {
		e, err := Make(id)
		if err != nil {
			return nil, err
		}
		v.envs[i] = e
	}
	return v, nil
}

// Reset resets every copy (copy i with seed+i when seed >= 0) and returns
// their first observations.
func (v *Vec) Reset(seed int64) [][]float32 {
	obs := make([][]float32, len(v.envs))
	for i, e := range v.envs {
		s := int64(-1)
		if seed >= 0 {
			s = seed + int64(i)
		}
		obs[i] = e.Reset(s)
	}
	v.final = nil
	return obs
}

// Step steps copy i with actions[i] and resets the copies whose episode
// ended (see Vec). It panics if len(actions) != Len(), or as Env.Step does.
func (v *Vec) Step(actions [][]float64) (obs [][]float32, rewards []float64, terminated, truncated []bool) {
	n := len(v.envs)
	if len(actions) != n {
		panic(fmt.Sprintf("envs: Vec(%s).Step: %d actions for %d copies", v.id, len(actions), n))
	}
	obs = make([][]float32, n)
	rewards = make([]float64, n)
	terminated = make([]bool, n)
	truncated = make([]bool, n)
	final := make([][]float32, n)
	for i, e := range v.envs {
		o, r, te, tr := e.Step(actions[i])
		if te || tr {
			final[i] = o
			o = e.Reset(-1)
		}
		obs[i], rewards[i], terminated[i], truncated[i] = o, r, te, tr
	}
	v.final = final
	return obs, rewards, terminated, truncated
}

// FinalObs returns, for each copy that terminated or truncated in the last
// Step, the last observation of its finished episode; entries of the other
// copies are nil (all entries are nil before the first Step and after Reset).
func (v *Vec) FinalObs() [][]float32 {
	if v.final == nil {
		return make([][]float32, len(v.envs))
	}
	return v.final
}

// Len is the number of copies.
func (v *Vec) Len() int { return len(v.envs) }

// Envs returns the copies (the Vec's own; stepping them directly bypasses
// the autoreset).
func (v *Vec) Envs() []Env { return v.envs }
