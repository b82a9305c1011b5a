//go:build !race

package ray

const raceEnabled = false
