package gcs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// WriterConfig configures a Writer. The zero value gives the defaults.
type WriterConfig struct {
	// MaxDelay is the longest an op waits in the pending batch before the batch is sent
	// (default 2 ms). The first op of an idle Writer starts the clock; a batch also goes out
	// early when it fills a whole wave of transactions, on Flush, and on Close.
	MaxDelay time.Duration
	// MaxInFlight is how many transactions of one flush are sent concurrently (default 8).
	MaxInFlight int
	// MaxPendingBytes and MaxPendingOps bound what is queued and not yet durable (defaults
	// 64 MiB and 1<<20 ops). Beyond them Put, Create, Delete and DeletePrefix block until a
	// flush completes: that is the backpressure when the store lags far behind.
	MaxPendingBytes int64
	MaxPendingOps   int
	// RetryMin and RetryMax bound the exponential backoff between attempts of a
	// transaction that failed with a transient error (defaults 5 ms and 1 s). Transient
	// errors are retried until they succeed or the Writer is closed.
	RetryMin, RetryMax time.Duration
	// TxnTimeout bounds one attempt of one transaction (default 10 s); an attempt that
	// times out is retried.
	TxnTimeout time.Duration
	// NoSpaceWait is how long a transaction refused at the store's space quota
	// (ErrNoSpace) is retried before its batch is dropped (default 2 s; negative: not
	// retried). The Writer goes on with the next batch: at the quota writes are lost, not
	// queued until the backpressure blocks every caller, and it writes again once the
	// store has space (the embedded etcd frees it by itself, etcdstore's defrag.go).
	NoSpaceWait time.Duration
	// Logger receives retry warnings and permanent failures (default: discard).
	Logger *slog.Logger
}

// Validate reports a configuration that cannot work.
func (c WriterConfig) Validate() error {
	if c.MaxDelay < 0 || c.MaxInFlight < 0 || c.MaxPendingBytes < 0 || c.MaxPendingOps < 0 ||
		c.RetryMin < 0 || c.RetryMax < 0 || c.TxnTimeout < 0 {
		return errors.New("gcs: writer config: negative value")
	}
	if c.RetryMin > 0 && c.RetryMax > 0 && c.RetryMin > c.RetryMax {
		return errors.New("gcs: writer config: RetryMin above RetryMax")
	}
	return nil
}

