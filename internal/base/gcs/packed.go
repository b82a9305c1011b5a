package gcs

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/s2"

	"github.com/ray-go/ray/internal/base/mapx"
)

// MaxRecordBytes is the largest record (ID plus bytes) a Packer accepts. With PageBytes at
// most this much too, every page fits one request even if it does not compress.
const MaxRecordBytes = 1 << 20

// pageVersion is the first byte of every page value; the rest is one s2 block holding the
// framed records: uvarint(len(id)) id uvarint(len(rec)) rec, repeated.
const pageVersion = 1

// PackerConfig configures a Packer. The zero value (with Prefix set) gives the defaults.
type PackerConfig struct {
	// Prefix is the table the pages go to, e.g. LineagePrefix or ObjectPagesPrefix.
	Prefix string
	// Owner names this Packer's pages: page keys are Prefix + Owner + "/" + 16 hex digits
	// of a sequence number. It must be unique per Packer incarnation in the cluster (pages
	// are created with Writer.Create, which asserts the key is new) and must not contain
	// '/'. Default: 16 random hex digits.
	Owner string
	// PageBytes: a page is full once its live records' framed bytes reach this size
	// (default 128 KiB, at most MaxRecordBytes). When the open page's buffer reaches it
	// but most of its records were removed already, the page drops them and keeps
	// receiving records instead. PageRecords: a page is full at this many live records
	// (default 4096).
	PageBytes   int
	PageRecords int
	// SealDelay: a page is sealed this long after its first record (default 2 ms; the
	// Writer adds its MaxDelay), full or not: a page that fills sooner waits in memory
	// until then (up to 4 MiB of such pages; beyond that the oldest is sealed early), so
	// records removed within SealDelay of their page's first record never cost a
	// compression or a store write. Sealing writes only the page's live records; a page
	// with none left is never written.
	SealDelay time.Duration
	// RewriteBelow: a written page whose live records fall below this fraction of its
	// records is rewritten: its live records move to the open page and the old page is
	// deleted once the page holding them has been written. Default 0.5, so the store holds
	// at most about twice the live records' bytes (plus pages not sealed yet); a small
	// value makes rewrites rare and lets more dead records linger.
	RewriteBelow float64
	// RewriteMinAge: a page is rewritten only once it was handed to the Writer at least
	// this long ago (default 1 s; negative: no minimum). Records mostly die young and in
	// order, so a young, half-dead page is usually about to die entirely; rewriting it
	// would compress its survivors twice for nothing. Pages that cross RewriteBelow while
	// young are rewritten when they come of age (a timer), if still below it then.
	RewriteMinAge time.Duration
	// FirstSeq is the sequence number of the first page. Packers that share an Owner
	// (the shards of a ShardedPacker) start at distinct multiples of 1<<48, so that their
	// page keys never meet.
	FirstSeq uint64
	// Logger receives corruption reports (default: discard).
	Logger *slog.Logger
}

// Validate reports a configuration that cannot work.
func (c PackerConfig) Validate() error {
	switch {
	case c.Prefix == "":
		return errors.New("gcs: packer config: empty Prefix")
	case strings.Contains(c.Owner, "/"):
		return fmt.Errorf("gcs: packer config: Owner %q contains '/'", c.Owner)
	case c.PageBytes < 0 || c.PageBytes > MaxRecordBytes:
		return fmt.Errorf("gcs: packer config: PageBytes %d not in [0, %d]", c.PageBytes, MaxRecordBytes)
	case c.PageRecords < 0 || c.SealDelay < 0:
		return errors.New("gcs: packer config: negative value")
	case c.RewriteBelow < 0 || c.RewriteBelow >= 1:
		return fmt.Errorf("gcs: packer config: RewriteBelow %v not in [0, 1)", c.RewriteBelow)
	}
	return nil
}

