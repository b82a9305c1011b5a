package agent

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
)

// The records a process left in the GCS (head only).
//
// Each runtime (a driver, a job's worker process) writes its lineage pages under
// lineage/<node>/ and the object table entries of its store under objects/<node>/, without
// a lease: the pages must outlive the process, since a borrower (in its job or, through a
// detached actor, in another) that adopts the objects of an owner that died reads that
// owner's lineage when the membership reports it gone (core's orphan.go, readLineage). A
// runtime that stops cleanly deletes its objects/ entries itself; nothing else deleted
// them, so a long-lived cluster running many jobs grew etcd without bound, up to its quota
// (gcs.ErrGCSFull).
//
// So the head watches the node table (nodes/, on each node's lease): a node whose record
// went, and did not come back (a node that lost its lease in a GCS outage registers again
// within seconds), has its lineage/<node>/ and objects/<node>/ deleted once it has been
// gone SweepGrace (default DefaultSweepGrace, 10 minutes: adoptions start when the
// membership reports the owner gone, within seconds, and read the pages at once). A scan
// of both tables when the head starts and every sweepScanEvery finds the nodes that left
// while no head watched. Bounded: at most sweepMaxNodes nodes' records go per sweep (two
// prefix deletes each, in one transaction), one sweep every SweepEvery; the scans read
// the two tables once an hour.

// Defaults of Config.SweepEvery and Config.SweepGrace.
const (
	DefaultSweepEvery = time.Minute
	DefaultSweepGrace = 10 * time.Minute
)

const (
	sweepScanEvery = time.Hour
	sweepMaxNodes  = 64
)

// goneSweeper deletes the lineage pages and object table entries of nodes gone for a
// grace period. Its state is owned by its run loop.
type goneSweeper struct {
	a       *Agent
	every   time.Duration
	grace   time.Duration
	live    map[string]bool      // nodes/ now
	gone    map[string]time.Time // node -> when it was first seen gone
	loaded  bool                 // the first list of nodes/ arrived
	scanned time.Time            // the last scan of lineage/ and objects/
	updates chan tableUpdate
}

func newGoneSweeper(a *Agent, every, grace time.Duration) *goneSweeper {
	return &goneSweeper{a: a, every: every, grace: grace, live: map[string]bool{}, gone: map[string]time.Time{},
		updates: make(chan tableUpdate, 16)}
}

func (s *goneSweeper) run(ctx context.Context) {
	defer s.a.wg.Done()
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		mirror(mctx, s.a.store, gcs.NodesPrefix, s.updates, s.a.log)
	}()
	defer func() {
		cancel()
		<-done
	}()
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case u := <-s.updates:
			s.apply(u, time.Now())
		case <-t.C:
			if s.loaded {
				s.sweep(ctx, time.Now())
			}
		}
	}
}

// apply folds a change of the node table in: a node whose record went is gone from now.
func (s *goneSweeper) apply(u tableUpdate, now time.Time) {
	if u.reset {
		was := s.live
		s.live = map[string]bool{}
		for _, kv := range u.kvs {
			if id, ok := gcs.TrimKey(gcs.NodesPrefix, kv.Key); ok {
				s.live[id] = true
				delete(s.gone, id)
			}
		}
		for id := range was {
			if !s.live[id] {
				s.markGone(id, now)
			}
		}
	}
	for _, ev := range u.events {
		id, ok := gcs.TrimKey(gcs.NodesPrefix, ev.KV.Key)
		if !ok {
			continue
		}
		if ev.Type == gcs.EventPut {
			s.live[id] = true
			delete(s.gone, id) // back (a new lease after an outage)
		} else {
			delete(s.live, id)
			s.markGone(id, now)
		}
	}
	s.loaded = true
}

func (s *goneSweeper) markGone(id string, now time.Time) {
	if _, ok := s.gone[id]; !ok {
		s.gone[id] = now
	}
}

// sweep scans for owners no head saw leave (at the first sweep and every sweepScanEvery),
// then deletes the records of at most sweepMaxNodes nodes gone for longer than the grace.
func (s *goneSweeper) sweep(ctx context.Context, now time.Time) {
	if s.scanned.IsZero() || now.Sub(s.scanned) >= sweepScanEvery {
		if s.scan(ctx, now) {
			s.scanned = now
		}
	}
	var due []string
	for id, at := range s.gone {
		if s.live[id] {
			delete(s.gone, id)
			continue
		}
		if now.Sub(at) >= s.grace {
			due = append(due, id)
		}
	}
	sort.Slice(due, func(i, j int) bool { return s.gone[due[i]].Before(s.gone[due[j]]) })
	for _, id := range due[:min(len(due), sweepMaxNodes)] {
		cctx, cancel := context.WithTimeout(ctx, opTimeout)
		_, _, err := s.a.store.Txn(cctx, nil, []gcs.Op{
			{Kind: gcs.OpDeletePrefix, Key: gcs.LineageOf(id)},
			{Kind: gcs.OpDeletePrefix, Key: gcs.ObjectsOf(id)},
		})
		cancel()
		if err != nil {
			s.a.log.Debug("agent: delete a gone node's lineage and object records", "node", id, "err", err)
			return // the next sweep tries again
		}
		s.a.log.Debug("agent: deleted the lineage and object records of a node gone", "node", id, "for", now.Sub(s.gone[id]))
		delete(s.gone, id)
	}
}

// scan lists lineage/ and objects/ and counts every owner that is not live as gone from
// now (unless known gone already). It reports whether both lists were read.
func (s *goneSweeper) scan(ctx context.Context, now time.Time) bool {
	for _, prefix := range []string{gcs.LineagePrefix, gcs.ObjectsPrefix} {
		cctx, cancel := context.WithTimeout(ctx, 4*opTimeout)
		kvs, _, err := s.a.store.List(cctx, prefix)
		cancel()
		if err != nil {
			s.a.log.Debug("agent: scan for the records of gone nodes", "prefix", prefix, "err", err)
			return false
		}
		for _, kv := range kvs {
			rest, _ := gcs.TrimKey(prefix, kv.Key)
			node, _, ok := strings.Cut(rest, "/")
			if !ok || node == "" || s.live[node] {
				continue
			}
			s.markGone(node, now)
		}
	}
	return true
}
