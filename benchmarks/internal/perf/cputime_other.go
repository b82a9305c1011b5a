//go:build !unix

package perf

import "time"

func ProcessCPU() time.Duration { return 0 }

func LoadAvg() string { return "" }
