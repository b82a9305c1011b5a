package core

import (
	"context"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/ids"
	"github.com/ray-go/ray/internal/pb"
)

// pull reads an object from another node's store shard.
func (c *Core) pull(ctx context.Context, s *actor.PID, id ids.ObjectID, node ids.NodeID) ([]byte, error) {
	res, err := c.root.RequestFuture(s, &pb.GetObject{ObjectId: id[:]}, fetchTimeout).Result()
	if err != nil {
		return nil, fmt.Errorf("ray: reading object %s from node %s: %w", id, node, err)
	}
	reply, ok := res.(*pb.GetObjectReply)
	if !ok || !reply.Found {
		return nil, fmt.Errorf("%w: %s is not in the store of node %s", ErrObjectLost, id, node)
	}
	return reply.Data, nil
}