func (c PackerConfig) withDefaults() PackerConfig {
	if c.Owner == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		c.Owner = hex.EncodeToString(b[:])
	}
	if c.PageBytes == 0 {
		c.PageBytes = 128 << 10
	}
	if c.PageRecords == 0 {
		c.PageRecords = 4096
	}
	if c.SealDelay == 0 {
		c.SealDelay = 2 * time.Millisecond
	}
	if c.RewriteBelow == 0 {
		c.RewriteBelow = 0.5
	}
	if c.RewriteMinAge == 0 {
		c.RewriteMinAge = time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// PackerStats counts what a Packer did.
type PackerStats struct {
	Appended     uint64 // Append calls accepted
	Removed      uint64 // Remove calls that found their record
	Live         int    // records appended and not removed
	PagesWritten uint64 // pages handed to the Writer (rewrites included)
	PagesDeleted uint64 // page deletes handed to the Writer
	PagesDropped uint64 // full or sealed pages whose records were all removed before they were written
	Rewrites     uint64 // pages rewritten because they were mostly dead (or lost at the quota)
	// LostRewritten: pages rewritten because the Writer dropped them at the store's space
	// quota (see Packer, "Pages lost at the quota").
	LostRewritten uint64
	Moved         uint64 // records moved by rewrites
	Compacted     uint64 // removed or superseded records dropped from pages before they were written
	Records       uint64 // records in written pages (rewrites included)
	RawBytes      uint64 // framed record bytes of written pages
	PackedBytes   uint64 // their compressed size
}

type pageState uint8

const (
	pageOpen    pageState = iota // receiving records (Packer.open)
	pageFull                     // full, waiting for SealDelay (Packer.full)
	pageSealing                  // compacted, being compressed outside the lock
	pageWritten                  // handed to the Writer
	pageDead                     // deleted, dropped or rewritten
)

// slot is where one record appended to an open or full page is in its raw buffer; size 0
// once the record was removed or superseded (a frame is at least 3 bytes).
type slot struct{ off, size int32 }

// loc is where the index finds a record: its page and, while that page is open or full,
// its slot there. Slots are never reused within a page, so compacting the buffer (which
// moves frames and updates their slots' offsets) leaves the index valid.
type loc struct {
	pg   *page
	slot int32
}

type page struct {
	seq   uint64
	key   string
	raw   []byte // framed records while open, full or sealing
	slots []slot // one per record appended, while open or full
	lo    int    // slots before lo are all dead
	value []byte // the encoded page once written, kept for rewriting
	// n is the number of frames in raw (dead ones included until compacted away), or in
	// value once written; live is the number of index entries pointing to the page, and
	// liveBytes their frames' size while open or full. live < n means dead frames.
	n, live, liveBytes int
	state              pageState
	openedAt           time.Time // first record (since the page was last emptied)
	writtenAt          time.Time
	candidate          bool     // in Packer.candidates: below RewriteBelow but too young
	retire             []string // rewritten pages to delete once this page has been handed to the Writer
}

type retireItem struct {
	seq  uint64
	keys []string
}

// Packer packs many small records (ID -> bytes) into pages, each page one key whose value
// is an s2-compressed run of framed records, written through a Writer. It serves the
// high-volume tables (lineage, object entries), where one key per record would cost etcd
// too much.
//
// Append is an append to the open page's buffer and an index insert under a mutex. A page
// that is full waits in memory; SealDelay after its first record (or on Flush) it is
// sealed: its dead records are dropped (compaction, under the mutex: a copy of the live
// frames, no index lookups), and it is compressed outside the mutex and handed to
// Writer.Create. Remove drops a record from the index and marks its frame dead in a page
// not sealed yet; a page whose records all go before it is sealed never reaches the store
// (nor the compressor), a written page whose records are all removed is deleted, and one
// that is mostly dead is rewritten.
//
// What the store holds is what recovery reads (ReadAll), and it is a superset of the live
// records: a record removed before its page was sealed is never written, but one removed
// later stays readable until its page is deleted or rewritten, and a re-appended ID has
// its old copy in an older page until then (ReadAll keeps the newest). Records appended
// within the last SealDelay + Writer MaxDelay may not be there yet; Flush makes everything
// appended before it durable.
//
// Pages lost at the quota: a page the Writer drops because the store is at its space
// quota (Writer.OnNoSpace) is not lost for good while the Packer lives: LostRetryDelay
// later its live records are rewritten into a new page, again and again until one is
// written, so the store holds every live record again once it has space (a Flush that
// covered the dropped page still failed). Until then the records are only in memory.
type Packer struct {
	w   *Writer
	cfg PackerConfig
	log *slog.Logger

	mu       sync.Mutex
	index    map[string]loc
	peak     mapx.Peak // of index (a burst of records must not keep its memory)
	open     *page
	full     []*page // full pages waiting for SealDelay, oldest (lowest seq) first
	maxFull  int
	maxSlots int // a page with this many slots is full
	nextSeq  uint64
	sealing  map[*page]struct{}
	retire   []retireItem
	progress chan struct{} // closed and replaced when a seal completes
	timer    *time.Timer   // seals the open page
	closed   bool
	// candidates are written pages below RewriteBelow, younger than RewriteMinAge.
	candidates   []*page
	rewriteTimer *time.Timer
	freeRaw      [][]byte
	freeSlots    [][]slot
	stats        PackerStats
	// lost: keys of pages whose write the Writer dropped at the store's space quota,
	// written again (rewritten) by lostTimer. Under lostMu, not mu: the Writer's goroutine
	// notes them (onNoSpace), and a Create under mu may wait for that goroutine
	// (backpressure). Lock order: mu, then lostMu.
	lostMu    sync.Mutex
	lost      map[string]struct{}
	lostTimer *time.Timer
}

// LostRetryDelay is how long after the Writer dropped a page at the store's space quota
// the Packer writes that page's live records again (the Writer itself retried it for its
// NoSpaceWait first). A variable for tests.
var LostRetryDelay = time.Second

// NewPacker returns a Packer writing through w. The Packer does not own w: close the
// Packer first, then the Writer.
func NewPacker(w *Writer, cfg PackerConfig) (*Packer, error) {
	if w == nil {
		return nil, errors.New("gcs: packer: nil writer")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	p := &Packer{
		w:        w,
		cfg:      cfg,
		log:      cfg.Logger,
		index:    make(map[string]loc),
		maxFull:  max(2, maxFullBytes/cfg.PageBytes),
		maxSlots: max(cfg.PageRecords, min(4*cfg.PageRecords, 1<<16)),
		sealing:  make(map[*page]struct{}),
		progress: make(chan struct{}),
		nextSeq:  cfg.FirstSeq,
	}
	p.timer = time.AfterFunc(time.Hour, p.onTimer)
	p.timer.Stop()
	p.rewriteTimer = time.AfterFunc(time.Hour, p.onRewriteTimer)
	p.rewriteTimer.Stop()
	p.lostTimer = time.AfterFunc(time.Hour, p.onLostTimer)
	p.lostTimer.Stop()
	w.OnNoSpace(p.onNoSpace)
	return p, nil
}

// onNoSpace notes the keys of this Packer's pages that the Writer dropped at the quota.
func (p *Packer) onNoSpace(keys []string) {
	own := p.cfg.Prefix + p.cfg.Owner + "/"
	p.lostMu.Lock()
	defer p.lostMu.Unlock()
	armed := len(p.lost) > 0
	for _, k := range keys {
		if strings.HasPrefix(k, own) {
			if p.lost == nil {
				p.lost = make(map[string]struct{})
			}
			p.lost[k] = struct{}{}
		}
	}
	if !armed && len(p.lost) > 0 {
		p.lostTimer.Reset(LostRetryDelay)
	}
}

// onLostTimer writes again the live records of the pages dropped at the quota: each such
// page that still holds live records is rewritten (its records move to the open page,
// which gets a new key, and the old key is deleted), the way a mostly dead page is. A
// page dropped again is noted again, so records are retried every LostRetryDelay plus
// the Writer's NoSpaceWait until the store has space; a page whose records were all
// removed meanwhile is not written at all.
func (p *Packer) onLostTimer() {
	var sealQ []*page
	p.mu.Lock()
	p.lostMu.Lock()
	lost := p.lost
	p.lost = nil
	p.lostMu.Unlock()
	if p.closed || len(lost) == 0 {
		p.mu.Unlock()
		return
	}
	var pages []*page
	seen := make(map[*page]bool)
	for _, l := range p.index {
		if pg := l.pg; pg.state == pageWritten && !seen[pg] {
			seen[pg] = true
			if _, ok := lost[pg.key]; ok {
				pages = append(pages, pg)
			}
		}
	}
	for _, pg := range pages {
		if pg.state == pageWritten { // not rewritten by an earlier one's appends
			p.rewriteLocked(pg, &sealQ)
			p.stats.LostRewritten++
		}
	}
	p.mu.Unlock()
	if sealQ != nil {
		p.finishSeals(sealQ)
	}
}

// maxFullBytes bounds the full pages kept in memory waiting for SealDelay.
const maxFullBytes = 4 << 20

// freeBuffers is how many page buffers (raw and slots each) a Packer keeps for reuse.
const freeBuffers = 16

// PageKey returns the key of this Packer's page with sequence number seq.
func (p *Packer) PageKey(seq uint64) string {
	return p.cfg.Prefix + p.cfg.Owner + "/" + fmt.Sprintf("%016x", seq)
}

// Append records rec under id, replacing an earlier record of id. rec is copied.
func (p *Packer) Append(id string, rec []byte) error {
	if id == "" {
		return fmt.Errorf("gcs: packer append: %w", ErrEmptyKey)
	}
	if n := len(id) + len(rec) + 2*binary.MaxVarintLen64; n > MaxRecordBytes {
		return fmt.Errorf("gcs: packer append %q: record of %d bytes (max %d): %w", id, n, MaxRecordBytes, ErrTooLarge)
	}
	var sealQ []*page
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return fmt.Errorf("gcs: packer append: %w", ErrClosed)
	}
	if old, ok := p.index[id]; ok {
		// Out of the index first: dropping it may rewrite its page, which must not move
		// the superseded record.
		delete(p.index, id)
		p.dropLocked(old, &sealQ)
	}
	p.appendLocked(id, rec, &sealQ)
	p.stats.Appended++
	p.mu.Unlock()
	if sealQ != nil {
		p.finishSeals(sealQ)
	}
	return nil
}

// Remove forgets id's record; it reports whether there was one.
func (p *Packer) Remove(id string) bool {
	var sealQ []*page
	p.mu.Lock()
	l, ok := p.index[id]
	if !ok || p.closed {
		p.mu.Unlock()
		return false
	}
	delete(p.index, id)
	p.index = mapx.Shrink(&p.peak, p.index)
	p.stats.Removed++
	p.dropLocked(l, &sealQ)
	p.mu.Unlock()
	if sealQ != nil {
		p.finishSeals(sealQ)
	}
	return true
}

// Stats returns the Packer's counters.
func (p *Packer) Stats() PackerStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Live = len(p.index)
	return s
}