func (c WriterConfig) withDefaults() WriterConfig {
	if c.MaxDelay == 0 {
		c.MaxDelay = 2 * time.Millisecond
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 8
	}
	if c.MaxPendingBytes == 0 {
		c.MaxPendingBytes = 64 << 20
	}
	if c.MaxPendingOps == 0 {
		c.MaxPendingOps = 1 << 20
	}
	if c.RetryMin == 0 {
		c.RetryMin = 5 * time.Millisecond
	}
	if c.RetryMax == 0 {
		c.RetryMax = time.Second
	}
	if c.RetryMin > c.RetryMax {
		c.RetryMin = c.RetryMax
	}
	if c.TxnTimeout == 0 {
		c.TxnTimeout = 10 * time.Second
	}
	if c.NoSpaceWait == 0 {
		c.NoSpaceWait = 2 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// WriterStats counts what a Writer did. Every enqueued op ends up in exactly one of Keys
// (sent), Coalesced (superseded or cancelled before it was sent), Dropped, or is still
// pending, so Enqueued = Keys + Coalesced + Dropped + Pending (Keys counts each op once,
// however often its transaction was retried).
type WriterStats struct {
	Enqueued     uint64 // ops accepted by Put, Create, Delete, DeletePrefix
	Coalesced    uint64 // ops that never reached the store as an op of their own
	Dropped      uint64 // ops discarded after Close, a permanent failure, or at the quota
	NoSpace      uint64 // batches dropped because the store was at its space quota
	Txns         uint64 // transactions committed
	Keys         uint64 // ops in committed transactions
	Bytes        uint64 // key and value bytes in committed transactions
	Retries      uint64 // failed transaction attempts that were retried
	Flushes      uint64 // batches sent
	Pending      int    // ops queued or in flight
	PendingBytes int64  // their key and value bytes
}

// Writer is the GCS group-commit writer (DESIGN §3): callers enqueue puts and deletes
// without waiting for I/O; one goroutine owned by the Writer sends them as few, large
// transactions.
//
// Semantics:
//   - Ops take effect in the order they were enqueued, except that the ops of one segment
//     (the ops between two Barriers; DeletePrefix also starts a new segment when needed) are
//     sent as several concurrent transactions and may become durable in any order relative
//     to each other. A flush completes entirely before the next one starts.
//   - Inside the pending batch, consecutive ops on one key coalesce: only the last put of a
//     key is sent, a delete replaces a pending put, and a DeletePrefix removes the pending
//     ops it covers (a delete that a pending DeletePrefix covers is dropped). Create is a
//     put of a key the caller knows does not exist in the store (a fresh ID): if a Delete
//     of that key follows before the Create was sent, both vanish and nothing reaches the
//     store, even across a Barrier. Put cannot do that: the Writer cannot know whether an
//     older value exists, so put-then-delete of a Put key sends the delete. Short-lived
//     records should therefore be written with Create.
//   - Flush returns once every op enqueued before the call is durable. A permanent failure
//     (see IsPermanent) stops the Writer: Err, Flush and Close return it, later ops are
//     dropped, and the Logger says so. Transient failures are retried with backoff.
//   - ErrNoSpace (the store at its space quota) is the exception: it is retried for
//     NoSpaceWait, then the batch is dropped (Stats.NoSpace, Dropped; one ERROR a minute),
//     a Flush waiting for it returns an error wrapping ErrNoSpace, and the Writer goes on:
//     its later ops are written once the store has space again.
//   - Values are retained until sent: callers must not modify them afterwards.
//
// The enqueue methods are safe for concurrent use and cost a mutex, a map lookup and an
// append; they block only for backpressure (WriterConfig.MaxPendingBytes).
type Writer struct {
	store  Store
	cfg    WriterConfig
	log    *slog.Logger
	kick   chan struct{}
	runCtx context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu          sync.Mutex
	segs        []*segment // pending batch; new ops go to the last segment
	free        []*segment
	pendOps     int
	pendBytes   int64
	flightOps   int
	flightBytes int64
	openedAt    time.Time // when the pending batch got its first op
	seq         uint64    // ops enqueued so far
	swapSeq     uint64    // seq when the last batch was taken for sending
	doneSeq     uint64    // ops up to this seq are durable or gone
	flushReq    bool
	closing     bool
	err         error
	progress    chan struct{} // closed and replaced when doneSeq, err or closing change
	enqueued    uint64
	coalesced   uint64
	dropped     uint64
	warnedDrop  bool
	// Batches dropped at the space quota: how many, the last one's seqs and error.
	noSpace          uint64
	lostFrom, lostTo uint64
	lostErr          error
	noSpaceLogged    time.Time
	noSpaceFns       []func(keys []string) // OnNoSpace

	txns, keys, bytes, retries, flushes atomic.Uint64
}

// NewWriter starts a Writer over store; Close stops it. A nil store or a configuration
// that fails Validate is a programming error: NewWriter panics.
func NewWriter(store Store, cfg WriterConfig) *Writer {
	if store == nil {
		panic("gcs: NewWriter: nil store")
	}
	if err := cfg.Validate(); err != nil {
		panic("gcs: NewWriter: " + err.Error())
	}
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{
		store:    store,
		cfg:      cfg,
		log:      cfg.Logger,
		kick:     make(chan struct{}, 1),
		runCtx:   ctx,
		cancel:   cancel,
		done:     make(chan struct{}),
		progress: make(chan struct{}),
	}
	go w.run()
	return w
}

// Put sets key to value.
func (w *Writer) Put(key string, value []byte) { w.enqueue(OpPut, key, value, false) }

// Create sets key to value, asserting that key does not exist in the store (see Writer).
func (w *Writer) Create(key string, value []byte) { w.enqueue(OpPut, key, value, true) }

// Delete deletes key.
func (w *Writer) Delete(key string) { w.enqueue(OpDelete, key, nil, false) }

// DeletePrefix deletes every key that starts with prefix ("" deletes everything).
func (w *Writer) DeletePrefix(prefix string) { w.enqueue(OpDeletePrefix, prefix, nil, false) }

// Barrier makes every op enqueued after it become durable after every op enqueued before
// it (ops of one segment are otherwise unordered among themselves).
func (w *Writer) Barrier() {
	w.mu.Lock()
	if n := len(w.segs); n > 0 && w.segs[n-1].live > 0 {
		w.newSegLocked()
	}
	w.mu.Unlock()
}

// OnNoSpace registers fn to be called with the keys put by every batch dropped at the
// store's space quota (ErrNoSpace; some of them may have landed: a batch is several
// transactions). fn runs on the Writer's goroutine, outside its lock, and must return
// soon without writing through the Writer (its backpressure waits for that goroutine): a
// Packer notes the keys and writes their pages again later (Packer, "Pages lost at the
// quota").
func (w *Writer) OnNoSpace(fn func(keys []string)) {
	w.mu.Lock()
	w.noSpaceFns = append(w.noSpaceFns, fn)
	w.mu.Unlock()
}

// Err returns the permanent failure that stopped the Writer, or nil.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Stats returns the Writer's counters.
func (w *Writer) Stats() WriterStats {
	w.mu.Lock()
	s := WriterStats{
		Enqueued:     w.enqueued,
		Coalesced:    w.coalesced,
		Dropped:      w.dropped,
		NoSpace:      w.noSpace,
		Pending:      w.pendOps + w.flightOps,
		PendingBytes: w.pendBytes + w.flightBytes,
	}
	w.mu.Unlock()
	s.Txns, s.Keys, s.Bytes = w.txns.Load(), w.keys.Load(), w.bytes.Load()
	s.Retries, s.Flushes = w.retries.Load(), w.flushes.Load()
	return s
}

// Flush returns once every op enqueued before the call is durable, or with the Writer's
// permanent failure, or with ctx's error.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	target, lost := w.seq, w.noSpace
	for {
		if w.err != nil {
			err := w.err
			w.mu.Unlock()
			return err
		}
		if w.doneSeq >= target {
			// Ops up to target were lost at the quota: the last batch dropped holds target,
			// or one was dropped while this Flush waited, before target.
			var err error
			if w.noSpace > 0 && ((w.lostFrom <= target && target <= w.lostTo) || (w.noSpace != lost && w.lostFrom <= target)) {
				err = fmt.Errorf("gcs: writer: ops dropped: %w", w.lostErr)
			}
			w.mu.Unlock()
			return err
		}
		w.flushReq = true
		w.kickLocked()
		ch := w.progress
		w.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("gcs: writer flush: %w", ctx.Err())
		}
		w.mu.Lock()
	}
}

