package node

import (
	"context"

	"github.com/ray-go/ray/internal/assembly/taskstate"
)

// serveState answers the state API's queries for this node's runtime (taskstate.Server):
// `rayctl list tasks`, `rayctl timeline` and ray.ListTasks ask every process of a job
// through the GCS, and each answers from its own task records.
func (n *Node) serveState() {
	ctx, cancel := context.WithCancel(context.Background())
	n.stateStop, n.stateDone = cancel, make(chan struct{})
	srv := &taskstate.Server{Store: n.store, Node: n.ID, Job: n.cfg.Job, Core: n.Core, Logger: n.cfg.Logger}
	go func() {
		defer close(n.stateDone)
		srv.Run(ctx)
	}()
}
