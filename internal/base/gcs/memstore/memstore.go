package memstore

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
)

// Clock tells a Store the time. Leases expire by it.
type Clock interface {
	Now() time.Time
}

// ManualClock is a Clock that moves only when told to. Advance also expires, before it
// returns, the due leases of every Store using the clock, so tests of lease expiry are
// deterministic.
type ManualClock struct {
	mu   sync.Mutex
	now  time.Time
	subs map[*Store]struct{}
}

// NewManualClock returns a ManualClock reading start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start, subs: make(map[*Store]struct{})}
}

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d and expires due leases.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	subs := make([]*Store, 0, len(c.subs))
	for s := range c.subs {
		subs = append(subs, s)
	}
	c.mu.Unlock()
	for _, s := range subs {
		s.expire()
	}
}

func (c *ManualClock) subscribe(s *Store) {
	c.mu.Lock()
	c.subs[s] = struct{}{}
	c.mu.Unlock()
}

func (c *ManualClock) unsubscribe(s *Store) {
	c.mu.Lock()
	delete(c.subs, s)
	c.mu.Unlock()
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Options configures a Store. The zero value uses real time.
type Options struct {
	// Clock drives lease expiry. Nil means real time, checked every ExpiryInterval by a
	// goroutine the Store owns; a *ManualClock expires leases in Advance and needs none.
	Clock Clock
	// ExpiryInterval is how often a real-time Store looks for expired leases (default 20 ms).
	ExpiryInterval time.Duration
}

// Store is an in-memory gcs.Store. Create it with New.
type Store struct {
	clock  Clock
	manual *ManualClock
	done   chan struct{}
	wg     sync.WaitGroup

	mu         sync.Mutex
	rev        int64
	compactRev int64
	kvs        map[string]*gcs.KV
	history    []gcs.Event // every event with revision >= compactRev, in revision order
	leases     map[gcs.LeaseID]*lease
	nextLease  int64
	notify     chan struct{} // closed and replaced after every new revision
	closed     bool
}

type lease struct {
	id       gcs.LeaseID
	ttl      time.Duration
	deadline time.Time
	keys     map[string]struct{}
	keepers  int
	lost     map[chan struct{}]func() bool // lost channel of each KeepAlive -> stop its AfterFunc
}

var _ gcs.Store = (*Store)(nil)

// New returns an empty Store at revision 1 (like a fresh etcd). Close releases it.
func New(opts Options) *Store {
	s := &Store{
		clock:     opts.Clock,
		done:      make(chan struct{}),
		rev:       1,
		kvs:       make(map[string]*gcs.KV),
		leases:    make(map[gcs.LeaseID]*lease),
		nextLease: 0x1d5c_0000_0000,
		notify:    make(chan struct{}),
	}
	switch c := opts.Clock.(type) {
	case nil:
		s.clock = realClock{}
		every := opts.ExpiryInterval
		if every <= 0 {
			every = 20 * time.Millisecond
		}
		s.wg.Add(1)
		go s.expiryLoop(every)
	case *ManualClock:
		s.manual = c
		c.subscribe(s)
	}
	return s
}

func (s *Store) expiryLoop(every time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.expire()
		case <-s.done:
			return
		}
	}
}

func (s *Store) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	now := s.clock.Now()
	var due []*lease
	for _, l := range s.leases {
		if l.keepers == 0 && !now.Before(l.deadline) {
			due = append(due, l)
		}
	}
	slices.SortFunc(due, func(a, b *lease) int { return cmp.Compare(a.id, b.id) })
	for _, l := range due {
		s.revokeLocked(l)
	}
}

// check returns the error a call must fail with before doing anything.
func (s *Store) check(ctx context.Context, op string) error {
	if s.closed {
		return fmt.Errorf("memstore: %s: %w", op, gcs.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: %s: %w", op, err)
	}
	return nil
}

// Get implements gcs.Store.
func (s *Store) Get(ctx context.Context, key string) (gcs.KV, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx, "get"); err != nil {
		return gcs.KV{}, false, err
	}
	if key == "" {
		return gcs.KV{}, false, fmt.Errorf("memstore: get: %w", gcs.ErrEmptyKey)
	}
	kv, ok := s.kvs[key]
	if !ok {
		return gcs.KV{}, false, nil
	}
	return *kv, true, nil
}

