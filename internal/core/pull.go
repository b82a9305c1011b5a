package core

import (
	"context"
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/ids"
	"github.com/ray-go/ray/objects/transfer"
)

// pullOptions: 1 MiB chunks, several in flight, no s2 (on loopback and fast links s2 costs
// more than it saves: objects/transfer's benchmark).
var pullOptions = transfer.Options{InFlight: 8}

// pull reads an object from another node's store shard, in chunks (package
// objects/transfer). A missing or unreadable object is ErrObjectLost.
func (c *Core) pull(ctx context.Context, s *actor.PID, id ids.ObjectID, node ids.NodeID) ([]byte, error) {
	b, err := transfer.Pull(ctx, c.root, s, id, pullOptions)
	switch {
	case err == nil:
		return b, nil
	case errors.Is(err, transfer.ErrNotFound), errors.Is(err, transfer.ErrUnreadable), errors.Is(err, transfer.ErrCorrupt):
		return nil, fmt.Errorf("%w: %s on node %s: %v", ErrObjectLost, id, node, err)
	}
	return nil, fmt.Errorf("ray: reading object %s from node %s: %w", id, node, err)
}
