package core

import (
	"context"
	"time"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// Lineage in the GCS, written late. A task's lineage record (its spec) lives in the
// owner's RefTable from submission on, which is what the owner itself reconstructs from;
// the GCS copy is for the owner's death (borrowers adopt its objects and rerun their tasks
// from it, orphan.go). Most tasks finish and have their results released within
// milliseconds, and then their record is gone before it would reach etcd anyway. So the
// shard writes a task's record to the lineage packer only when it still lives
// recordDelay after submission (between one and two recordDelays: the tasks noted wait in
// two generations, and each tick of the shard's timer writes the older one), and only
// records written are deleted from the GCS when they go (Released.Recorded): a
// short-lived task costs the lineage nothing. The price is up to twice recordDelay more
// of the window in which a task submitted just before its owner died has no record in the
// GCS (a packer seals pages a few ms later still).

// recordDelay is how long a task's lineage record must live before the shard writes it.
const recordDelay = 40 * time.Millisecond

// recordLineage asks a shard to write the records of its tasks noted so far: all of them
// (FlushLineage), or the older generation (the timer's tick). done, if set, is closed
// once it has.
type recordLineage struct {
	done chan struct{}
	all  bool
}

// toRecord notes a task whose record may need writing. The note is the task's ID: a
// pointer would keep the task's pending (and its spec) from the garbage collector for one
// to two recordDelays, though most tasks are released within milliseconds, and each
// collection would mark tens of thousands of them (at 700k tasks/s, 20-30 MB: a fifth of
// the CPU of single_client_tasks_async went to marking). The tick looks the ID up.
func (s *shard) toRecord(p *pending) {
	if s.c.cfg.Lineage == nil {
		return
	}
	s.unrecorded[1] = append(s.unrecorded[1], p.tid)
	s.armRecord()
}

// armRecord starts the timer, unless it runs or no task waits.
func (s *shard) armRecord() {
	if !s.recordTimer && len(s.unrecorded[0])+len(s.unrecorded[1]) > 0 {
		s.recordTimer = true
		time.AfterFunc(s.c.recordDelay, func() { s.send(recordLineage{}) })
	}
}

// recordLineage writes the records that still live of the older generation (all: every
// task noted), and makes the newer one the older.
func (s *shard) recordLineage(all, tick bool) {
	if tick {
		s.recordTimer = false
	}
	s.recordGen(0)
	if all {
		s.recordGen(1)
	}
	s.unrecorded[0], s.unrecorded[1] = s.unrecorded[1], s.unrecorded[0]
	s.armRecord()
}

// recordGen writes the live records of generation g and empties it.
func (s *shard) recordGen(g int) {
	c := s.c
	for _, tid := range s.unrecorded[g] {
		c.refs.RecordIn(ids.ReturnID(tid, 1), nil, func(spec *pb.TaskSpec) {
			if err := c.cfg.Lineage.Record(spec); err != nil {
				c.cfg.Logger.Warn("ray: task runs without a lineage record in the GCS; it cannot be reconstructed if its owner dies", "task", tid, "err", err)
			}
		})
	}
	s.unrecorded[g] = s.unrecorded[g][:0]
}

// FlushLineage has every shard write the lineage records of the tasks submitted so far
// (they still need the packer's and the writer's flush to be durable).
func (c *Core) FlushLineage(ctx context.Context) error {
	for _, s := range c.shards {
		done := make(chan struct{})
		s.send(recordLineage{done: done, all: true})
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.closed:
			return ErrShutdown
		}
	}
	return nil
}
