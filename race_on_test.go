//go:build race

package ray

// raceEnabled: the race detector's shadow memory inflates RSS several times over, so memory
// bounds are checked on the Go heap instead.
const raceEnabled = true