// Flush seals the open page and returns once every record appended before the call is
// durable (see Writer.Flush).
func (p *Packer) Flush(ctx context.Context) error {
	p.mu.Lock()
	var sealQ []*page
	for len(p.full) > 0 {
		p.sealLocked(p.full[0], &sealQ)
	}
	if p.open != nil && p.open.n > 0 {
		p.sealLocked(p.open, &sealQ)
	}
	target := p.nextSeq // every page holding a record appended so far has a smaller seq
	p.mu.Unlock()
	if sealQ != nil {
		p.finishSeals(sealQ)
	}
	p.mu.Lock()
	for p.sealingBeforeLocked(target) {
		ch := p.progress
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("gcs: packer flush: %w", ctx.Err())
		}
		p.mu.Lock()
	}
	p.mu.Unlock()
	if err := p.w.Flush(ctx); err != nil {
		return fmt.Errorf("gcs: packer flush: %w", err)
	}
	return nil
}

// Close flushes and stops the Packer; later Appends fail with ErrClosed and Removes do
// nothing. It does not close the Writer.
func (p *Packer) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return fmt.Errorf("gcs: packer: %w", ErrClosed)
	}
	p.closed = true
	p.timer.Stop()
	p.rewriteTimer.Stop()
	p.lostTimer.Stop()
	p.candidates = nil
	p.mu.Unlock()
	return p.Flush(ctx)
}

