package envs

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestNewVecErrors(t *testing.T) {
	if _, err := NewVec("Nope-v0", 2); err == nil || !strings.Contains(err.Error(), "CartPole-v1") {
		t.Errorf("NewVec(unknown) error %v", err)
	}
	if _, err := NewVec("CartPole-v1", 0); err == nil {
		t.Error("NewVec with 0 copies succeeded")
	}
}

// TestVecAutoreset runs a Vec against independently stepped environments
// with Gymnasium's SAME_STEP autoreset written out by hand.
func TestVecAutoreset(t *testing.T) {
	for _, id := range Names() {
		t.Run(id, func(t *testing.T) {
			const n = 3
			v, err := NewVec(id, n)
			if err != nil {
				t.Fatal(err)
			}
			if v.Len() != n || len(v.Envs()) != n {
				t.Fatalf("Len %d, Envs %d", v.Len(), len(v.Envs()))
			}
			refs := make([]Env, n)
			obs := v.Reset(100)
			for i := range refs {
				refs[i] = mustMake(t, id)
				if want := refs[i].Reset(100 + int64(i)); !reflect.DeepEqual(obs[i], want) {
					t.Fatalf("copy %d reset obs %v, want seed %d's %v", i, obs[i], 100+i, want)
				}
			}
			if f := v.FinalObs(); len(f) != n || f[0] != nil {
				t.Fatalf("FinalObs after Reset = %v", f)
			}
			space := refs[0].ActionSpace()
			dones := 0
			for step := 0; step < 1200; step++ {
				acts := make([][]float64, n)
				for i := range acts {
					if space.Discrete > 0 {
						acts[i] = []float64{float64((step/3 + i) % space.Discrete)}
					} else {
						acts[i] = []float64{float64((step/40+i)%2)*2 - 1}
					}
				}
				obs, rew, term, trunc := v.Step(acts)
				final := v.FinalObs()
				for i, ref := range refs {
					o, r, te, tr := ref.Step(acts[i])
					var wantFinal []float32
					if te || tr {
						wantFinal, o = o, ref.Reset(-1)
						dones++
					}
					if !reflect.DeepEqual(obs[i], o) || rew[i] != r || term[i] != te || trunc[i] != tr || !reflect.DeepEqual(final[i], wantFinal) {
						t.Fatalf("step %d copy %d: got %v %v %v %v final %v; want %v %v %v %v final %v",
							step, i, obs[i], rew[i], term[i], trunc[i], final[i], o, r, te, tr, wantFinal)
					}
				}
			}
			if dones == 0 {
				t.Error("no episode ended; the autoreset was not exercised")
			}
		})
	}
}

func TestVecTruncation(t *testing.T) {
	v, err := NewVec("Pendulum-v1", 2)
	if err != nil {
		t.Fatal(err)
	}
	v.Reset(0)
	acts := [][]float64{{0}, {1}}
	for i := 1; i <= 200; i++ {
		obs, _, term, trunc := v.Step(acts)
		final := v.FinalObs()
		for c := 0; c < 2; c++ {
			if term[c] || trunc[c] != (i == 200) || (final[c] != nil) != (i == 200) {
				t.Fatalf("step %d copy %d: terminated %v truncated %v final %v", i, c, term[c], trunc[c], final[c])
			}
			if i == 200 && reflect.DeepEqual(obs[c], final[c]) {
				t.Errorf("copy %d: obs after truncation is the final obs, not a new episode's", c)
			}
		}
	}
	// The next step is the new episode's first.
	if _, _, _, trunc := v.Step(acts); trunc[0] || v.FinalObs()[0] != nil {
		t.Error("truncation repeated after the autoreset")
	}
}

func TestVecBadActions(t *testing.T) {
	v, err := NewVec("CartPole-v1", 2)
	if err != nil {
		t.Fatal(err)
	}
	v.Reset(0)
	msg := func() (msg string) {
		defer func() { msg = fmt.Sprint(recover()) }()
		v.Step([][]float64{{0}})
		return
	}()
	if !strings.Contains(msg, "1 actions for 2 copies") {
		t.Errorf("panic %q", msg)
	}
}
