package node

import (
	"context"
	"time"

	"github.com/ray-go/ray/internal/assembly/taskstate"
)

// serveState answers the state API's queries for this node's runtime (taskstate.Server):
// `rayctl list tasks`, `rayctl timeline` and ray.ListTasks ask every process of a job
// through the GCS, and each answers from its own task records; and runs the collections
// other processes ask for (askOthersToCollect).
func (n *Node) serveState() {
	ctx, cancel := context.WithCancel(context.Background())
	n.stateStop, n.stateDone = cancel, make(chan struct{})
	srv := &taskstate.Server{Store: n.store, Node: n.ID, Job: n.cfg.Job, Core: n.Core, Logger: n.cfg.Logger}
	go func() {
		defer close(n.stateDone)
		srv.Run(ctx)
	}()
}

// askOthersToCollect asks the cluster's other processes for a garbage collection
// (taskstate.AskCollect): this runtime waits for something a handle dropped there may
// hold (core.Config.AskOthersToCollect).
func (n *Node) askOthersToCollect() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := taskstate.AskCollect(ctx, n.store, n.ID); err != nil {
		n.cfg.Logger.Debug("node: asking the other processes for a collection failed", "err", err)
	}
}