// List implements gcs.Store.
func (s *Store) List(ctx context.Context, prefix string) ([]gcs.KV, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx, "list"); err != nil {
		return nil, 0, err
	}
	var out []gcs.KV
	for k, kv := range s.kvs {
		if strings.HasPrefix(k, prefix) {
			out = append(out, *kv)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, s.rev, nil
}

// Count implements gcs.Store.
func (s *Store) Count(ctx context.Context, prefix string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx, "count"); err != nil {
		return 0, err
	}
	var n int64
	for k := range s.kvs {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n, nil
}

// Put implements gcs.Store.
func (s *Store) Put(ctx context.Context, key string, value []byte, id gcs.LeaseID) (int64, error) {
	_, rev, err := s.txn(ctx, "put", nil, []gcs.Op{{Kind: gcs.OpPut, Key: key, Value: value, Lease: id}})
	return rev, err
}

// Delete implements gcs.Store.
func (s *Store) Delete(ctx context.Context, key string) (int64, error) {
	_, rev, err := s.txn(ctx, "delete", nil, []gcs.Op{{Kind: gcs.OpDelete, Key: key}})
	return rev, err
}

// Txn implements gcs.Store.
func (s *Store) Txn(ctx context.Context, cmps []gcs.Cmp, ops []gcs.Op) (bool, int64, error) {
	return s.txn(ctx, "txn", cmps, ops)
}

func (s *Store) txn(ctx context.Context, name string, cmps []gcs.Cmp, ops []gcs.Op) (bool, int64, error) {
	if err := gcs.CheckTxn(cmps, ops); err != nil {
		return false, 0, fmt.Errorf("memstore: %s: %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx, name); err != nil {
		return false, 0, err
	}
	for _, c := range cmps {
		var mod int64
		if kv, ok := s.kvs[c.Key]; ok {
			mod = kv.ModRev
		}
		if mod != c.ModRev {
			return false, s.rev, nil
		}
	}
	for _, op := range ops {
		if op.Kind == gcs.OpPut && op.Lease != 0 {
			if _, ok := s.leases[op.Lease]; !ok {
				return false, 0, fmt.Errorf("memstore: %s %q: lease %x: %w", name, op.Key, int64(op.Lease), gcs.ErrLeaseNotFound)
			}
		}
	}
	return true, s.applyLocked(ops), nil
}

// applyLocked applies valid ops as one revision (none if nothing changes).
func (s *Store) applyLocked(ops []gcs.Op) int64 {
	rev := s.rev + 1
	var events []gcs.Event
	del := func(k string) {
		kv, ok := s.kvs[k]
		if !ok {
			return
		}
		s.detachLocked(kv)
		delete(s.kvs, k)
		events = append(events, gcs.Event{Type: gcs.EventDelete, KV: gcs.KV{Key: k, ModRev: rev}})
	}
	for _, op := range ops {
		switch op.Kind {
		case gcs.OpPut:
			kv := &gcs.KV{Key: op.Key, Value: slices.Clone(op.Value), CreateRev: rev, ModRev: rev, Lease: op.Lease}
			if kv.Value == nil {
				kv.Value = []byte{}
			}
			if old, ok := s.kvs[op.Key]; ok {
				kv.CreateRev = old.CreateRev
				s.detachLocked(old)
			}
			s.kvs[op.Key] = kv
			if l := s.leases[op.Lease]; l != nil {
				l.keys[op.Key] = struct{}{}
			}
			events = append(events, gcs.Event{Type: gcs.EventPut, KV: *kv})
		case gcs.OpDelete:
			del(op.Key)
		case gcs.OpDeletePrefix:
			var keys []string
			for k := range s.kvs {
				if strings.HasPrefix(k, op.Key) {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for _, k := range keys {
				del(k)
			}
		}
	}
	if len(events) == 0 {
		return s.rev
	}
	s.rev = rev
	s.history = append(s.history, events...)
	close(s.notify)
	s.notify = make(chan struct{})
	return rev
}

func (s *Store) detachLocked(kv *gcs.KV) {
	if l := s.leases[kv.Lease]; l != nil {
		delete(l.keys, kv.Key)
	}
}

// Watch implements gcs.Store.
func (s *Store) Watch(ctx context.Context, prefix string, fromRev int64) <-chan gcs.WatchResponse {
	out := make(chan gcs.WatchResponse, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		out <- gcs.WatchResponse{Err: fmt.Errorf("memstore: watch: %w", gcs.ErrClosed)}
		close(out)
		return out
	}
	next := fromRev
	if next <= 0 {
		next = s.rev + 1
	}
	s.wg.Add(1)
	go s.watch(ctx, prefix, next, out)
	return out
}

// maxWatchBatch bounds the events of one WatchResponse (whole revisions are never split).
const maxWatchBatch = 1000

func (s *Store) watch(ctx context.Context, prefix string, next int64, out chan<- gcs.WatchResponse) {
	defer s.wg.Done()
	defer close(out)
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			select {
			case out <- gcs.WatchResponse{Err: fmt.Errorf("memstore: watch: %w", gcs.ErrClosed)}:
			default:
			}
			return
		}
		var resp gcs.WatchResponse
		if next < s.compactRev {
			resp.Err = fmt.Errorf("memstore: watch from revision %d (compacted at %d): %w", next, s.compactRev, gcs.ErrCompacted)
		} else {
			i := sort.Search(len(s.history), func(i int) bool { return s.history[i].KV.ModRev >= next })
			for ; i < len(s.history); i++ {
				ev := s.history[i]
				if len(resp.Events) >= maxWatchBatch && ev.KV.ModRev != resp.Events[len(resp.Events)-1].KV.ModRev {
					break
				}
				if strings.HasPrefix(ev.KV.Key, prefix) {
					resp.Events = append(resp.Events, ev)
				}
			}
			if len(resp.Events) > 0 {
				next = resp.Events[len(resp.Events)-1].KV.ModRev + 1
			} else if i == len(s.history) {
				next = max(next, s.rev+1)
			}
		}
		wake := s.notify
		s.mu.Unlock()
		if resp.Err == nil && len(resp.Events) == 0 {
			select {
			case <-wake:
				continue
			case <-ctx.Done():
				return
			case <-s.done:
				continue
			}
		}
		select {
		case out <- resp:
		case <-ctx.Done():
			return
		case <-s.done:
			continue
		}
		if resp.Err != nil {
			return
		}
	}
}

// Grant implements gcs.Store.
func (s *Store) Grant(ctx context.Context, ttl time.Duration) (gcs.LeaseID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx, "grant"); err != nil {
		return 0, err
	}
	secs := max(1, int64(math.Ceil(ttl.Seconds())))
	l := &lease{
		id:   gcs.LeaseID(s.nextLease),
		ttl:  time.Duration(secs) * time.Second,
		keys: make(map[string]struct{}),
		lost: make(map[chan struct{}]func() bool),
	}
	s.nextLease++
	l.deadline = s.clock.Now().Add(l.ttl)
	s.leases[l.id] = l
	return l.id, nil
}

// KeepAlive implements gcs.Store. The lease cannot expire while a KeepAlive is active (the
// fake keeps it alive perfectly); when ctx ends, the lease's TTL starts again from then.
func (s *Store) KeepAlive(ctx context.Context, id gcs.LeaseID) (<-chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx, "keepalive"); err != nil {
		return nil, err
	}
	l := s.leases[id]
	if l == nil {
		return nil, fmt.Errorf("memstore: keepalive %x: %w", int64(id), gcs.ErrLeaseNotFound)
	}
	lost := make(chan struct{})
	l.keepers++
	l.lost[lost] = context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := l.lost[lost]; !ok {
			return // revoked, expired or closed meanwhile: lost is already closed
		}
		delete(l.lost, lost)
		l.keepers--
		l.deadline = s.clock.Now().Add(l.ttl)
		close(lost)
	})
	return lost, nil
}

