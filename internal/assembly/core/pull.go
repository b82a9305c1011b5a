package core

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/netx"
	"github.com/ray-go/ray/objects/transfer"
)

// pullOptions: 1 MiB chunks, several in flight, no s2 (on loopback and fast links s2 costs
// more than it saves: objects/transfer's benchmark).
var pullOptions = transfer.Options{InFlight: 8}

// pull reads an object from another node: over the node's data stream when it has one
// (TCP, mutual TLS unless the cluster is --insecure; an object above 32 MiB over several
// TLS connections at once, transfer.FetchOptions.Streams' default), else, or if the
// stream cannot be reached, in chunks through its store shard grain (~0.6 GB/s). Both check a CRC-32C of the whole object. A
// missing, unreadable or corrupt object is ErrObjectLost. size is the object's size as its
// owner recorded it (0: unknown): a node that announces another is corrupt, and nothing
// is allocated on its word alone.
func (c *Core) pull(ctx context.Context, s *actor.PID, id ids.ObjectID, node ids.NodeID, size int64) ([]byte, error) {
	var b []byte
	err := errNoStream
	if sock := c.cfg.Cluster.DataSocket(node); sock != "" {
		// The same machine: the node's Unix socket, no TLS, no TCP. Any failure there
		// (a container of this host without that file, a node gone) falls back to the
		// TCP stream and its checks below.
		if b, err = transfer.Fetch(ctx, sock, id, transfer.FetchOptions{Size: size}); err == nil {
			return b, nil
		}
		err = errNoStream
	}
	if addr := c.cfg.Cluster.DataAddress(node); addr != "" {
		b, err = transfer.Fetch(ctx, addr, id, transfer.FetchOptions{Size: size, TLS: c.cfg.DataTLS})
	}
	if err != nil && !lost(err) && !errors.Is(err, syscall.ECONNREFUSED) && addrOf(c, node) != "" && netx.Refused(addrOf(c, node), time.Second) {
		// A pooled connection broke (reset, EOF) and nothing listens there any more.
		err = fmt.Errorf("%w (and a new connection is refused)", err)
		err = errors.Join(err, syscall.ECONNREFUSED)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		// Nothing listens at the node's data address: its process is gone, and the bytes
		// with it (the grain pull would only wait for its timeout).
		return nil, fmt.Errorf("%w: %s: node %s does not answer (its process is gone): %v", ErrObjectLost, id, node, err)
	}
	if err != nil && !lost(err) && ctx.Err() == nil {
		// The grain pull waits up to a chunk timeout (30 s) for a shard that does not
		// answer, and messages to a dead process are dropped, not failed: a node the view
		// no longer counts, or whose shard's address refuses connections, is gone.
		if !c.cfg.Cluster.Alive(node) || (s.Address != "" && netx.Refused(s.Address, time.Second)) {
			return nil, fmt.Errorf("%w: %s: node %s is gone (%v)", ErrObjectLost, id, node, err)
		}
		opt := pullOptions
		opt.Size = size
		b, err = transfer.Pull(ctx, c.root, s, id, opt)
	}
	switch {
	case err == nil:
		return b, nil
	case lost(err):
		return nil, fmt.Errorf("%w: %s on node %s: %v", ErrObjectLost, id, node, err)
	case ctx.Err() == nil && !c.cfg.Cluster.Alive(node):
		return nil, fmt.Errorf("%w: %s: node %s is gone: %v", ErrObjectLost, id, node, err)
	}
	return nil, fmt.Errorf("ray: reading object %s from node %s: %w", id, node, err)
}

var errNoStream = errors.New("no data stream")

func addrOf(c *Core, node ids.NodeID) string { return c.cfg.Cluster.DataAddress(node) }

func lost(err error) bool {
	return errors.Is(err, transfer.ErrNotFound) || errors.Is(err, transfer.ErrUnreadable) || errors.Is(err, transfer.ErrCorrupt)
}
