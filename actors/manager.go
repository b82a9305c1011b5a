package actors

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
)

// NodeView is what the manager needs to know about the cluster's nodes.
//
// Contract: Alive is cheap, safe for concurrent use, and lists only nodes believed alive
// that host actor grains, with their total resources.
type NodeView interface {
	Alive() map[string]sched.Resources
}

// ManagerConfig configures a Manager.
type ManagerConfig struct {
	Node string // this node's ID
	// Job, when set, limits the manager to that job's actors: in a cluster every job's
	// worker processes elect their own leader among themselves (Nodes lists only them),
	// and an actor runs only where its job's binary does.
	Job   string
	Table *Table
	Nodes NodeView
	// Activate starts the grain of an actor placed on a node (cluster.Get of its identity);
	// it may block for a moment and is called on its own goroutine.
	Activate func(actorID string)
	// Resync is how often the manager re-examines every actor even without news
	// (default 1 s): the bound on how long a missed event can delay a restart.
	Resync time.Duration
	Logger *slog.Logger
}

// Validate reports a configuration that cannot work.
func (c *ManagerConfig) Validate() error {
	if c.Node == "" || c.Table == nil || c.Nodes == nil || c.Activate == nil {
		return errors.New("actors: ManagerConfig needs Node, Table, Nodes and Activate")
	}
	return nil
}

// Manager is a node's view of the actor table and, on the leader node (the alive node
// with the smallest ID), the GCS actor manager of Ray: it places actors that wait for a
// node, starts their instances, and reports the death of nodes hosting actors
// (lifecycle.HostDied), which restarts them elsewhere or lets them die. Every decision
// is a lifecycle step written with a revision check, so a second manager acting at the
// same time (a leader change) cannot do harm.
//
// It keeps a cache of every actor record, fed by a watch, and tells subscribers of every
// change (the process runtime uses it to resend or fail calls).
type Manager struct {
	cfg    ManagerConfig
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kick   chan struct{}

	mu     sync.RWMutex
	actors map[string]*pb.ActorInfo
	subs   []func(*pb.ActorInfo)
	// activated: actor -> incarnation this manager asked to start (avoids repeats)
	activated map[string]uint64
}

// NewManager starts a manager.
func NewManager(cfg ManagerConfig) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Resync <= 0 {
		cfg.Resync = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Manager{cfg: cfg, kick: make(chan struct{}, 1), actors: map[string]*pb.ActorInfo{}, activated: map[string]uint64{}}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.wg.Add(1)
	go m.run()
	return m, nil
}

// Subscribe calls fn for every actor record change seen (on the manager's goroutine; fn
// must not block).
func (m *Manager) Subscribe(fn func(*pb.ActorInfo)) {
	m.mu.Lock()
	m.subs = append(m.subs, fn)
	m.mu.Unlock()
}

// Get returns the cached record of an actor.
func (m *Manager) Get(actorID string) (*pb.ActorInfo, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	info, ok := m.actors[actorID]
	return info, ok
}

// All returns every cached actor record.
func (m *Manager) All() []*pb.ActorInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*pb.ActorInfo, 0, len(m.actors))
	for _, info := range m.actors {
		out = append(out, info)
	}
	return out
}

// Table is the actor table the manager reads.
func (m *Manager) Table() *Table { return m.cfg.Table }

// NodesChanged tells the manager that the set of alive nodes changed.
func (m *Manager) NodesChanged() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// Stop stops the manager's goroutines.
func (m *Manager) Stop() {
	m.cancel()
	m.wg.Wait()
}

func (m *Manager) run() {
	defer m.wg.Done()
	tick := time.NewTicker(m.cfg.Resync)
	defer tick.Stop()
	for m.ctx.Err() == nil {
		kvs, rev, err := m.cfg.Table.Store.List(m.ctx, gcs.ActorsPrefix)
		if err != nil {
			if !sleep(m.ctx, 200*time.Millisecond) {
				return
			}
			continue
		}
		for _, kv := range kvs {
			m.apply(kv.Value)
		}
		m.reconcile()
		watch := m.cfg.Table.Store.Watch(m.ctx, gcs.ActorsPrefix, rev+1)
	loop:
		for {
			select {
			case <-m.ctx.Done():
				return
			case resp, ok := <-watch:
				if !ok || resp.Err != nil {
					break loop // list again
				}
				for _, ev := range resp.Events {
					if ev.Type == gcs.EventPut {
						m.apply(ev.KV.Value)
					}
				}
				m.reconcile()
			case <-m.kick:
				m.reconcile()
			case <-tick.C:
				m.reconcile()
			}
		}
	}
}