// Close flushes what is pending and stops the Writer. If ctx ends first, in-flight
// transactions are abandoned and the ops not yet durable are lost (Close then returns
// ctx's error). Ops enqueued after Close are dropped. A second Close returns ErrClosed.
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	if w.closing {
		w.mu.Unlock()
		return fmt.Errorf("gcs: writer: %w", ErrClosed)
	}
	w.closing = true
	w.kickLocked()
	w.broadcastLocked()
	w.mu.Unlock()
	var ctxErr error
	select {
	case <-w.done:
	case <-ctx.Done():
		ctxErr = fmt.Errorf("gcs: writer close: %w", ctx.Err())
		w.cancel()
		<-w.done
	}
	w.cancel()
	if ctxErr != nil {
		return ctxErr
	}
	return w.Err()
}

// segment is a run of pending ops on distinct keys that may be sent concurrently.
type segment struct {
	entries  []wentry
	index    map[string]int // point key -> position in entries
	prefixes []string       // live DeletePrefix prefixes, sorted, none a prefix of another
	live     int
}

type wentry struct {
	op    Op
	fresh bool // the key is known not to exist in the store before this entry
	dead  bool
}

// covered reports whether a DeletePrefix of the segment covers key. The prefixes are
// sorted and none is a prefix of another, so only the greatest prefix <= key can match.
func (s *segment) covered(key string) bool {
	if len(s.prefixes) == 0 {
		return false
	}
	i := sort.SearchStrings(s.prefixes, key) // first prefix >= key
	if i < len(s.prefixes) && s.prefixes[i] == key {
		return true
	}
	return i > 0 && strings.HasPrefix(key, s.prefixes[i-1])
}

// kill cancels entry i and returns its bytes.
func (s *segment) kill(i int) int64 {
	e := &s.entries[i]
	e.dead = true
	n := int64(OpBytes(e.op))
	e.op.Value = nil
	s.live--
	return n
}

func (w *Writer) newSegLocked() *segment {
	var s *segment
	if n := len(w.free); n > 0 {
		s = w.free[n-1]
		w.free = w.free[:n-1]
	} else {
		s = &segment{index: make(map[string]int)}
	}
	w.segs = append(w.segs, s)
	return s
}

func (w *Writer) kickLocked() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *Writer) broadcastLocked() {
	close(w.progress)
	w.progress = make(chan struct{})
}

