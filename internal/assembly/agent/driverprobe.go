package agent

import (
	"sync"
	"time"

	"github.com/ray-go/ray/internal/base/netx"
	"github.com/ray-go/ray/internal/base/pb"
)

// confirmGrace is how much longer than reregisterGrace a job whose driver's jobalive key
// went is kept while the driver's address still accepts connections: a driver that was
// stopped, starved of CPU or cut off for longer than its lease is alive, and writes the
// key again when it runs; failing its job (and stopping its worker processes, with its
// actors and objects) would be final. A driver that exited refuses connections: its job
// ends at reregisterGrace, as before.
const confirmGrace = 3 * AliveTTL

// driverProbeEvery and driverProbeTimeout pace the probes of a driver's address.
const (
	driverProbeEvery   = 500 * time.Millisecond
	driverProbeTimeout = 500 * time.Millisecond
)

// driverGone reports whether the driver of job (record info), whose jobalive key went at
// gone, is to be taken for dead at now: after reregisterGrace if its address refuses
// connections (or the record has none: an older driver), after reregisterGrace +
// confirmGrace whatever it answers.
func (m *workerManager) driverGone(job string, info *pb.JobInfo, gone, now time.Time) bool {
	since := now.Sub(gone)
	switch {
	case since < reregisterGrace:
		return false
	case since >= reregisterGrace+confirmGrace || info.GetDriverAddress() == "":
		return true
	}
	return m.probes.refused(job, info.GetDriverAddress(), now)
}

// driverProbes asks drivers' addresses whether they still listen, off the manager's
// goroutine (a dial to a host that is down takes its timeout), and keeps the last answer.
type driverProbes struct {
	mu sync.Mutex
	m  map[string]*driverProbe // by job
	wg sync.WaitGroup
}

type driverProbe struct {
	refused bool      // the last answer
	running bool      // a probe is under way
	at      time.Time // when the last one ended
}

// refused reports the last answer for job's driver at addr (false until there is one), and
// starts a probe when none runs and the last is driverProbeEvery old.
func (p *driverProbes) refused(job, addr string, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]*driverProbe{}
	}
	pr := p.m[job]
	if pr == nil {
		pr = &driverProbe{}
		p.m[job] = pr
	}
	if !pr.running && now.Sub(pr.at) >= driverProbeEvery {
		pr.running = true
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			r := netx.Refused(addr, driverProbeTimeout)
			p.mu.Lock()
			pr.refused, pr.running, pr.at = r, false, time.Now()
			p.mu.Unlock()
		}()
	}
	return pr.refused
}

// lastRefused reports the last answer for job's driver (false when there is none) and
// starts no probe.
func (p *driverProbes) lastRefused(job string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr := p.m[job]
	return pr != nil && pr.refused
}

// forget drops what is known of job's driver (its key came back, or the job is gone).
func (p *driverProbes) forget(job string) {
	p.mu.Lock()
	delete(p.m, job)
	p.mu.Unlock()
}
