package sched

import (
	"slices"
	"testing"
)

func TestServeAsks(t *testing.T) {
	one, two := cpus(1), cpus(2)
	gpu := mustResMap(map[string]float64{GPU: 1})
	for _, tc := range []struct {
		name     string
		free     Resources
		asks     []Resources
		reserve  bool
		want     []int
		wantFree Resources
	}{
		{"all fit, oldest first", cpus(3), []Resources{one, two}, false, []int{0, 1}, Resources{}},
		{"a large ask does not block smaller ones", one, []Resources{two, one, one}, false, []int{1}, Resources{}},
		{"nor asks for another resource", one.Add(gpu), []Resources{two, gpu}, false, []int{1}, one},
		{"a reservation holds back younger asks for what it lacks", one, []Resources{two, one}, true, nil, one},
		{"not those for what it does not need", one.Add(gpu), []Resources{two, gpu, one}, true, []int{1}, one},
		{"nor anything once it fits", cpus(3), []Resources{two, one}, true, []int{0, 1}, Resources{}},
		{"a head larger than what is free leaves them nothing", cpus(3), []Resources{mustResMap(map[string]float64{CPU: 4}), one, two}, true, nil, cpus(3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, free := ServeAsks(tc.free, tc.asks, tc.reserve, nil)
			if !slices.Equal(got, tc.want) || !free.Equal(tc.wantFree) {
				t.Fatalf("ServeAsks = %v, free %v; want %v, free %v", got, free, tc.want, tc.wantFree)
			}
		})
	}
}

func TestOvertaken(t *testing.T) {
	one, two := cpus(1), cpus(2)
	for _, tc := range []struct {
		name              string
		free, ahead, head Resources
		want              bool
	}{
		{"what keeps it waiting is held by older work", one, Resources{}, two, false},
		{"younger asks took what it lacks", one, one, two, true},
		{"younger asks took only part of it", Resources{}, one, two, false},
		{"it fits: nothing to reserve", two, one, two, false},
	} {
		if got := Overtaken(tc.free, tc.ahead, tc.head); got != tc.want {
			t.Errorf("%s: Overtaken(%v, %v, %v) = %v, want %v", tc.name, tc.free, tc.ahead, tc.head, got, tc.want)
		}
	}
}

func TestAskFirst(t *testing.T) {
	one, two := cpus(1), cpus(2)
	for _, tc := range []struct {
		name  string
		free  Resources
		lacks []Resources
		want  int
	}{
		{"no demand", one, nil, -1},
		{"the oldest fits", two, []Resources{two, one}, 0},
		{"the oldest does not fit, a younger one does", one, []Resources{two, one}, 1},
		{"nothing fits: the oldest", Resources{}, []Resources{two, one}, 0},
	} {
		if got := AskFirst(tc.free, tc.lacks); got != tc.want {
			t.Errorf("%s: AskFirst = %d, want %d", tc.name, got, tc.want)
		}
	}
}