// appendLocked appends a record to the open page (opening one if needed) and points the
// index at it; pages that fill up go to p.full, or to sealQ if already due.
func (p *Packer) appendLocked(id string, rec []byte, sealQ *[]*page) *page {
	bound := len(id) + len(rec) + 2*binary.MaxVarintLen64
	pg := p.open
	if pg != nil && pg.n > 0 && len(pg.raw)+bound > p.cfg.PageBytes {
		if pg.live < pg.n && pg.liveBytes+bound <= p.cfg.PageBytes/2 {
			// Mostly dead: drop the dead frames and keep absorbing records. At most half a
			// page is copied per half page appended.
			p.compactLocked(pg)
		} else {
			p.fullLocked(pg, sealQ)
			pg = nil
		}
	}
	if pg == nil {
		pg = p.openLocked()
	}
	off := len(pg.raw)
	pg.raw = binary.AppendUvarint(pg.raw, uint64(len(id)))
	pg.raw = append(pg.raw, id...)
	pg.raw = binary.AppendUvarint(pg.raw, uint64(len(rec)))
	pg.raw = append(pg.raw, rec...)
	size := len(pg.raw) - off
	p.index[id] = loc{pg: pg, slot: int32(len(pg.slots))}
	p.peak.Grew(len(p.index))
	pg.slots = append(pg.slots, slot{off: int32(off), size: int32(size)})
	pg.n++
	pg.live++
	pg.liveBytes += size
	if pg.n == 1 {
		pg.openedAt = time.Now()
		if len(p.full) == 0 && !p.closed { // else the timer is set for p.full[0], sooner
			p.timer.Reset(p.cfg.SealDelay)
		}
	}
	if pg.liveBytes >= p.cfg.PageBytes || pg.live >= p.cfg.PageRecords || len(pg.slots) >= p.maxSlots {
		p.fullLocked(pg, sealQ)
	}
	return pg
}

