package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
)

// procStatusKB reads one "<key>: <n> kB" line of /proc/self/status (0 if unavailable).
func procStatusKB(key string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	return fieldKB(b, key)
}

func fieldKB(b []byte, key string) int64 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, key+":") {
			continue
		}
		f := strings.Fields(line[len(key)+1:])
		if len(f) == 0 {
			return 0
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		return n
	}
	return 0
}

// memProbe measures the peak resident set of one trial in two ways: VmHWM of
// /proc/self/status after resetting it (writing 5 to /proc/self/clear_refs, Linux >= 4.0),
// and the maximum of VmRSS sampled every 10 ms (a cross-check, and the fallback when the
// reset is refused).
type memProbe struct {
	baseline int64 // VmRSS in bytes when the trial started (after a GC)
	hwmReset bool
	stop     chan struct{}
	done     sync.WaitGroup
	mu       sync.Mutex
	sampled  int64
}

// startProbe collects garbage and returns freed memory to the OS (so one trial does not
// inherit the previous one's heap), resets the high-water mark and starts sampling.
func startProbe() *memProbe {
	runtime.GC()
	debug.FreeOSMemory()
	p := &memProbe{stop: make(chan struct{})}
	p.baseline = procStatusKB("VmRSS") << 10
	p.hwmReset = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	p.sampled = p.baseline
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				rss := procStatusKB("VmRSS") << 10
				p.mu.Lock()
				p.sampled = max(p.sampled, rss)
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// memResult is the memory figure of one trial, in bytes.
type memResult struct {
	Baseline int64  `json:"baseline_rss_bytes"`
	Peak     int64  `json:"peak_rss_bytes"`         // VmHWM after the reset, or the sampled peak
	Sampled  int64  `json:"sampled_peak_rss_bytes"` // max VmRSS sampled every 10 ms
	Method   string `json:"method"`
}

func (p *memProbe) finish() memResult {
	close(p.stop)
	p.done.Wait()
	rss := procStatusKB("VmRSS") << 10
	p.mu.Lock()
	sampled := max(p.sampled, rss)
	p.mu.Unlock()
	r := memResult{Baseline: p.baseline, Sampled: sampled, Peak: sampled, Method: "sampled VmRSS (10 ms)"}
	if p.hwmReset {
		if hwm := procStatusKB("VmHWM") << 10; hwm > 0 {
			r.Peak, r.Method = hwm, "VmHWM after clear_refs"
		}
	}
	return r
}

// machine describes the host: cores, memory, CPU model, Go version, load.
type machine struct {
	Cores      int    `json:"cores"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	MemTotal   int64  `json:"mem_total_bytes"`
	MemAvail   int64  `json:"mem_available_bytes"`
	CPUModel   string `json:"cpu_model"`
	GoVersion  string `json:"go_version"`
	LoadAvg    string `json:"loadavg"`
	Kernel     string `json:"kernel"`
	// MemLimit is the process's soft memory limit after ray.Init (GOMEMLIMIT, or the one
	// the runtime sets from its object store budget; 0: none).
	MemLimit int64 `json:"mem_limit_bytes,omitempty"`
}

func describeMachine() machine {
	m := machine{Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(), LoadAvg: loadAvg()}
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		m.MemLimit = l
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.MemTotal = fieldKB(b, "MemTotal") << 10
		m.MemAvail = fieldKB(b, "MemAvailable") << 10
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

func (m machine) String() string {
	limit := "none"
	if m.MemLimit > 0 {
		limit = mib(m.MemLimit)
	}
	return fmt.Sprintf("machine: %d cores (GOMAXPROCS %d, %s), %s RAM (%s available), %s, linux %s, load %s; soft memory limit %s",
		m.Cores, m.GOMAXPROCS, m.CPUModel, gib(m.MemTotal), gib(m.MemAvail), m.GoVersion, m.Kernel, m.LoadAvg, limit)
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func gib(b int64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }
func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
