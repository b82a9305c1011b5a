package agent

import (
	"context"
	"errors"
	"time"
	"unique"

	"github.com/ray-go/ray/actors"
	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/pb"
)

// The actors of a driver that died with its job (head only).
//
// A non-detached actor fate-shares with its owner (lifecycle.OwnerDied). The step is
// taken by the actor manager of the job's own processes (actors.Manager.OwnerGone, on
// the membership's news that the owner's process is surely gone): a manager places and
// steps only its job's actors, and lives in the job's driver and worker processes. When a
// driver dies, those worker processes are the ones left to take it, and they stop when
// the job ends. A direct driver's job ends only after its jobalive key went and its address
// refuses connections, by which time the membership has told them. But a job run by
// `rayctl job submit` ends as soon as the head sees its driver's process exit (settleJob:
// STOPPED by `rayctl job stop`, FAILED when it was killed), a few seconds before the
// driver's lease lapses: its worker processes were stopped first, no process of the job
// was left to step its actors, and the actors the driver created stayed ALIVE for ever
// (in the actor table, rayctl list and summary, ray_actors).
//
// So the head, which keeps every actor that is not dead in its mirror of the actor table
// (putOwned), ends the non-detached actors of an ended job (SUCCEEDED, FAILED, STOPPED)
// whose owner is the job's driver (JobInfo.driver_address): a job ends when its driver's
// process is surely gone (the head saw it exit, or its address refused connections, or
// confirmGrace passed without it writing its key again; the job's worker processes stop
// then too), or when its driver called ray.Shutdown (which ends them itself). Each is
// stepped OwnerDied through the actor table, with its revision check, so a manager of the
// job stepping it at the same time does no harm; a step that failed (the GCS) is tried
// again endRetry later, and an actor whose record reaches the mirror after its job ended
// is stepped when it does. Actors that worker processes own end with those processes
// (node.Stop: releaseOwnedActors) or, when one is killed, by the job's other processes;
// detached actors are never stepped here (they outlive their job).

// endRetry is how long the head waits before stepping an actor of a dead driver again.
const endRetry = 5 * time.Second

// putOwned keeps the non-detached actor of record info, at key, that is not dead: its job
// and its owner's address (interned: the many actors of one owner share one copy).
func (m *workerManager) putOwned(key string, info *pb.ActorInfo) {
	owner := info.GetOwner().GetAddress()
	if owner == "" {
		return
	}
	job := unique.Make(info.GetJobId()).Value()
	set := m.owned[job]
	if set == nil {
		set = map[string]string{}
		m.owned[job] = set
	}
	set[key] = unique.Make(owner).Value()
	m.actorJob[key] = job
}

// endDriverActors steps OwnerDied the actors in owned whose job ended and whose owner is
// the job's driver, off the manager's goroutine (GCS writes), each at most every endRetry.
// Their records, Dead, then leave owned through the mirror.
func (m *workerManager) endDriverActors(ctx context.Context, now time.Time) {
	for job, set := range m.owned {
		rec, ok := m.jobs[job]
		if !ok || !IsTerminal(rec.info.GetState()) || rec.info.GetDriverAddress() == "" {
			continue
		}
		driver := rec.info.GetDriverAddress()
		var keys []string
		for key, owner := range set {
			if owner != driver {
				continue
			}
			if at, ok := m.ending[key]; ok && now.Sub(at) < endRetry {
				continue
			}
			m.ending[key] = now
			keys = append(keys, key)
		}
		if len(keys) == 0 {
			continue
		}
		m.a.log.Info("agent: the job's driver is gone; its actors die with it (owner died)", "job", job, "actors", len(keys))
		m.enders.Add(1)
		go func() {
			defer m.enders.Done()
			table := actors.Table{Store: m.a.store}
			for _, key := range keys {
				id, _ := gcs.TrimKey(gcs.ActorsPrefix, key)
				sctx, cancel := context.WithTimeout(ctx, opTimeout)
				_, _, _, err := table.Step(sctx, id, lifecycle.OwnerDied{})
				cancel()
				if err != nil && !errors.Is(err, lifecycle.ErrInvalidTransition) && ctx.Err() == nil {
					m.a.log.Warn("agent: end an actor of a dead driver", "job", job, "actor", id, "err", err)
				}
			}
		}()
	}
}
