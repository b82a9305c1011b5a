package gcs

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// CompactorConfig configures a Compactor. Zero values take the defaults shown.
type CompactorConfig struct {
	// Interval is how often the revision is checked (default 1 s).
	Interval time.Duration
	// Keep is how many revisions of history stay after a compaction (default 20 000):
	// a watcher further behind than that gets ErrCompacted and lists again.
	Keep int64
	// MinGap is how many new revisions trigger a compaction (default 10 000).
	MinGap int64
	// Window is the most history kept, in time (default 30 s; negative: no limit): history
	// older than that is compacted at least every Window, however few revisions it holds.
	// Revisions alone do not bound the bytes: exactly-once actors write method log
	// batches of ~10 KiB each, and 20 000 of them kept the database file at 200-300 MiB.
	Window time.Duration
	Logger *slog.Logger
}

// Compactor keeps the GCS's history short: at most Keep revisions and at most Window of
// time. etcd keeps every revision of every key until
// a compaction, so a steady workload that writes and deletes (method logs, lineage pages,
// object records) grows the database without bound even though little is live, until
// etcd's quota stops all writes. etcd's own auto-compaction runs every five minutes,
// which at tens of MB/s of log writes is far too late. The compactor compacts to
// (current revision - Keep) whenever MinGap revisions have passed, and to the revision of
// Window ago at least every Window, checked every Interval; the space compaction frees is reused by etcd, so the database file stops
// growing. (Shrinking the file is defragmentation, which blocks the member; it is not
// done here.)
type Compactor struct {
	cfg    CompactorConfig
	store  Store
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	compacted int64
	runs      int
	checks    int // passes that read the revision, compacting or not

	// The run loop's own: revisions seen at each check (oldest first), and when it last
	// compacted.
	seen []revAt
	last time.Time
}

type revAt struct {
	at  time.Time
	rev int64
}

// NewCompactor starts a compactor on store.
func NewCompactor(store Store, cfg CompactorConfig) *Compactor {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Keep <= 0 {
		cfg.Keep = 20_000
	}
	if cfg.MinGap <= 0 {
		cfg.MinGap = 10_000
	}
	if cfg.Window == 0 {
		cfg.Window = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Compactor{cfg: cfg, store: store, cancel: cancel}
	c.wg.Add(1)
	go c.run(ctx)
	return c
}

// Stop stops the compactor.
func (c *Compactor) Stop() {
	c.cancel()
	c.wg.Wait()
}

// Compacted returns the last revision compacted to and how many compactions ran.
func (c *Compactor) Compacted() (rev int64, runs int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.compacted, c.runs
}

// Checks returns how many times the compactor read the store's revision to decide (a test
// waits for a pass that saw its writes).
func (c *Compactor) Checks() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checks
}

func (c *Compactor) run(ctx context.Context) {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := c.once(ctx); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Warn("gcs: compaction failed; will retry", "err", err)
		}
	}
}

// once compacts if enough revisions passed since the last compaction.
func (c *Compactor) once(ctx context.Context) error {
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rev, err := c.store.Revision(tctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	last := c.compacted
	c.checks++
	c.mu.Unlock()
	target := rev - c.cfg.Keep
	byTime := false
	if c.cfg.Window > 0 {
		now := time.Now()
		c.seen = append(c.seen, revAt{now, rev})
		// The newest revision seen at least Window ago: history before it is older.
		i := 0
		for i+1 < len(c.seen) && now.Sub(c.seen[i+1].at) >= c.cfg.Window {
			i++
		}
		c.seen = c.seen[i:]
		if old := c.seen[0]; now.Sub(old.at) >= c.cfg.Window && old.rev > target {
			target = old.rev
			byTime = now.Sub(c.last) >= c.cfg.Window
		}
	}
	if target <= 0 || target <= last || target-last < c.cfg.MinGap && !byTime {
		return nil
	}
	if err := c.store.Compact(tctx, target); err != nil && !errors.Is(err, ErrCompacted) {
		return err
	}
	c.last = time.Now()
	c.mu.Lock()
	c.compacted = target
	c.runs++
	c.mu.Unlock()
	return nil
}
