//go:build !unix

package perf

import "time"

func processCPU() time.Duration { return 0 }

func LoadAvg() string { return "" }
