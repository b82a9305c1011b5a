package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/ask"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/netx"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/lineage"
)

// RecoverArg recovers an argument of an actor call (spec) running in this process that
// could not be read because its object is lost (err matches ErrObjectLost: its node died,
// or its spill file is gone): it asks the call's caller (spec.Owner), which holds the
// argument until the call is answered, to recreate the object (ResolveObject with Lost:
// an object the caller owns is recreated from its lineage, as a task's lost argument is),
// waits for the new value and reads it. It returns the error to fail the call with when
// the object cannot be recreated (made by Put; borrowed by the caller from another owner,
// which this runtime cannot reach from the call; freed), its recreation failed (the
// error says why), or the caller did not answer within reresolveWait.
//
// A task's attempt fails on a lost argument instead, and its owner recreates the argument
// and runs it again (recoverArgs); an actor call cannot run again (the calls its caller
// made after it are ordered after it, and an exactly-once actor logs its outcome), so it
// waits, and the calls after it wait with it, as in Ray (whose actor task pulls its
// argument until the owner recreated it).
func (c *Core) RecoverArg(ctx context.Context, spec *pb.TaskSpec, a *pb.Arg, err error) ([]byte, error) {
	if !errors.Is(err, ErrObjectLost) || spec.GetOwner() == nil || !a.IsRef || a.NodeId == "" {
		return nil, err
	}
	id, idErr := ids.ObjectIDFromBytes(a.ObjectId)
	if idErr != nil {
		return nil, err
	}
	owner := actor.NewPID(spec.Owner.Address, spec.Owner.Id)
	lostNode := a.NodeId
	// A message to a process that died is dropped, not failed: while the call waits, a
	// caller whose address refuses connections is taken for gone, and the call fails
	// instead of holding up the actor's other calls for reresolveWait.
	wctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go func() {
		t := time.NewTicker(callerCheck)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
				if netx.Refused(owner.Address, time.Second) {
					stop(errCallerGone)
					return
				}
			}
		}
	}()
	// As a Get: a bounded number of recoveries (a new copy may be lost again).
	for range lineage.MaxReconstructions {
		call := ask.StartReplyTo(c.root, owner, func(reply *actor.PID) any {
			return &pb.ResolveObject{ObjectId: id[:], ReplyTo: &pb.PID{Address: reply.Address, Id: reply.Id}, Lost: true, LostNode: lostNode}
		})
		res, werr := call.Wait(wctx, reresolveWait)
		if werr != nil && context.Cause(wctx) == errCallerGone {
			werr = errCallerGone
		}
		m, ok := res.(*pb.ObjectResolved)
		switch {
		case werr != nil || !ok:
			return nil, fmt.Errorf("%w (its caller %s was asked to recreate it and did not answer: %v)", err, pidKey(spec.Owner), werr)
		case m.Unknown:
			return nil, fmt.Errorf("%w (and its caller has freed it)", err)
		case m.Error != nil:
			return nil, fmt.Errorf("%w: %s: recreating it failed: %s", ErrObjectLost, id, m.Error.Message)
		case !m.InStore:
			return m.Data, nil
		case m.NodeId == lostNode:
			// Not recreated: its caller cannot (a Put's object, or one it borrowed).
			return nil, err
		}
		b, ferr := c.fetch(wctx, id, ids.NodeID(m.NodeId), m.Size)
		if ferr == nil || !errors.Is(ferr, ErrObjectLost) {
			return b, ferr
		}
		err, lostNode = ferr, m.NodeId
	}
	return nil, err
}

// callerCheck is how often RecoverArg checks that the caller it waits for still listens.
const callerCheck = 2 * time.Second

var errCallerGone = errors.New("its process is gone (its address refuses connections)")