// admitLocked applies backpressure; it reports false when the op must be dropped.
func (w *Writer) admitLocked() bool {
	for w.err == nil && !w.closing &&
		(w.pendBytes+w.flightBytes >= w.cfg.MaxPendingBytes || w.pendOps+w.flightOps >= w.cfg.MaxPendingOps) {
		w.flushReq = true
		w.kickLocked()
		ch := w.progress
		w.mu.Unlock()
		<-ch
		w.mu.Lock()
	}
	if w.err == nil && !w.closing {
		return true
	}
	w.dropped++
	w.enqueued++
	if !w.warnedDrop {
		w.warnedDrop = true
		if w.err != nil {
			w.log.Error("gcs: writer failed; dropping ops", "err", w.err)
		} else {
			w.log.Warn("gcs: writer closed; dropping ops")
		}
	}
	return false
}

func (w *Writer) failLocked(err error) {
	if w.err != nil {
		return
	}
	w.err = err
	w.log.Error("gcs: writer failed permanently", "err", err)
	w.broadcastLocked()
	w.kickLocked()
}

func (w *Writer) enqueue(kind OpKind, key string, value []byte, fresh bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.admitLocked() {
		return
	}
	w.enqueued++
	w.seq++
	if key == "" && kind != OpDeletePrefix {
		w.dropped++
		w.failLocked(fmt.Errorf("gcs: writer: %w", ErrEmptyKey))
		return
	}
	if n := len(key) + len(value); n > MaxRequestBytes {
		w.dropped++
		w.failLocked(fmt.Errorf("gcs: writer: op on %q of %d bytes: %w", key, n, ErrTooLarge))
		return
	}
	var s *segment
	if n := len(w.segs); n > 0 {
		s = w.segs[n-1]
	} else {
		s = w.newSegLocked()
	}
	if w.seq == w.swapSeq+1 { // first op of a new batch
		w.openedAt = time.Now()
		w.kickLocked()
	}
	switch kind {
	case OpPut:
		w.putLocked(s, key, value, fresh)
	case OpDelete:
		w.deleteLocked(s, key)
	case OpDeletePrefix:
		w.deletePrefixLocked(s, key)
	}
	if w.pendOps >= MaxTxnOps*w.cfg.MaxInFlight || w.pendBytes >= int64(MaxRequestBytes)*int64(w.cfg.MaxInFlight) {
		w.kickLocked()
	}
}

func (w *Writer) putLocked(s *segment, key string, value []byte, fresh bool) {
	if i, ok := s.index[key]; ok {
		e := &s.entries[i]
		w.coalesced++
		if e.op.Kind == OpDelete {
			e.fresh = false // the key may exist: a plain put from here on
		}
		w.pendBytes += int64(len(value) - len(e.op.Value))
		e.op.Kind, e.op.Value = OpPut, value
		return
	}
	if s.covered(key) {
		s = w.newSegLocked() // the put must follow the range delete, in a later txn
	}
	if fresh && len(w.segs) > 1 {
		for _, earlier := range w.segs[:len(w.segs)-1] {
			if _, ok := earlier.index[key]; ok {
				fresh = false // not new after all: an earlier op of this batch wrote it
				break
			}
		}
	}
	s.index[key] = len(s.entries)
	s.entries = append(s.entries, wentry{op: Op{Kind: OpPut, Key: key, Value: value}, fresh: fresh})
	s.live++
	w.pendBytes += int64(len(key) + len(value))
	w.pendOps++
}

// deleteLocked enqueues a delete of key. It looks for the latest pending op on key, in the
// last segment or an earlier one: a Create not sent yet is cancelled (wherever it is: it
// was never durable, so nothing can depend on it), a delete that a later prefix delete
// makes redundant is dropped, and in the last segment the op is coalesced.
func (w *Writer) deleteLocked(last *segment, key string) {
	for i := len(w.segs) - 1; i >= 0; i-- {
		s := w.segs[i]
		if j, ok := s.index[key]; ok {
			e := &s.entries[j]
			switch {
			case e.fresh:
				w.pendBytes -= s.kill(j)
				delete(s.index, key)
				w.pendOps--
				w.coalesced += 2
				return
			case s != last:
				// An older op: the delete goes after it, in the last segment.
			case e.op.Kind == OpDelete:
				w.coalesced++
				return
			default:
				w.pendBytes -= int64(len(e.op.Value))
				e.op.Kind, e.op.Value = OpDelete, nil
				w.coalesced++
				return
			}
			break
		}
		if s.covered(key) { // and no later op on key: the delete is redundant
			w.coalesced++
			return
		}
	}
	last.index[key] = len(last.entries)
	last.entries = append(last.entries, wentry{op: Op{Kind: OpDelete, Key: key}})
	last.live++
	w.pendBytes += int64(len(key))
	w.pendOps++
}

