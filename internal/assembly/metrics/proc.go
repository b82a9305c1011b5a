package metrics

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// cpuSampler computes the machine's CPU utilization between two reads of /proc/stat.
type cpuSampler struct {
	dir string

	mu         sync.Mutex
	busy, all  uint64 // at the previous read
	haveSample bool
}

// utilization returns the percentage of CPU time not idle since the previous call (since
// boot on the first).
func (s *cpuSampler) utilization() (float64, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, "stat"))
	if err != nil {
		return 0, err
	}
	busy, all, err := parseStat(b)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	db, da := busy, all
	if s.haveSample && all > s.all && busy >= s.busy {
		db, da = busy-s.busy, all-s.all
	}
	s.busy, s.all, s.haveSample = busy, all, true
	if da == 0 {
		return 0, nil
	}
	return 100 * float64(db) / float64(da), nil
}

// parseStat reads the "cpu" line of /proc/stat: the time not idle (idle and iowait are
// idle) and the total, in ticks.
func parseStat(b []byte) (busy, all uint64, err error) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("metrics: /proc/stat starts with %q, want the cpu line", line)
	}
	var idle uint64
	for i, s := range f[1:] {
		if i >= 8 { // guest and guest_nice are already in user and nice
			break
		}
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("metrics: /proc/stat cpu field %d: %w", i+1, err)
		}
		all += v
		if i == 3 || i == 4 { // idle, iowait
			idle += v
		}
	}
	return all - idle, all, nil
}

type meminfo struct{ total, available int64 }

// readMeminfo reads MemTotal and MemAvailable of /proc/meminfo.
func readMeminfo(dir string) (meminfo, error) {
	f, err := os.Open(filepath.Join(dir, "meminfo"))
	if err != nil {
		return meminfo{}, err
	}
	defer f.Close()
	var m meminfo
	var haveTotal, haveAvail bool
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		var dst *int64
		switch fields[0] {
		case "MemTotal:":
			dst, haveTotal = &m.total, true
		case "MemAvailable:":
			dst, haveAvail = &m.available, true
		default:
			continue
		}
		kb, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return meminfo{}, fmt.Errorf("metrics: /proc/meminfo: %q: %w", sc.Text(), err)
		}
		*dst = kb << 10
	}
	if err := sc.Err(); err != nil {
		return meminfo{}, err
	}
	if !haveTotal || !haveAvail {
		return meminfo{}, errors.New("metrics: /proc/meminfo lacks MemTotal or MemAvailable")
	}
	return m, nil
}