func (m *Manager) apply(value []byte) {
	info := &pb.ActorInfo{}
	if err := proto.Unmarshal(value, info); err != nil {
		m.cfg.Logger.Warn("actors: corrupt actor record", "err", err)
		return
	}
	id := idString(info.ActorId)
	m.mu.Lock()
	if old, ok := m.actors[id]; ok && proto.Equal(old, info) {
		m.mu.Unlock()
		return
	}
	m.actors[id] = info
	subs := m.subs
	m.mu.Unlock()
	for _, fn := range subs {
		fn(info)
	}
}

// reconcile does the leader's work: place, start, and report dead hosts.
func (m *Manager) reconcile() {
	alive := m.cfg.Nodes.Alive()
	if !m.leader(alive) {
		return
	}
	m.mu.RLock()
	var todo []*pb.ActorInfo
	for _, info := range m.actors {
		if lifecycle.Phase(info.Phase) != lifecycle.Dead && (m.cfg.Job == "" || info.JobId == m.cfg.Job) {
			todo = append(todo, info)
		}
	}
	m.mu.RUnlock()
	sort.Slice(todo, func(i, j int) bool { return string(todo[i].ActorId) < string(todo[j].ActorId) })
	load := map[string]int{}
	for _, info := range todo {
		if info.Node != "" {
			load[info.Node]++
		}
	}
	for _, info := range todo {
		if m.ctx.Err() != nil {
			return
		}
		id := idString(info.ActorId)
		st := StateOf(info)
		switch {
		case st.Node == "":
			m.place(id, info, alive, load)
		case !isAlive(alive, st.Node):
			m.step(id, lifecycle.HostDied{Node: st.Node})
		case st.Phase != lifecycle.Alive:
			m.activate(id, info.Incarnation)
		}
	}
}

// leader: the alive node with the smallest ID does the placing.
func (m *Manager) leader(alive map[string]sched.Resources) bool {
	if _, ok := alive[m.cfg.Node]; !ok {
		return false
	}
	for n := range alive {
		if n < m.cfg.Node {
			return false
		}
	}
	return true
}

// place picks the alive node with the fewest actors among those whose total resources fit
// the actor's request; with none that could ever fit, the actor is unschedulable.
func (m *Manager) place(id string, info *pb.ActorInfo, alive map[string]sched.Resources, load map[string]int) {
	req := tasks.ResourcesFromPB(info.Resources)
	best := ""
	for n, total := range alive {
		if !total.Fits(req) {
			continue
		}
		if best == "" || load[n] < load[best] || load[n] == load[best] && n < best {
			best = n
		}
	}
	if best == "" {
		if len(alive) == 0 {
			return // no node at all: wait for one
		}
		m.cfg.Logger.Warn("actors: no node can host the actor", "actor", id, "resources", req)
		m.step(id, lifecycle.PlacementFailed{Incarnation: info.Incarnation, Message: "no node in the cluster has the resources " + req.String()})
		return
	}
	after, ok := m.step(id, lifecycle.Placed{Incarnation: info.Incarnation, Node: best})
	if ok && after.Node == best {
		load[best]++
		m.activate(id, after.Incarnation)
	}
}

func (m *Manager) activate(id string, inc uint64) {
	m.mu.Lock()
	if m.activated[id] == inc {
		m.mu.Unlock()
		return
	}
	m.activated[id] = inc
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.cfg.Activate(id)
		// If the start does not get through (the grain could not be reached), let the
		// next reconcile try again.
		time.AfterFunc(2*time.Second, func() {
			m.mu.Lock()
			if m.activated[id] == inc {
				if info := m.actors[id]; info == nil || info.Incarnation != inc || lifecycle.Phase(info.Phase) != lifecycle.Alive {
					delete(m.activated, id)
				}
			}
			m.mu.Unlock()
		})
	}()
}

func (m *Manager) step(id string, ev lifecycle.Event) (*pb.ActorInfo, bool) {
	ctx, cancel := context.WithTimeout(m.ctx, 5*time.Second)
	defer cancel()
	after, _, changed, err := m.cfg.Table.Step(ctx, id, ev)
	if err != nil {
		if !errors.Is(err, lifecycle.ErrInvalidTransition) && m.ctx.Err() == nil {
			m.cfg.Logger.Warn("actors: lifecycle step failed", "actor", id, "event", ev, "err", err)
		}
		return after, false
	}
	if changed {
		b, _ := proto.Marshal(after)
		m.apply(b)
	}
	return after, true
}

func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

func isAlive(alive map[string]sched.Resources, node string) bool {
	_, ok := alive[node]
	return ok
}
