package membership

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// pidCache maps identity -> kind -> PID. Get's hot path is one RLock and two map reads.
type pidCache struct {
	mu sync.RWMutex
	m  map[string]map[string]*actor.PID
}

type cachedPID struct {
	identity, kind string
	pid            *actor.PID
}

func (c *pidCache) get(identity, kind string) *actor.PID {
	c.mu.RLock()
	pid := c.m[identity][kind]
	c.mu.RUnlock()
	return pid
}

func (c *pidCache) put(identity, kind string, pid *actor.PID) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]map[string]*actor.PID{}
	}
	byKind := c.m[identity]
	if byKind == nil {
		byKind = map[string]*actor.PID{}
		c.m[identity] = byKind
	}
	byKind[kind] = pid
	c.mu.Unlock()
}

// removeIfEqual drops the entry if it still holds pid.
func (c *pidCache) removeIfEqual(identity, kind string, pid *actor.PID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	byKind := c.m[identity]
	if cur := byKind[kind]; cur == nil || !cur.Equal(pid) {
		return false
	}
	delete(byKind, kind)
	if len(byKind) == 0 {
		delete(c.m, identity)
	}
	return true
}

// removeIdentity drops every kind of identity and returns what it dropped.
func (c *pidCache) removeIdentity(identity string) []cachedPID {
	c.mu.Lock()
	defer c.mu.Unlock()
	byKind := c.m[identity]
	if byKind == nil {
		return nil
	}
	out := make([]cachedPID, 0, len(byKind))
	for kind, pid := range byKind {
		out = append(out, cachedPID{identity, kind, pid})
	}
	delete(c.m, identity)
	return out
}

// removeAddress drops every PID at addr (a member that died) and returns them.
func (c *pidCache) removeAddress(addr string) []cachedPID {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []cachedPID
	for identity, byKind := range c.m {
		for kind, pid := range byKind {
			if pid.Address == addr {
				out = append(out, cachedPID{identity, kind, pid})
				delete(byKind, kind)
			}
		}
		if len(byKind) == 0 {
			delete(c.m, identity)
		}
	}
	return out
}

func (c *pidCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := 0
	for _, byKind := range c.m {
		n += len(byKind)
	}
	return n
}

// placement is what this process knows of placement/<actorID>.
type placement struct {
	node    string
	rev     int64 // ModRev of the put, or the deletion revision
	deleted bool
	at      time.Time // when a deletion was seen (tombstones are pruned after a while)
}

// tombstoneTTL is how long a deleted placement is remembered, so that a request resolved
// before the deletion is refused rather than activating a zombie.
const tombstoneTTL = time.Minute

// placementCache is the watched copy of placement/, actor ID -> placement.
type placementCache struct {
	mu         sync.RWMutex
	m          map[string]placement
	tombstones int
	lastPrune  time.Time
}

func (c *placementCache) get(actorID string) (placement, bool) {
	c.mu.RLock()
	p, ok := c.m[actorID]
	c.mu.RUnlock()
	return p, ok
}

// set records a change and returns the previous entry.
func (c *placementCache) set(actorID string, p placement) (placement, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]placement{}
	}
	old, had := c.m[actorID]
	if had && old.deleted {
		c.tombstones--
	}
	c.m[actorID] = p
	if p.deleted {
		c.tombstones++
	}
	if c.tombstones > 0 && time.Since(c.lastPrune) > tombstoneTTL/4 {
		c.lastPrune = time.Now()
		for id, q := range c.m {
			if q.deleted && time.Since(q.at) > tombstoneTTL {
				delete(c.m, id)
				c.tombstones--
			}
		}
	}
	return old, had
}