func (w *Writer) deletePrefixLocked(s *segment, prefix string) {
	if s.covered(prefix) {
		w.coalesced++
		return
	}
	for i := range s.entries {
		e := &s.entries[i]
		if e.dead || !strings.HasPrefix(e.op.Key, prefix) {
			continue
		}
		if e.op.Kind == OpDeletePrefix {
			j := sort.SearchStrings(s.prefixes, e.op.Key)
			s.prefixes = append(s.prefixes[:j], s.prefixes[j+1:]...)
		} else {
			delete(s.index, e.op.Key)
		}
		w.pendBytes -= s.kill(i)
		w.pendOps--
		w.coalesced++
	}
	j := sort.SearchStrings(s.prefixes, prefix)
	s.prefixes = append(s.prefixes, "")
	copy(s.prefixes[j+1:], s.prefixes[j:])
	s.prefixes[j] = prefix
	s.entries = append(s.entries, wentry{op: Op{Kind: OpDeletePrefix, Key: prefix}})
	s.live++
	w.pendBytes += int64(len(prefix))
	w.pendOps++
}

// run is the Writer's goroutine: it waits for a batch to become due, sends it, repeats.
func (w *Writer) run() {
	defer close(w.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		w.mu.Lock()
		for {
			if w.err != nil {
				w.dropPendingLocked()
				w.mu.Unlock()
				return
			}
			pending := w.seq != w.swapSeq
			if w.closing && !pending {
				w.mu.Unlock()
				return
			}
			var wait time.Duration = -1
			if pending {
				full := w.pendOps >= MaxTxnOps*w.cfg.MaxInFlight ||
					w.pendBytes >= int64(MaxRequestBytes)*int64(w.cfg.MaxInFlight)
				if w.flushReq || w.closing || full {
					break
				}
				if wait = w.cfg.MaxDelay - time.Since(w.openedAt); wait <= 0 {
					break
				}
			}
			w.mu.Unlock()
			if wait > 0 {
				timer.Reset(wait)
			}
			select {
			case <-w.kick:
			case <-timer.C:
			case <-w.runCtx.Done():
				w.mu.Lock()
				w.failLocked(fmt.Errorf("gcs: writer closed before flushing: %w", w.runCtx.Err()))
				continue
			}
			timer.Stop()
			w.mu.Lock()
		}
		batch, target := w.segs, w.seq
		w.segs = nil
		w.swapSeq, w.flushReq = w.seq, false
		w.flightOps, w.flightBytes = w.pendOps, w.pendBytes
		w.pendOps, w.pendBytes = 0, 0
		w.mu.Unlock()

		keysBefore := w.keys.Load()
		err := w.send(batch)

		w.mu.Lock()
		w.flightOps, w.flightBytes = 0, 0
		var lostKeys []string
		fns := w.noSpaceFns
		switch {
		case err != nil && errors.Is(err, ErrNoSpace) && w.runCtx.Err() == nil:
			if len(fns) > 0 {
				lostKeys = putKeys(batch)
			}
			n := uint64(countLive(batch)) - (w.keys.Load() - keysBefore)
			w.dropped += n
			w.noSpace++
			w.lostFrom, w.lostTo, w.lostErr = w.doneSeq+1, target, err
			w.doneSeq = target
			if time.Since(w.noSpaceLogged) >= time.Minute {
				w.noSpaceLogged = time.Now()
				w.log.Error("gcs: writer: the store is at its space quota; ops dropped (later ones are written once it has space again)",
					"ops", n, "err", err)
			}
		case err != nil:
			w.dropped += uint64(countLive(batch)) - (w.keys.Load() - keysBefore)
			w.failLocked(err)
		default:
			w.doneSeq = target
		}
		for _, s := range batch {
			w.recycleLocked(s)
		}
		w.broadcastLocked()
		w.mu.Unlock()
		if len(lostKeys) > 0 {
			for _, fn := range fns {
				fn(lostKeys)
			}
		}
	}
}

