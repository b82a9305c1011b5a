package taskstate

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
)

// An answer from a process the asker did not list (its own Server's, when it read its own
// records directly; one that joined the job after the node table was read) is left out:
// taking it counted the asker's tasks twice (ray.ListTasks from a driver of a cluster).
func TestAskTakesOnlyListedProcesses(t *testing.T) {
	store := memstore.New(memstore.Options{})
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Two processes answer every query: "listed" and "other" (which answers first).
	watch := store.Watch(ctx, gcs.StateRequestsPrefix, 0) // before the query is put
	go func() {
		for resp := range watch {
			for _, ev := range resp.Events {
				var req Request
				if ev.Type != gcs.EventPut || json.Unmarshal(ev.KV.Value, &req) != nil {
					continue
				}
				for _, node := range []string{"other", "listed"} {
					store.Put(ctx, partsPrefix(req.ID)+node+"/000000", []byte(node), gcs.LeaseID(req.Lease))
					store.Put(ctx, endsPrefix(req.ID)+node, []byte(strconv.Itoa(1)), gcs.LeaseID(req.Lease))
				}
			}
		}
	}()
	answers, missing, err := ask(ctx, store, Request{Job: "j"}, map[string]bool{"listed": true}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(answers) != 1 || string(answers["listed"]) != "listed" || len(missing) != 0 {
		t.Fatalf("answers %q, missing %v; want only the listed process's", answers, missing)
	}
}