func (p *Packer) openLocked() *page {
	pg := &page{seq: p.nextSeq, state: pageOpen}
	p.nextSeq++
	pg.key = p.PageKey(pg.seq)
	if n := len(p.freeRaw); n > 0 {
		pg.raw = p.freeRaw[n-1][:0]
		p.freeRaw[n-1] = nil
		p.freeRaw = p.freeRaw[:n-1]
	} else {
		pg.raw = make([]byte, 0, p.cfg.PageBytes+64)
	}
	if n := len(p.freeSlots); n > 0 {
		pg.slots = p.freeSlots[n-1][:0]
		p.freeSlots[n-1] = nil
		p.freeSlots = p.freeSlots[:n-1]
	}
	p.open = pg
	return pg
}

// fullLocked retires the open page pg from receiving records: it waits in p.full until
// SealDelay after its first record, unless that has passed or too many pages wait.
func (p *Packer) fullLocked(pg *page, sealQ *[]*page) {
	if p.closed || time.Since(pg.openedAt) >= p.cfg.SealDelay {
		p.sealLocked(pg, sealQ)
		return
	}
	p.open = nil
	pg.state = pageFull
	p.full = append(p.full, pg)
	if len(p.full) > p.maxFull {
		p.sealLocked(p.full[0], sealQ)
	}
}

// removeFullLocked takes pg out of p.full, if it is there.
func (p *Packer) removeFullLocked(pg *page) {
	for i, f := range p.full {
		if f == pg {
			copy(p.full[i:], p.full[i+1:])
			p.full[len(p.full)-1] = nil
			p.full = p.full[:len(p.full)-1]
			return
		}
	}
}

// sealLocked seals an open or full page: it drops the page's dead frames and queues it
// for compression (finishSeals), or drops the page if it has no live record.
func (p *Packer) sealLocked(pg *page, sealQ *[]*page) {
	switch pg.state {
	case pageOpen:
		p.open = nil
	case pageFull:
		p.removeFullLocked(pg)
	default:
		panic("gcs: packer: sealing a page that is not open or full")
	}
	if pg.live == 0 { // cannot happen: such pages are dropped or emptied at once
		p.dropUnwrittenLocked(pg)
		return
	}
	if pg.live < pg.n {
		p.compactLocked(pg)
	}
	p.recycleSlotsLocked(pg)
	pg.state = pageSealing
	p.sealing[pg] = struct{}{}
	*sealQ = append(*sealQ, pg)
}

func (p *Packer) sealingBeforeLocked(seq uint64) bool {
	for pg := range p.sealing {
		if pg.seq < seq {
			return true
		}
	}
	return false
}

// compactLocked moves the live frames of an open or full page to the front of its buffer,
// in order, and drops the dead ones.
func (p *Packer) compactLocked(pg *page) {
	dst := 0 // the frames of the slots before pg.lo were dropped by an earlier compaction
	lo, seenLive := pg.lo, false
	for i := pg.lo; i < len(pg.slots); i++ {
		s := &pg.slots[i]
		if s.size == 0 {
			if !seenLive {
				lo = i + 1
			}
			continue
		}
		seenLive = true
		if int(s.off) != dst {
			copy(pg.raw[dst:], pg.raw[s.off:s.off+s.size])
			s.off = int32(dst)
		}
		dst += int(s.size)
	}
	if dst != pg.liveBytes { // cannot happen; the frames are intact, only the count was off
		p.log.Error("gcs: packer: live bytes miscounted", "key", pg.key, "counted", pg.liveBytes, "found", dst)
		pg.liveBytes = dst
	}
	p.stats.Compacted += uint64(pg.n - pg.live)
	pg.lo = lo
	pg.raw = pg.raw[:dst]
	pg.n = pg.live
}

// recycleSlotsLocked keeps pg's slots for a later page; pg needs them no more.
func (p *Packer) recycleSlotsLocked(pg *page) {
	if len(p.freeSlots) < freeBuffers && pg.slots != nil {
		p.freeSlots = append(p.freeSlots, pg.slots[:0])
	}
	pg.slots, pg.lo = nil, 0
}

