package agent

import (
	"context"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
)

// Dead actors' records (head only).
//
// An actor's record (actors/<id>) stays after it died, so that `rayctl list actors`, the
// dashboard and a handle's calls say it is DEAD and why (its name, method log and
// checkpoints go when it dies: actors.publishOps). Kept for ever, a cluster that creates
// and ends actors without end grows the table, and every read of it, without bound. Like
// Ray's GCS (maximum_gcs_destroyed_actor_cached_count), the head keeps at most
// Config.MaxDeadActors dead actors' records, detached or not, and deletes the oldest dead
// beyond (by when they died); a record is deleted only if it did not change since it was
// seen DEAD (a guarded transaction), so a live or restarting actor's never is. A handle to
// an actor whose record went says there is no such actor. At most deadActorPruneMax
// records go per pass, one pass at most every deadActorPruneEvery.

// DefaultMaxDeadActors is the default of Config.MaxDeadActors. It is lower than Ray's
// 100,000: every listing of the actor table (the dashboard, rayctl list actors) reads
// every record.
const DefaultMaxDeadActors = 10_000

const (
	deadActorPruneMax   = 1000
	deadActorPruneEvery = time.Second
)

type deadActor struct {
	at  int64 // when it died (unix ms; 0 if its record does not say)
	rev int64 // the record's revision when it was seen dead
}

// trackDead keeps the head's list of dead actors' records current with kv, an actors/
// record as read or watched.
func (m *workerManager) trackDead(kv gcs.KV) {
	if !m.a.cfg.Head {
		return
	}
	info := &pb.ActorInfo{}
	if err := proto.Unmarshal(kv.Value, info); err != nil || lifecycle.Phase(info.GetPhase()) != lifecycle.Dead {
		delete(m.dead, kv.Key)
		return
	}
	var at int64
	if h := info.GetHistory(); len(h) > 0 {
		at = h[len(h)-1].GetUnixMs()
	}
	m.dead[kv.Key] = deadActor{at: at, rev: kv.ModRev}
}

// pruneDead deletes the records of the oldest dead actors beyond the cap.
func (m *workerManager) pruneDead(ctx context.Context, now time.Time) {
	limit := m.a.cfg.MaxDeadActors
	switch {
	case limit == 0:
		limit = DefaultMaxDeadActors
	case limit < 0:
		limit = 0
	}
	if len(m.dead) <= limit || now.Sub(m.deadPruned) < deadActorPruneEvery {
		return
	}
	m.deadPruned = now
	keys := make([]string, 0, len(m.dead))
	for k := range m.dead {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := m.dead[keys[i]], m.dead[keys[j]]
		if a.at != b.at {
			return a.at < b.at
		}
		return keys[i] < keys[j]
	})
	n := min(len(keys)-limit, deadActorPruneMax)
	deleted := 0
	for _, key := range keys[:n] {
		d := m.dead[key]
		cctx, cancel := context.WithTimeout(ctx, opTimeout)
		ok, _, err := m.a.store.Txn(cctx, []gcs.Cmp{{Key: key, ModRev: d.rev}}, []gcs.Op{{Kind: gcs.OpDelete, Key: key}})
		cancel()
		if err != nil {
			m.a.log.Debug("agent: delete a dead actor's record", "key", key, "err", err)
			break // the next pass tries again
		}
		if ok {
			deleted++
		}
		delete(m.dead, key) // deleted, or changed since (the mirror brings it back if still dead)
	}
	if deleted > 0 {
		m.a.log.Info("agent: deleted the records of the oldest dead actors beyond the cap", "deleted", deleted, "max_dead_actors", limit)
	}
}