// Revoke implements gcs.Store.
func (s *Store) Revoke(ctx context.Context, id gcs.LeaseID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx, "revoke"); err != nil {
		return err
	}
	l := s.leases[id]
	if l == nil {
		return fmt.Errorf("memstore: revoke %x: %w", int64(id), gcs.ErrLeaseNotFound)
	}
	s.revokeLocked(l)
	return nil
}

func (s *Store) revokeLocked(l *lease) {
	keys := make([]string, 0, len(l.keys))
	for k := range l.keys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	ops := make([]gcs.Op, len(keys))
	for i, k := range keys {
		ops[i] = gcs.Op{Kind: gcs.OpDelete, Key: k}
	}
	delete(s.leases, l.id)
	s.applyLocked(ops)
	s.loseLocked(l)
}

func (s *Store) loseLocked(l *lease) {
	for ch, stop := range l.lost {
		stop()
		close(ch)
	}
	clear(l.lost)
	l.keepers = 0
}

// Compact implements gcs.Store.
func (s *Store) Compact(ctx context.Context, rev int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx, "compact"); err != nil {
		return err
	}
	switch {
	case rev <= s.compactRev:
		return fmt.Errorf("memstore: compact %d (compacted at %d): %w", rev, s.compactRev, gcs.ErrCompacted)
	case rev > s.rev:
		return fmt.Errorf("memstore: compact %d (current %d): %w", rev, s.rev, gcs.ErrFutureRev)
	}
	s.compactRev = rev
	i := sort.Search(len(s.history), func(i int) bool { return s.history[i].KV.ModRev >= rev })
	s.history = slices.Clone(s.history[i:])
	return nil
}

// Revision implements gcs.Store.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx, "revision"); err != nil {
		return 0, err
	}
	return s.rev, nil
}

// Close implements gcs.Store: it ends every watch and keep-alive and waits for the Store's
// goroutines.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("memstore: close: %w", gcs.ErrClosed)
	}
	s.closed = true
	close(s.done)
	for _, l := range s.leases {
		s.loseLocked(l)
	}
	s.mu.Unlock()
	if s.manual != nil {
		s.manual.unsubscribe(s)
	}
	s.wg.Wait()
	return nil
}
