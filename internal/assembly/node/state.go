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

// archiveTasks leaves this process's task records in the GCS as it stops
// (taskstate.Archive), for the state API to answer from after it exited: an ended job's
// tasks, a worker process's. Not in local mode, whose GCS stops with it. Bounded by
// archiveWait: a stop does not wait on a slow GCS for a history.
func (n *Node) archiveTasks(ctx context.Context) {
	if n.Core == nil || n.store == nil || n.cfg.Role == RoleLocal {
		return
	}
	actx, cancel := context.WithTimeout(ctx, archiveWait)
	defer cancel()
	if err := taskstate.Archive(actx, n.store, n.cfg.Job, n.ID, n.Core); err != nil {
		n.cfg.Logger.Warn("node: could not keep this process's task records in the GCS; `rayctl list tasks` will not show them once it has exited",
			"err", err)
	}
}

// archiveWait bounds archiveTasks.
const archiveWait = 3 * time.Second