// recycleRawLocked keeps pg's buffer for a later page; pg needs it no more.
func (p *Packer) recycleRawLocked(pg *page) {
	if len(p.freeRaw) < freeBuffers && pg.raw != nil {
		p.freeRaw = append(p.freeRaw, pg.raw[:0])
	}
	pg.raw = nil
}

// dropUnwrittenLocked drops a page that was never handed to the Writer and holds no live
// record, taken out of p.open or p.full already.
func (p *Packer) dropUnwrittenLocked(pg *page) {
	pg.state = pageDead
	p.stats.PagesDropped++
	p.stats.Compacted += uint64(pg.n)
	pg.n = 0
	p.recycleRawLocked(pg)
	p.recycleSlotsLocked(pg)
	p.retireLocked(pg)
}

// retireLocked queues the deletes of the pages whose records were moved to pg, now that pg
// has been handed to the Writer or dropped, and issues those that may go.
func (p *Packer) retireLocked(pg *page) {
	if len(pg.retire) > 0 {
		p.retire = append(p.retire, retireItem{seq: pg.seq, keys: pg.retire})
		pg.retire = nil
	}
	p.issueRetiresLocked()
}

// dropLocked accounts for one record that went away (removed or superseded) from where l
// says it was; the caller has already updated the index.
func (p *Packer) dropLocked(l loc, sealQ *[]*page) {
	pg := l.pg
	pg.live--
	switch pg.state {
	case pageOpen, pageFull:
		s := &pg.slots[l.slot]
		pg.liveBytes -= int(s.size)
		s.size = 0
		if pg.live > 0 {
			break
		}
		if pg.state == pageFull {
			p.removeFullLocked(pg)
			p.dropUnwrittenLocked(pg)
			break
		}
		// The open page: nothing of it ever left memory, start it afresh.
		p.stats.Compacted += uint64(pg.n)
		pg.raw, pg.slots, pg.n, pg.lo, pg.liveBytes = pg.raw[:0], pg.slots[:0], 0, 0, 0
		if len(pg.retire) > 0 {
			p.retireLocked(pg)
		}
	case pageWritten:
		if pg.live == 0 {
			pg.state, pg.value = pageDead, nil
			p.w.Delete(pg.key)
			p.stats.PagesDeleted++
		} else {
			p.maybeRewriteLocked(pg, sealQ)
		}
	}
	// pageSealing: finishSeals looks at live when it is done.
}

// maybeRewriteLocked rewrites a written page that is below RewriteBelow, now if it is old
// enough, else when it is.
func (p *Packer) maybeRewriteLocked(pg *page, sealQ *[]*page) {
	if float64(pg.live) >= p.cfg.RewriteBelow*float64(pg.n) {
		return
	}
	age := time.Duration(0)
	if p.cfg.RewriteMinAge > 0 {
		age = time.Since(pg.writtenAt)
	}
	if age >= p.cfg.RewriteMinAge {
		p.rewriteLocked(pg, sealQ)
		return
	}
	if !pg.candidate && !p.closed {
		pg.candidate = true
		if len(p.candidates) == 0 {
			p.rewriteTimer.Reset(p.cfg.RewriteMinAge - age)
		}
		p.candidates = append(p.candidates, pg)
	}
}

// onRewriteTimer rewrites the candidates that came of age and re-arms for the others.
func (p *Packer) onRewriteTimer() {
	var sealQ []*page
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	now := time.Now()
	next := time.Duration(-1)
	kept := p.candidates[:0]
	for _, pg := range p.candidates {
		if pg.state != pageWritten {
			pg.candidate = false
			continue
		}
		if wait := p.cfg.RewriteMinAge - now.Sub(pg.writtenAt); wait > 0 {
			kept = append(kept, pg)
			if next < 0 || wait < next {
				next = wait
			}
			continue
		}
		pg.candidate = false
		if float64(pg.live) < p.cfg.RewriteBelow*float64(pg.n) {
			p.rewriteLocked(pg, &sealQ)
		}
	}
	clear(p.candidates[len(kept):])
	p.candidates = kept
	if next >= 0 {
		p.rewriteTimer.Reset(next)
	}
	p.mu.Unlock()
	if sealQ != nil {
		p.finishSeals(sealQ)
	}
}

