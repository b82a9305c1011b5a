package etcdstore

import (
	"context"
	"fmt"
	"time"

	etcdpb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// Defragmentation. etcd's bbolt file never shrinks by itself: compaction (gcs.Compactor,
// auto-compaction) frees pages inside it, later writes reuse them, but a file that grew
// during a burst (a big job's lineage, a soak's method logs) keeps its size, and the quota
// (QuotaBytes) counts the file, not what is in use. So the embedded server checks its file
// every DefragEvery and rewrites it (bbolt's defragmentation: a copy of the live pages)
// when it is at least DefragMinBytes and at least half free. The copy blocks the member's
// writes while it runs (about 1 s per 100-200 MiB live on this machine's disk), which is
// why it waits for that much to gain. After a defragmentation that brings the file under
// the quota again, a NOSPACE alarm (writes refused with gcs.ErrNoSpace once the quota was
// reached) is disarmed: the GCS takes writes again without an operator.

// Defaults of the defragmentation (EmbedConfig.DefragEvery, DefragMinBytes).
const (
	DefaultDefragEvery    = time.Minute
	DefaultDefragMinBytes = 64 << 20
	// DefaultAlarmDefragEvery: see EmbedConfig.AlarmDefragEvery.
	DefaultAlarmDefragEvery = 5 * time.Minute
)

// DefragResult is what one check did.
type DefragResult struct {
	Before, After int64 // the file's size (bytes) before and after
	InUse         int64 // bytes in use before
	Ran           bool  // the file was rewritten
	Disarmed      bool  // a NOSPACE alarm was disarmed after it
}

// Defrag rewrites the member's database file when it is sparse (at least DefragMinBytes,
// at most half in use), when a NOSPACE alarm is on (at most every alarmDefragEvery), or
// always with force, and then disarms a NOSPACE alarm if the file is under 90% of the
// quota again. The background check calls it every DefragEvery; calls must not overlap
// (one goroutine, or the caller's own).
func (e *Embedded) Defrag(ctx context.Context, force bool) (DefragResult, error) {
	s := e.etcd.Server
	be := s.Backend()
	r := DefragResult{Before: be.Size(), InUse: be.SizeInUse()}
	r.After = r.Before
	alarmed := false
	for _, a := range s.Alarms() {
		alarmed = alarmed || a.Alarm == etcdpb.AlarmType_NOSPACE
	}
	// At the quota, pages freed by deletes and compaction are not even counted free
	// (bbolt counts them from the next write on, and writes are refused): a rewrite is the
	// only way back, tried at most every AlarmDefragEvery. The first try may come before
	// etcd has removed compacted revisions (it does that in the background); it finds
	// little to gain, and the next one, AlarmDefragEvery later, more.
	retry := alarmed && time.Since(e.lastAlarmDefrag) >= e.cfg.AlarmDefragEvery
	if force || retry || (r.Before >= e.cfg.DefragMinBytes && 2*r.InUse <= r.Before) {
		if alarmed {
			e.lastAlarmDefrag = time.Now()
		}
		if err := s.Defragment(); err != nil {
			return r, fmt.Errorf("etcdstore: defragment: %w", err)
		}
		r.Ran, r.After = true, s.Backend().Size()
	}
	for _, a := range s.Alarms() {
		if a.Alarm != etcdpb.AlarmType_NOSPACE || r.After >= e.cfg.QuotaBytes*9/10 {
			continue
		}
		_, err := s.Alarm(ctx, &etcdpb.AlarmRequest{Action: etcdpb.AlarmRequest_DEACTIVATE, MemberID: a.MemberID, Alarm: a.Alarm})
		if err != nil {
			return r, fmt.Errorf("etcdstore: disarm the space alarm: %w", err)
		}
		r.Disarmed = true
	}
	return r, nil
}

// defragLoop runs Defrag every DefragEvery until stop is closed.
func (e *Embedded) defragLoop(stop <-chan struct{}) {
	t := time.NewTicker(e.cfg.DefragEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r, err := e.Defrag(ctx, false)
		cancel()
		switch {
		case err != nil:
			e.cfg.Logger.Warn("gcs: checking the database file for defragmentation failed", "err", err)
		case r.Ran || r.Disarmed:
			e.cfg.Logger.Info("gcs: database file defragmented", "before", r.Before, "in use", r.InUse, "after", r.After, "space alarm disarmed", r.Disarmed)
		}
	}
}
