package core

import (
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/ray-go/ray/internal/base/ids"
)

// Ray's call site per object (RAY_record_ref_creation_sites=1: `ray memory` and `ray list
// objects --detail` show where each ref was created). Off by default: then Core.sites is
// nil and a Put, a task or an actor call pays one nil check. On, each object this process
// creates notes the first frame of its creation's stack outside this module's runtime (the
// user's call of ray.Put, a Remote, ...; a _test.go file of the module counts as the
// user's), as "file:line", until the object is freed; ListObjects shows it (call_site,
// `rayctl list objects --detail`). Config.CallSites turns it on; the root package sets it
// from RAY_record_ref_creation_sites in each process's own environment when its runtime
// starts (a worker process's is what its agent gives it); tasks' other returns show their
// first return's site; borrowed rows show none.

// CallSitesEnv turns call sites on for a process when set to 1 (Ray's name; read by the
// root package).
const CallSitesEnv = "RAY_record_ref_creation_sites"

// maxCallSites bounds the objects whose call site a process keeps at once (one more
// object is not noted until some are freed).
const maxCallSites = 1 << 20

// callSites maps this process's live objects to where they were created.
type callSites struct {
	mu    sync.Mutex
	of    map[ids.ObjectID]string
	names map[uintptr]string // "file:line" by the frame's PC (a call site is one string)
}

func newCallSites(on bool) *callSites {
	if !on {
		return nil
	}
	return &callSites{of: map[ids.ObjectID]string{}, names: map[uintptr]string{}}
}

// modulePrefix names this module's packages' functions.
const modulePrefix = "github.com/ray-go/ray"

// note records where id is being created: the caller's stack.
func (s *callSites) note(id ids.ObjectID) {
	var pcs [24]uintptr
	n := runtime.Callers(3, pcs[:])
	site := s.site(pcs[:n])
	s.mu.Lock()
	if len(s.of) < maxCallSites {
		s.of[id] = site
	}
	s.mu.Unlock()
}

// site is the first frame of pcs outside the module's runtime ("" none).
func (s *callSites) site(pcs []uintptr) string {
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		inModule := f.Function == modulePrefix || strings.HasPrefix(f.Function, modulePrefix+".") || strings.HasPrefix(f.Function, modulePrefix+"/")
		if f.Function != "" && !strings.HasPrefix(f.Function, "runtime.") && (!inModule || strings.HasSuffix(f.File, "_test.go")) {
			s.mu.Lock()
			name, ok := s.names[f.PC]
			if !ok {
				name = f.File + ":" + strconv.Itoa(f.Line)
				if len(s.names) < maxCallSites {
					s.names[f.PC] = name
				}
			}
			s.mu.Unlock()
			return name
		}
		if !more {
			return ""
		}
	}
}

// forget drops id's call site (it was freed).
func (s *callSites) forget(id ids.ObjectID) {
	s.mu.Lock()
	delete(s.of, id)
	s.mu.Unlock()
}

// get returns id's call site ("" not known).
func (s *callSites) get(id ids.ObjectID) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.of[id]
}