// rewriteLocked moves the live records of a written page to the open page; the old page
// is deleted after the page holding the last moved record has been handed to the Writer.
func (p *Packer) rewriteLocked(old *page, sealQ *[]*page) {
	raw, err := decodeRaw(old.value)
	if err != nil { // cannot happen for a page we encoded; keep it rather than lose records
		p.log.Error("gcs: packer: cannot decode own page", "key", old.key, "err", err)
		return
	}
	// Sealing drops superseded frames, so an ID has one frame per page; were there two,
	// the last would be the live one.
	type frame struct {
		id  string
		rec []byte
	}
	var live []frame
	pos := make(map[string]int, old.live)
	err = forEachFrame(raw, func(id, rec []byte) bool {
		if p.index[string(id)].pg != old {
			return true
		}
		if i, dup := pos[string(id)]; dup {
			live[i].rec = rec
			return true
		}
		pos[string(id)] = len(live)
		live = append(live, frame{string(id), rec})
		return true
	})
	var last *page
	moved := 0
	for _, f := range live {
		last = p.appendLocked(f.id, f.rec, sealQ)
		old.live--
		moved++
	}
	if err != nil || old.live != 0 {
		p.log.Error("gcs: packer: rewrite of own page failed", "key", old.key, "err", err, "left", old.live)
	}
	old.state, old.value = pageDead, nil
	p.stats.Rewrites++
	p.stats.Moved += uint64(moved)
	if last == nil { // no live record after all
		p.w.Delete(old.key)
		p.stats.PagesDeleted++
		return
	}
	last.retire = append(last.retire, old.key)
}

// onTimer seals the full pages and the open page that have waited SealDelay since their
// first record, and sets the timer for the next one.
func (p *Packer) onTimer() {
	var sealQ []*page
	p.mu.Lock()
	if !p.closed {
		now := time.Now()
		for len(p.full) > 0 && now.Sub(p.full[0].openedAt) >= p.cfg.SealDelay {
			p.sealLocked(p.full[0], &sealQ)
		}
		if pg := p.open; pg != nil && pg.n > 0 && now.Sub(pg.openedAt) >= p.cfg.SealDelay {
			p.sealLocked(pg, &sealQ)
		}
		// Pages were opened in seq order, so the oldest waiting page is due first.
		var first *page
		if len(p.full) > 0 {
			first = p.full[0]
		} else if p.open != nil && p.open.n > 0 {
			first = p.open
		}
		if first != nil {
			p.timer.Reset(p.cfg.SealDelay - now.Sub(first.openedAt))
		}
	}
	p.mu.Unlock()
	if sealQ != nil {
		p.finishSeals(sealQ)
	}
}

// finishSeals compresses sealed pages and hands them to the Writer.
func (p *Packer) finishSeals(q []*page) {
	for len(q) > 0 {
		pg := q[0]
		q = q[1:]
		value := encodePage(pg.raw)
		p.mu.Lock()
		delete(p.sealing, pg)
		rawLen := len(pg.raw)
		p.recycleRawLocked(pg)
		if pg.live == 0 { // every record went while it was being compressed
			pg.state = pageDead
			p.stats.PagesDropped++
			p.stats.Compacted += uint64(pg.n)
		} else {
			pg.state, pg.value, pg.writtenAt = pageWritten, value, time.Now()
			p.w.Create(pg.key, value)
			p.stats.PagesWritten++
			p.stats.Records += uint64(pg.n)
			p.stats.RawBytes += uint64(rawLen)
			p.stats.PackedBytes += uint64(len(value))
		}
		p.retireLocked(pg)
		if pg.state == pageWritten {
			p.maybeRewriteLocked(pg, &q) // records went while it was being compressed
		}
		close(p.progress)
		p.progress = make(chan struct{})
		p.mu.Unlock()
	}
}

// issueRetiresLocked deletes rewritten pages whose records now live in pages that have
// all been handed to the Writer, behind a Writer barrier so the new pages are durable
// first.
func (p *Packer) issueRetiresLocked() {
	if len(p.retire) == 0 {
		return
	}
	// The pages not handed to the Writer yet, but for the open one (the newest): the full
	// ones (the oldest is first) and the sealing ones.
	minUnwritten := uint64(math.MaxUint64)
	if len(p.full) > 0 {
		minUnwritten = p.full[0].seq
	}
	for pg := range p.sealing {
		minUnwritten = min(minUnwritten, pg.seq)
	}
	kept := p.retire[:0]
	barrier := false
	for _, it := range p.retire {
		if it.seq >= minUnwritten {
			kept = append(kept, it)
			continue
		}
		if !barrier {
			p.w.Barrier()
			barrier = true
		}
		for _, k := range it.keys {
			p.w.Delete(k)
			p.stats.PagesDeleted++
		}
	}
	clear(p.retire[len(kept):])
	p.retire = kept
}

