package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/objects"
)

// ErrClusterLost: the runtime lost its cluster for good (Lose): its GCS has not answered
// for longer than the process waits (a driver's node.Config.GCSTimeout). Every call that
// was pending then, and every later one, fails with an error that wraps it.
var ErrClusterLost = errors.New("ray: lost the cluster")

// lostState is the runtime's loss of its cluster (Lose): ch is closed once err is set.
// The paths that wait select on ch (no lock); submissions look at it once.
type lostState struct {
	once sync.Once
	ch   chan struct{}
	err  error
}

// gcsCall runs f, a call that waits on the GCS with ctx (the state API: an actor's
// record, a name's lookup, a kill), ended when the runtime is lost (Lose): a GCS that is
// gone is waited for by its client until ctx ends, and a program with no deadline waited
// for good after its Gets had failed with ErrClusterLost. A call made after the loss fails
// at once. The error is then the loss's (it wraps ErrClusterLost), with f's own after it.
func (c *Core) gcsCall(ctx context.Context, f func(context.Context) error) error {
	if err := c.Lost(); err != nil {
		return err
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.lost.ch:
			cancel()
		case <-cctx.Done():
		}
	}()
	err := f(cctx)
	if lost := c.Lost(); err != nil && lost != nil && ctx.Err() == nil {
		return fmt.Errorf("%w (%v)", lost, err)
	}
	return err
}

// lostMsg tells a shard the runtime lost its cluster.
type lostMsg struct{}

// Lose fails the runtime for good because its cluster is gone (err should wrap
// ErrClusterLost and say why, and what to do): every pending task and actor call fails with
// it, every Get and generator read still waiting returns it, and every later submission
// fails with it. Objects already ready stay readable, and Wait returns them as ready (see
// TaskContext.Wait). An actor call fails as a system error, not as the actor's death: the
// actor may live on in the cluster, this runtime only lost its way to it. The decision is
// the caller's (package node: a driver whose GCS has not answered for Config.GCSTimeout);
// the first call wins, later ones do nothing.
func (c *Core) Lose(err error) {
	if err == nil {
		err = ErrClusterLost
	}
	c.lost.once.Do(func() {
		c.lost.err = err
		close(c.lost.ch)
		for _, s := range c.shards {
			s.send(lostMsg{})
		}
		c.callers.Range(func(_, v any) bool {
			c.failCaller(v.(*actorCaller), err, pb.ErrorInfo_SYSTEM) // no answer comes
			return true
		})
	})
}

// lostValue reports whether v is a failure the loss of the cluster (Lose) made: a result
// that never came and never will (Wait does not count it as ready). The wire form has no
// kind of its own for it, as the root package's TaskError.Is(ErrClusterLost) knows.
func lostValue(v objects.Value) bool {
	return v.Err != nil && strings.Contains(v.Err.Message, ErrClusterLost.Error())
}

// Lost returns the error the runtime was lost with (Lose), nil while it was not.
func (c *Core) Lost() error {
	select {
	case <-c.lost.ch:
		return c.lost.err
	default:
		return nil
	}
}

// lostTask is the failed result of p's current attempt in a lost runtime.
func (c *Core) lostTask(p *pending) *pb.TaskResult {
	return &pb.TaskResult{TaskId: p.tid[:], Attempt: p.spec.Attempt, Error: &pb.ErrorInfo{
		Kind: pb.ErrorInfo_SYSTEM, Function: p.spec.Function, TaskId: p.tid[:], NodeId: string(c.cfg.Node),
		Message: c.lost.err.Error()}}
}

// failLost fails every task of the shard (the loop's lostMsg): a task being placed,
// parked, queued for a lease or running on another node ends now, without a retry; a
// result that comes later is stale. Actor calls are the callers' (Lose).
func (s *shard) failLost() {
	var all []*pending
	for _, p := range s.tasks {
		if p.actor == nil {
			all = append(all, p)
		}
	}
	for _, p := range all {
		p.spec.MaxRetries = p.spec.Attempt // no retry: there is no cluster to run it
		s.unqueue(p)
		s.onResult(s.c.lostTask(p))
	}
}

// lostSubmit fails a submission made after the runtime was lost (nil: it was not).
func (c *Core) lostSubmit(p *pending, fn string) error {
	select {
	case <-c.lost.ch:
	default:
		return nil
	}
	return c.failTask(p, fn, pb.ErrorInfo_SYSTEM, c.lost.err)
}

// lostActorCall is lostSubmit for an actor call (its result ret).
func (c *Core) lostActorCall(ret ids.ObjectID, tid ids.TaskID, method string) error {
	select {
	case <-c.lost.ch:
	default:
		return nil
	}
	return c.failSubmit(ret, tid, method, pb.ErrorInfo_SYSTEM, c.lost.err)
}
