package envs

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestMakeSpaces(t *testing.T) {
	tests := []struct {
		id      string
		obsSize int
		space   Space
		dim     int
		solve   float64
	}{
		{"Acrobot-v1", 6, Space{Discrete: 3}, 1, -100},
		{"CartPole-v1", 4, Space{Discrete: 2}, 1, 475},
		{"MountainCar-v0", 2, Space{Discrete: 3}, 1, -110},
		{"MountainCarContinuous-v0", 2, Space{Low: []float64{-1}, High: []float64{1}}, 1, 90},
		{"Pendulum-v1", 3, Space{Low: []float64{-2}, High: []float64{2}}, 1, -200},
	}
	var ids []string
	for _, tc := range tests {
		ids = append(ids, tc.id)
		e, err := Make(tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() != tc.id || e.ObservationSize() != tc.obsSize || !reflect.DeepEqual(e.ActionSpace(), tc.space) || e.ActionSpace().Dim() != tc.dim {
			t.Errorf("%s: name %q, obs size %d, space %+v (dim %d)", tc.id, e.Name(), e.ObservationSize(), e.ActionSpace(), e.ActionSpace().Dim())
		}
		if got := len(e.Reset(0)); got != tc.obsSize {
			t.Errorf("%s: Reset returned %d values", tc.id, got)
		}
		if s, ok := SolveThreshold(tc.id); !ok || s != tc.solve {
			t.Errorf("SolveThreshold(%q) = %v, %v", tc.id, s, ok)
		}
	}
	if !reflect.DeepEqual(Names(), ids) {
		t.Errorf("Names() = %v, want %v", Names(), ids)
	}
	if _, ok := SolveThreshold("Nope-v0"); ok {
		t.Error("SolveThreshold of an unknown id")
	}
}

func TestMakeUnknown(t *testing.T) {
	_, err := Make("CartPole-v0")
	if err == nil {
		t.Fatal("Make(CartPole-v0) succeeded")
	}
	for _, id := range Names() {
		if !strings.Contains(err.Error(), id) {
			t.Errorf("error %q does not list %s", err, id)
		}
	}
}

func mustMake(t testing.TB, id string) Env {
	t.Helper()
	e, err := Make(id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// stepPanic runs e.Step(action) and returns the panic message ("" if none).
func stepPanic(e Env, action []float64) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	e.Step(action)
	return ""
}

func TestStepBadInput(t *testing.T) {
	tests := []struct {
		id     string
		action []float64
		want   string
	}{
		{"CartPole-v1", []float64{2}, "not in Discrete(2)"},
		{"CartPole-v1", []float64{-1}, "not in Discrete(2)"},
		{"CartPole-v1", []float64{0.5}, "not in Discrete(2)"},
		{"CartPole-v1", []float64{math.NaN()}, "not in Discrete(2)"},
		{"CartPole-v1", []float64{}, "want 1 value"},
		{"CartPole-v1", []float64{0, 1}, "want 1 value"},
		{"Acrobot-v1", []float64{3}, "not in Discrete(3)"},
		{"Acrobot-v1", nil, "want 1 value"},
		{"Pendulum-v1", []float64{1, 1}, "want 1 values"},
		{"Pendulum-v1", nil, "want 1 values"},
		{"MountainCarContinuous-v0", []float64{}, "want 1 values"},
		{"MountainCar-v0", []float64{3}, "not in Discrete(3)"},
		{"MountainCar-v0", []float64{1.5}, "not in Discrete(3)"},
	}
	for _, tc := range tests {
		e := mustMake(t, tc.id)
		e.Reset(0)
		msg := stepPanic(e, tc.action)
		if !strings.Contains(msg, tc.id) || !strings.Contains(msg, tc.want) || !strings.Contains(msg, fmt.Sprint(tc.action)) {
			t.Errorf("%s.Step(%v): panic %q, want one naming the env, the action and %q", tc.id, tc.action, msg, tc.want)
		}
	}
	for _, id := range Names() {
		msg := stepPanic(mustMake(t, id), make([]float64, 1))
		if !strings.Contains(msg, id) || !strings.Contains(msg, "before Reset") {
			t.Errorf("%s: Step before Reset: panic %q", id, msg)
		}
	}
	// Box actions are clipped, not rejected.
	for _, id := range []string{"Pendulum-v1", "MountainCarContinuous-v0"} {
		e := mustMake(t, id)
		e.Reset(0)
		if msg := stepPanic(e, []float64{1e9}); msg != "" {
			t.Errorf("%s: out-of-range Box action panicked: %s", id, msg)
		}
	}
}

func TestBoxActionsClipped(t *testing.T) {
	// Pendulum clips the torque to [-2, 2] (the reward's 0.001*u^2 too);
	// MountainCar clips the force to [-1, 1] but charges 0.1*a^2 for the raw a.
	p1, p2 := mustMake(t, "Pendulum-v1"), mustMake(t, "Pendulum-v1")
	p1.Reset(3)
	p2.Reset(3)
	o1, r1, _, _ := p1.Step([]float64{2})
	o2, r2, _, _ := p2.Step([]float64{50})
	if !reflect.DeepEqual(o1, o2) || r1 != r2 {
		t.Errorf("Pendulum: torque 50 differs from torque 2: %v %v / %v %v", o1, r1, o2, r2)
	}
	m1, m2 := mustMake(t, "MountainCarContinuous-v0"), mustMake(t, "MountainCarContinuous-v0")
	m1.Reset(3)
	m2.Reset(3)
	o1, r1, _, _ = m1.Step([]float64{1})
	o2, r2, _, _ = m2.Step([]float64{3})
	if !reflect.DeepEqual(o1, o2) || r1 != -0.1 || r2 != -0.9 {
		t.Errorf("MountainCar: %v %v / %v %v", o1, r1, o2, r2)
	}
}

// TestTimeLimit: truncation on the registered limit's step, and CartPole's
// steps_beyond_terminated (reward 1 on the terminating step, 0 after).
func TestTimeLimit(t *testing.T) {
	tests := []struct {
		id     string
		action float64
		limit  int
	}{
		{"Pendulum-v1", 0, 200},
		{"Acrobot-v1", 1, 500},               // no torque from a near-rest start
		{"MountainCarContinuous-v0", 0, 999}, // never reaches the goal
		{"MountainCar-v0", 1, 200},           // no push: never reaches the goal
		{"CartPole-v1", 1, 500},              // terminates after ~10 steps, keeps stepping
	}
	for _, tc := range tests {
		e := mustMake(t, tc.id)
		e.Reset(1)
		terminatedAt := 0
		for i := 1; i <= tc.limit; i++ {
			_, r, te, tr := e.Step([]float64{tc.action})
			if tr != (i == tc.limit) {
				t.Fatalf("%s: step %d truncated=%v", tc.id, i, tr)
			}
			if te && terminatedAt == 0 {
				terminatedAt = i
				if r != 1 {
					t.Errorf("%s: reward %v on the terminating step", tc.id, r)
				}
			} else if terminatedAt > 0 && r != 0 {
				t.Errorf("%s: reward %v at step %d after termination at %d", tc.id, r, i, terminatedAt)
			}
		}
		if (tc.id == "CartPole-v1") != (terminatedAt > 0) {
			t.Errorf("%s: terminated at %d", tc.id, terminatedAt)
		}
		// Reset restarts the count.
		e.Reset(-1)
		if _, _, _, tr := e.Step([]float64{tc.action}); tr {
			t.Errorf("%s: truncated right after Reset", tc.id)
		}
	}
}

func TestResetSeeding(t *testing.T) {
	for _, id := range Names() {
		e := mustMake(t, id)
		a := e.Reset(5)
		b := e.Reset(5)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: Reset(5) twice: %v, %v", id, a, b)
		}
		// Reset(-1) continues the same generator: two consecutive episodes
		// from Reset(5) equal a fresh env's.
		c := e.Reset(-1)
		f := mustMake(t, id)
		f.Reset(5)
		if d := f.Reset(-1); !reflect.DeepEqual(c, d) {
			t.Errorf("%s: Reset(-1) after Reset(5): %v vs %v", id, c, d)
		}
		if reflect.DeepEqual(c, a) {
			t.Errorf("%s: Reset(-1) repeated the seeded start", id)
		}
	}
	// CartPole: Reset(-1) after Reset(42) draws the next 4 uniforms.
	e := newCartPole()
	e.Reset(42)
	e.Reset(-1)
	g := NewGenerator(42)
	for i := 0; i < 4; i++ {
		g.Random()
	}
	for i, v := range e.state {
		if w := g.Uniform(-0.05, 0.05); v != w {
			t.Errorf("state[%d] = %v, want %v", i, v, w)
		}
	}
}

func TestUnseededReset(t *testing.T) {
	a, b := newCartPole(), newCartPole()
	oa, ob := a.Reset(-1), b.Reset(-1)
	for _, v := range oa {
		if v < -0.05 || v >= 0.05 {
			t.Fatalf("unseeded reset %v out of [-0.05, 0.05)", oa)
		}
	}
	if reflect.DeepEqual(oa, ob) {
		t.Errorf("two unseeded envs started identically: %v", oa)
	}
}

type stepOut struct {
	obs    []float32
	reward float64
	te, tr bool
}

func run(e Env, actions [][]float64) []stepOut {
	var out []stepOut
	for _, a := range actions {
		o, r, te, tr := e.Step(a)
		out = append(out, stepOut{o, r, te, tr})
		if te || tr {
			out = append(out, stepOut{obs: e.Reset(-1)})
		}
	}
	return out
}

func actionSeq(e Env, n, salt int) [][]float64 {
	s := e.ActionSpace()
	acts := make([][]float64, n)
	for i := range acts {
		if s.Discrete > 0 {
			acts[i] = []float64{float64((i*7 + salt) % s.Discrete)}
		} else {
			acts[i] = []float64{s.Low[0] + (s.High[0]-s.Low[0])*float64((i*5+salt)%11)/10}
		}
	}
	return acts
}

func TestClone(t *testing.T) {
	for _, id := range Names() {
		e := mustMake(t, id)
		if c := e.Clone(); c.Name() != id { // cloning a never-reset env works
			t.Fatalf("clone name %q", c.Name())
		}
		e.Reset(11)
		run(e, actionSeq(e, 37, 0))
		c, d := e.Clone(), e.Clone()
		acts := actionSeq(e, 700, 1) // long enough to cross episode ends and resets
		want := run(e, acts)
		run(c, actionSeq(e, 300, 2)) // stepping c must not disturb d
		if got := run(d, acts); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: a clone diverged from its original", id)
		}
		// The generator was copied: both continue with the same resets.
		if a, b := e.Reset(-1), d.Reset(-1); !reflect.DeepEqual(a, b) {
			t.Errorf("%s: clones reset differently: %v, %v", id, a, b)
		}
	}
}

func TestObservationFloat32(t *testing.T) {
	// Observations are the float32 rounding of the float64 state.
	e := newCartPole()
	o := e.Reset(9)
	for i := 0; i < 20; i++ {
		for j, v := range e.state {
			if o[j] != float32(v) {
				t.Fatalf("obs[%d] = %v, state %v", j, o[j], v)
			}
		}
		o, _, _, _ = e.Step([]float64{float64(i % 2)})
	}
	// Returned slices are fresh.
	a := e.Reset(1)
	b, _, _, _ := e.Step([]float64{1})
	a0 := a[0]
	e.Step([]float64{0})
	if a[0] != a0 || &a[0] == &b[0] {
		t.Error("an observation slice was reused")
	}
}