// putKeys returns the keys the live puts of batch write.
func putKeys(batch []*segment) []string {
	var keys []string
	for _, s := range batch {
		for _, e := range s.entries {
			if !e.dead && e.op.Kind == OpPut {
				keys = append(keys, e.op.Key)
			}
		}
	}
	return keys
}

func countLive(batch []*segment) int {
	n := 0
	for _, s := range batch {
		n += s.live
	}
	return n
}

func (w *Writer) dropPendingLocked() {
	w.dropped += uint64(w.pendOps)
	for _, s := range w.segs {
		w.recycleLocked(s)
	}
	w.segs, w.pendOps, w.pendBytes = nil, 0, 0
	w.swapSeq = w.seq
}

func (w *Writer) recycleLocked(s *segment) {
	clear(s.entries)
	s.entries = s.entries[:0]
	clear(s.index)
	s.prefixes = s.prefixes[:0]
	s.live = 0
	if len(w.free) < 4 && cap(s.entries) <= 1<<16 {
		w.free = append(w.free, s)
	}
}

// send commits a batch: segment after segment, each as up to MaxInFlight concurrent
// transactions. It returns the first permanent failure.
func (w *Writer) send(batch []*segment) error {
	if countLive(batch) == 0 {
		return nil
	}
	w.flushes.Add(1)
	for _, s := range batch {
		if s.live == 0 {
			continue
		}
		txns := chunk(s)
		if len(txns) == 1 {
			if err := w.commit(txns[0]); err != nil {
				return err
			}
			continue
		}
		var (
			wg       sync.WaitGroup
			errMu    sync.Mutex
			firstErr error
		)
		sem := make(chan struct{}, w.cfg.MaxInFlight)
		for _, ops := range txns {
			errMu.Lock()
			failed := firstErr != nil
			errMu.Unlock()
			if failed {
				break
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				if err := w.commit(ops); err != nil {
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
				}
			}()
		}
		wg.Wait()
		if firstErr != nil {
			return firstErr
		}
	}
	return nil
}

// chunk splits a segment's live ops into transactions within MaxTxnOps and MaxRequestBytes.
func chunk(s *segment) [][]Op {
	var (
		txns  [][]Op
		cur   []Op
		bytes int
	)
	for i := range s.entries {
		e := &s.entries[i]
		if e.dead {
			continue
		}
		n := OpBytes(e.op)
		if len(cur) == MaxTxnOps || (len(cur) > 0 && bytes+n > MaxRequestBytes) {
			txns = append(txns, cur)
			cur, bytes = nil, 0
		}
		if cur == nil {
			cur = make([]Op, 0, min(MaxTxnOps, s.live))
		}
		cur = append(cur, e.op)
		bytes += n
	}
	if len(cur) > 0 {
		txns = append(txns, cur)
	}
	return txns
}

// commit sends one transaction, retrying transient failures with backoff, and ErrNoSpace
// for NoSpaceWait.
func (w *Writer) commit(ops []Op) error {
	backoff := w.cfg.RetryMin
	var full time.Time
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(w.runCtx, w.cfg.TxnTimeout)
		_, _, err := w.store.Txn(ctx, nil, ops)
		timedOut := ctx.Err() != nil
		cancel()
		if err == nil {
			n := 0
			for _, op := range ops {
				n += OpBytes(op)
			}
			w.txns.Add(1)
			w.keys.Add(uint64(len(ops)))
			w.bytes.Add(uint64(n))
			return nil
		}
		if w.runCtx.Err() != nil {
			return fmt.Errorf("gcs: writer closed before flushing: %w", err)
		}
		if !timedOut && errors.Is(err, ErrNoSpace) {
			if full.IsZero() {
				full = time.Now()
			}
			if time.Since(full) >= w.cfg.NoSpaceWait {
				return fmt.Errorf("gcs: writer: txn of %d ops: %w", len(ops), err)
			}
		} else if !timedOut && IsPermanent(err) {
			return fmt.Errorf("gcs: writer: txn of %d ops: %w", len(ops), err)
		}
		w.retries.Add(1)
		if attempt == 1 || attempt%10 == 0 {
			w.log.Warn("gcs: writer: txn failed, retrying", "attempt", attempt, "ops", len(ops), "err", err)
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-w.runCtx.Done():
			t.Stop()
			return fmt.Errorf("gcs: writer closed before flushing: %w", err)
		}
		backoff = min(2*backoff, w.cfg.RetryMax)
	}
}
