package agent

import (
	"context"
	"log/slog"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
)

// tableUpdate is what a mirror sends its run loop: the whole table (reset) or the changes
// since the last update.
type tableUpdate struct {
	prefix string
	reset  bool     // kvs is every key under prefix now; forget what was known before
	kvs    []gcs.KV // when reset
	events []gcs.Event
}

// mirror keeps a run loop's copy of one table current: it lists prefix, sends the list,
// then watches from the list's revision and sends each batch of changes. A failed watch
// (ErrCompacted after falling behind, a lost connection) is answered by listing again.
// It returns when ctx is done. out is the run loop's channel; every send also selects on
// ctx, so a stopped loop never blocks it.
func mirror(ctx context.Context, store gcs.Store, prefix string, out chan<- tableUpdate, log *slog.Logger) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		lctx, cancel := context.WithTimeout(ctx, opTimeout)
		kvs, rev, err := store.List(lctx, prefix)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Warn("agent: list failed; retrying", "prefix", prefix, "err", err, "in", backoff)
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		select {
		case out <- tableUpdate{prefix: prefix, reset: true, kvs: kvs}:
		case <-ctx.Done():
			return
		}
		wctx, wcancel := context.WithCancel(ctx)
		failed := false
		for resp := range store.Watch(wctx, prefix, rev+1) {
			if resp.Err != nil {
				if ctx.Err() == nil {
					log.Warn("agent: watch ended; listing again", "prefix", prefix, "err", resp.Err)
				}
				failed = true
				break
			}
			backoff = 100 * time.Millisecond
			select {
			case out <- tableUpdate{prefix: prefix, events: resp.Events}:
			case <-ctx.Done():
			}
		}
		wcancel()
		if failed && !sleep(ctx, backoff) {
			return
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// sleep waits d or until ctx is done; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
