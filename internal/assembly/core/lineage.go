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
// recordDelay after submission, and only records written are deleted from the GCS when
// they go (Released.Recorded): a short-lived task costs the lineage nothing. The price is
// recordDelay more of the window in which a task submitted just before its owner died has
// no record in the GCS (a packer seals pages a few ms later still).

// recordDelay is how long a task's lineage record must live before the shard writes it.
const recordDelay = 40 * time.Millisecond

// recordLineage asks a shard to write the records of its tasks submitted so far (done,
// if set, is closed once it has).
type recordLineage struct{ done chan struct{} }

// toRecord notes a task whose record may need writing.
func (s *shard) toRecord(tid ids.TaskID) {
	if s.c.cfg.Lineage == nil {
		return
	}
	s.unrecorded = append(s.unrecorded, tid)
	if !s.recordTimer {
		s.recordTimer = true
		time.AfterFunc(recordDelay, func() { s.send(recordLineage{}) })
	}
}

// recordLineage writes the records of the tasks noted that still live.
func (s *shard) recordLineage() {
	s.recordTimer = false
	c := s.c
	for _, tid := range s.unrecorded {
		c.refs.Record(tid, func(spec *pb.TaskSpec) {
			if err := c.cfg.Lineage.Record(spec); err != nil {
				c.cfg.Logger.Warn("ray: task runs without a lineage record in the GCS; it cannot be reconstructed if its owner dies", "task", tid, "err", err)
			}
		})
	}
	clear(s.unrecorded)
	s.unrecorded = s.unrecorded[:0]
}

// FlushLineage has every shard write the lineage records of the tasks submitted so far
// (they still need the packer's and the writer's flush to be durable).
func (c *Core) FlushLineage(ctx context.Context) error {
	for _, s := range c.shards {
		done := make(chan struct{})
		s.send(recordLineage{done: done})
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
