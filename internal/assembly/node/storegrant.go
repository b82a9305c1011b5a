package node

import (
	"log/slog"
	"time"

	"github.com/ray-go/ray/objects/shard"
	"github.com/ray-go/ray/tasks/machine"
)

// storeAskTimeout bounds the wait of the store's mailbox for the machine ledger's answer
// to an ask for object store memory (a local socket's round trip; the agent answers at
// once). No answer: nothing granted, and the store spills.
const storeAskTimeout = 5 * time.Second

// machineGrant is the store's grant of the machine's object store budget, held from the
// ledger of the node agent that started this process (tasks/machine): the stores of all
// the machine's worker processes share the budget of rayctl start --object-store-memory,
// as Ray's one plasma store per node does, instead of each keeping that much.
type machineGrant struct {
	c   *machine.Client
	log *slog.Logger
}

func (g machineGrant) Take(n int64) int64 {
	got, err := g.c.StoreAsk(n, storeAskTimeout)
	if err != nil {
		g.log.Warn("node: the machine's object store budget: an ask was not answered; the store spills what it has no grant for", "bytes", n, "err", err)
	}
	return got
}

func (g machineGrant) Give(n int64) {
	_ = g.c.StoreGive(n) // a closed connection gives back everything
}

// storeGrant is the store's Grant (shard.Config.Grant): the machine ledger's when this
// process has one and its agent shares the machine's store budget there, else nil (the
// store's budget is its own).
func (n *Node) storeGrant(logger *slog.Logger) shard.Grant {
	if n.machine == nil || n.machine.StoreTotal() <= 0 || n.cfg.ObjectStoreBytes <= 0 {
		return nil
	}
	return machineGrant{c: n.machine, log: logger}
}