func encodePage(raw []byte) []byte {
	buf := make([]byte, 1+s2.MaxEncodedLen(len(raw)))
	buf[0] = pageVersion
	enc := s2.Encode(buf[1:], raw)
	if len(enc)+1 < len(buf)*3/4 { // do not pin a mostly empty buffer
		v := make([]byte, 1+len(enc))
		v[0] = pageVersion
		copy(v[1:], enc)
		return v
	}
	return buf[:1+len(enc)]
}

func decodeRaw(value []byte) ([]byte, error) {
	if len(value) == 0 || value[0] != pageVersion {
		return nil, errors.New("gcs: not a packed page (bad version byte)")
	}
	n, err := s2.DecodedLen(value[1:])
	if err != nil {
		return nil, fmt.Errorf("gcs: packed page: %w", err)
	}
	if n > 2*MaxRecordBytes {
		return nil, fmt.Errorf("gcs: packed page: %d bytes decoded is too large", n)
	}
	raw, err := s2.Decode(nil, value[1:])
	if err != nil {
		return nil, fmt.Errorf("gcs: packed page: %w", err)
	}
	return raw, nil
}

func forEachFrame(raw []byte, fn func(id, rec []byte) bool) error {
	for len(raw) > 0 {
		idLen, n := binary.Uvarint(raw)
		if n <= 0 || idLen > uint64(len(raw)-n) {
			return errors.New("gcs: packed page: bad record frame")
		}
		id := raw[n : n+int(idLen)]
		raw = raw[n+int(idLen):]
		recLen, n := binary.Uvarint(raw)
		if n <= 0 || recLen > uint64(len(raw)-n) {
			return errors.New("gcs: packed page: bad record frame")
		}
		rec := raw[n : n+int(recLen) : n+int(recLen)]
		raw = raw[n+int(recLen):]
		if !fn(id, rec) {
			return nil
		}
	}
	return nil
}

// Record is one record of a packed page.
type Record struct {
	ID   string
	Data []byte
}

// DecodePage returns the records of a page value, in the order they were appended; when an
// ID occurs twice, the later record supersedes the earlier. The Data slices share one
// buffer.
func DecodePage(value []byte) ([]Record, error) {
	raw, err := decodeRaw(value)
	if err != nil {
		return nil, err
	}
	var recs []Record
	err = forEachFrame(raw, func(id, rec []byte) bool {
		recs = append(recs, Record{ID: string(id), Data: rec})
		return true
	})
	return recs, err
}

// ReadAll reads every page under prefix (a table prefix such as LineagePrefix, or one
// Packer's Prefix+Owner+"/") and returns the records by ID, with the revision it read at.
// Pages are applied in key order, so for one Packer a newer copy of an ID wins; the result
// may hold records that were removed but whose page was not yet rewritten (see Packer).
func ReadAll(ctx context.Context, store Store, prefix string) (map[string][]byte, int64, error) {
	kvs, rev, err := store.List(ctx, prefix)
	if err != nil {
		return nil, 0, fmt.Errorf("gcs: read pages under %q: %w", prefix, err)
	}
	out := make(map[string][]byte)
	for _, kv := range kvs {
		raw, err := decodeRaw(kv.Value)
		if err == nil {
			err = forEachFrame(raw, func(id, rec []byte) bool {
				out[string(id)] = rec
				return true
			})
		}
		if err != nil {
			return nil, 0, fmt.Errorf("gcs: page %q: %w", kv.Key, err)
		}
	}
	return out, rev, nil
}

// ParsePageKey splits a page key into the Packer owner and the page sequence number.
func ParsePageKey(prefix, key string) (owner string, seq uint64, err error) {
	rest, ok := strings.CutPrefix(key, prefix)
	owner, hexSeq, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || owner == "" || len(hexSeq) != 16 {
		return "", 0, fmt.Errorf("gcs: %q is not a page key under %q", key, prefix)
	}
	seq, err = strconv.ParseUint(hexSeq, 16, 64)
	if err != nil {
		return "", 0, fmt.Errorf("gcs: %q is not a page key under %q: %w", key, prefix, err)
	}
	return owner, seq, nil
}
