package ship

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/ray-go/ray/internal/base/gcs"
)

// Prefix is the GCS prefix of every blob (package gcs's schema spells it as
// gcs.BlobsPrefix). Under it:
//
//	blobs/m/<sha256>                        Meta of a complete blob (JSON), on the blob's lease
//	blobs/c/<sha256>/<lease hex>/<index>    its zstd stream in chunks of at most ChunkBytes,
//	                                        on the same lease
const Prefix = "blobs/"

const (
	metaPrefix  = Prefix + "m/"
	chunkPrefix = Prefix + "c/"
)

// MaxExecutableBytes is the largest executable a driver ships (and an agent fetches).
const MaxExecutableBytes = 1 << 30

// ChunkBytes is the most bytes of one chunk key: below etcd's 1.5 MiB request limit.
const ChunkBytes = 1 << 20

// TTL is the lease of a blob held by a process (Hold keeps it alive): the blob leaves the
// GCS this long after its last holder stops.
const TTL = 20 * time.Second

// decoderWindow bounds the zstd window a fetch accepts (the encoder here uses far less),
// so a forged stream cannot make a decoder allocate more.
const decoderWindow = 8 << 20

var (
	// ErrNotFound: no complete blob with that hash is in the GCS.
	ErrNotFound = errors.New("ship: no such blob in the GCS")
	// ErrCorrupt: the blob's bytes do not hash to its name, its size or chunks are not
	// what its record says, or its record cannot be read. Nothing of it is used.
	ErrCorrupt = errors.New("ship: blob failed verification")
	// ErrTooLarge: the blob (or what would be uploaded) exceeds the caller's limit.
	ErrTooLarge = errors.New("ship: blob too large")
)

// MetaKey is the key of the record of blob sum.
func MetaKey(sum string) string { return metaPrefix + sum }

func chunksOf(sum string, lease gcs.LeaseID) string {
	return fmt.Sprintf("%s%s/%016x/", chunkPrefix, sum, uint64(lease))
}

func chunkKey(sum string, lease gcs.LeaseID, i int) string {
	return fmt.Sprintf("%s%06d", chunksOf(sum, lease), i)
}

// Meta is the record of a complete blob.
type Meta struct {
	Size   int64 `json:"size"`   // bytes of the content
	Chunks int   `json:"chunks"` // chunk keys of the zstd stream
	Stored int64 `json:"stored"` // bytes of the zstd stream
	Lease  int64 `json:"lease"`  // the lease the blob's keys are on; names the chunk keys
}

// DecodeMeta parses a blob record, refusing one whose numbers cannot describe a blob.
func DecodeMeta(b []byte) (Meta, error) {
	var m Meta
	if len(b) > 4096 {
		return m, fmt.Errorf("%w: a record of %d bytes", ErrCorrupt, len(b))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Meta{}, fmt.Errorf("%w: record: %v", ErrCorrupt, err)
	}
	switch {
	case m.Size < 0 || m.Stored < 0 || m.Chunks < 0:
		return Meta{}, fmt.Errorf("%w: record with negative sizes %+v", ErrCorrupt, m)
	case m.Lease == 0:
		return Meta{}, fmt.Errorf("%w: record names no lease", ErrCorrupt)
	case int64(m.Chunks) != (m.Stored+ChunkBytes-1)/ChunkBytes:
		return Meta{}, fmt.Errorf("%w: record says %d chunks for %d stored bytes", ErrCorrupt, m.Chunks, m.Stored)
	}
	return m, nil
}

// ValidSum reports whether s is a hex sha256 (64 lower-case hex digits): only such names
// become keys and file names.
func ValidSum(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// upload makes blob sum present in the GCS: if a complete copy is there, it keeps that
// copy's lease alive (joins it); otherwise it writes the content of r (compressed) on a
// new lease of ttl and records it, unless another uploader recorded it first (then its own
// chunks go and it joins that copy). The blob is never stored twice under one hash.
//
// With keep set, the lease is kept alive until ctx ends: lost is closed when it is lost.
// Without, the lease runs for ttl from now (one keep-alive when joining) and lost is nil.
func upload(ctx context.Context, store gcs.Store, sum string, size, limit int64, open func() (io.Reader, error), ttl time.Duration, keep bool) (lease gcs.LeaseID, lost <-chan struct{}, err error) {
	if !ValidSum(sum) {
		return 0, nil, fmt.Errorf("ship: %q is not a sha256", sum)
	}
	if size > limit {
		return 0, nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, size, limit)
	}
	for attempt := 0; attempt < 5; attempt++ {
		if l, lost, ok, err := join(ctx, store, sum, keep); err != nil || ok {
			return l, lost, err
		}
		l, err := store.Grant(ctx, ttl)
		if err != nil {
			return 0, nil, fmt.Errorf("ship: grant the blob's lease: %w", err)
		}
		kctx, stop := context.WithCancel(ctx)
		lost, err := store.KeepAlive(kctx, l)
		if err != nil {
			stop()
			return 0, nil, fmt.Errorf("ship: keep the blob's lease: %w", err)
		}
		r, err := open()
		if err == nil {
			var m Meta
			m, err = writeChunks(ctx, store, sum, l, r, size)
			if err == nil {
				b, _ := json.Marshal(m)
				var ok bool
				ok, _, err = store.Txn(ctx, []gcs.Cmp{{Key: MetaKey(sum), ModRev: 0}},
					[]gcs.Op{{Kind: gcs.OpPut, Key: MetaKey(sum), Value: b, Lease: l}})
				if err == nil && ok {
					if !keep {
						stop() // the lease runs out ttl after now
						return l, nil, nil
					}
					go func() { <-ctx.Done(); stop() }()
					return l, lost, nil
				}
				// Another uploader won: drop ours, join theirs.
			}
		}
		stop()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = store.Revoke(rctx, l)
		cancel()
		if err != nil {
			return 0, nil, err
		}
	}
	return 0, nil, fmt.Errorf("ship: upload blob %s: too much contention", sum)
}

// join keeps an existing complete copy of sum alive. ok is false when there is none (or
// its lease ended just now).
func join(ctx context.Context, store gcs.Store, sum string, keep bool) (gcs.LeaseID, <-chan struct{}, bool, error) {
	kv, found, err := store.Get(ctx, MetaKey(sum))
	if err != nil {
		return 0, nil, false, fmt.Errorf("ship: read blob %s: %w", sum, err)
	}
	if !found {
		return 0, nil, false, nil
	}
	m, err := DecodeMeta(kv.Value)
	if err != nil {
		return 0, nil, false, fmt.Errorf("blob %s: %w (the record goes with its lease, within %v of its holders' end)", sum, err, TTL)
	}
	l := gcs.LeaseID(m.Lease)
	kctx, stop := context.WithCancel(ctx)
	lost, err := store.KeepAlive(kctx, l)
	if errors.Is(err, gcs.ErrLeaseNotFound) {
		stop()
		return 0, nil, false, nil
	}
	if err != nil {
		stop()
		return 0, nil, false, fmt.Errorf("ship: keep blob %s: %w", sum, err)
	}
	if !keep {
		// One renewal is all a process that does not stay needs: the lease then runs its
		// full TTL from now.
		select {
		case <-time.After(200 * time.Millisecond):
		case <-lost:
		}
		stop()
		return l, nil, true, nil
	}
	go func() { <-ctx.Done(); stop() }()
	return l, lost, true, nil
}

// chunkWriter cuts the zstd stream into chunk keys.
type chunkWriter struct {
	ctx    context.Context
	store  gcs.Store
	sum    string
	lease  gcs.LeaseID
	buf    []byte
	n      int
	stored int64
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		k := copy(w.buf[len(w.buf):cap(w.buf)], p)
		w.buf = w.buf[:len(w.buf)+k]
		p = p[k:]
		if len(w.buf) == cap(w.buf) {
			if err := w.flush(); err != nil {
				return 0, err
			}
		}
	}
	return total, nil
}

func (w *chunkWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	if _, err := w.store.Put(w.ctx, chunkKey(w.sum, w.lease, w.n), bytes.Clone(w.buf), w.lease); err != nil {
		return fmt.Errorf("ship: store chunk %d of blob %s: %w", w.n, w.sum, err)
	}
	w.n++
	w.stored += int64(len(w.buf))
	w.buf = w.buf[:0]
	return nil
}

// writeChunks compresses r into chunk keys and checks that r held size bytes hashing to
// sum (a file that changed since it was hashed is refused, not shipped).
func writeChunks(ctx context.Context, store gcs.Store, sum string, lease gcs.LeaseID, r io.Reader, size int64) (Meta, error) {
	cw := &chunkWriter{ctx: ctx, store: store, sum: sum, lease: lease, buf: make([]byte, 0, ChunkBytes)}
	enc, err := zstd.NewWriter(cw, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(4<<20))
	if err != nil {
		return Meta{}, err
	}
	h := sha256.New()
	n, err := io.Copy(enc, io.TeeReader(io.LimitReader(r, size+1), h))
	if err != nil {
		enc.Close()
		return Meta{}, fmt.Errorf("ship: upload blob %s: %w", sum, err)
	}
	if err := enc.Close(); err != nil {
		return Meta{}, err
	}
	if err := cw.flush(); err != nil {
		return Meta{}, err
	}
	if got := hex.EncodeToString(h.Sum(nil)); n != size || got != sum {
		return Meta{}, fmt.Errorf("ship: the content changed while it was uploaded: %d bytes with sha256 %s, expected %d bytes with %s", n, got, size, sum)
	}
	return Meta{Size: size, Chunks: cw.n, Stored: cw.stored, Lease: int64(lease)}, nil
}

// Upload makes blob sum (size bytes, read from r) present in the GCS for ttl from now,
// without keeping it alive (rayctl job submit, which exits): a copy already there gets one
// keep-alive instead. The consumer must fetch it within ttl.
func Upload(ctx context.Context, store gcs.Store, sum string, r io.ReaderAt, size, limit int64, ttl time.Duration) error {
	_, _, err := upload(ctx, store, sum, size, limit, func() (io.Reader, error) { return io.NewSectionReader(r, 0, size), nil }, ttl, false)
	return err
}

// Hold makes blob sum (size bytes of r) present in the GCS until ctx ends, and then for at
// most TTL: it uploads it (or joins a copy already there), keeps the blob's lease alive,
// and uploads again when the lease is lost (a GCS outage longer than TTL). The first upload
// happens before Hold returns, and its error is Hold's. done is closed once ctx has ended
// and this holder no longer keeps the lease alive.
func Hold(ctx context.Context, store gcs.Store, sum string, r io.ReaderAt, size, limit int64, log *slog.Logger) (done <-chan struct{}, err error) {
	open := func() (io.Reader, error) { return io.NewSectionReader(r, 0, size), nil }
	_, lost, err := upload(ctx, store, sum, size, limit, open, TTL, true)
	if err != nil {
		return nil, err
	}
	d := make(chan struct{})
	go func() {
		defer close(d)
		for {
			select {
			case <-ctx.Done():
				<-lost // closed once the keep-alive has stopped (the gcs.Store contract)
				return
			case <-lost:
			}
			if ctx.Err() != nil {
				return
			}
			for {
				var err error
				_, lost, err = upload(ctx, store, sum, size, limit, open, TTL, true)
				if err == nil {
					break
				}
				if log != nil {
					log.Warn("ship: cannot upload the blob again after its lease was lost; retrying", "sha256", sum, "err", err)
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
			}
		}
	}()
	return d, nil
}

// Fetch writes the content of blob sum to w and verifies it: at most limit bytes, exactly
// the size its record names, hashing to sum. It returns ErrNotFound, ErrTooLarge or
// ErrCorrupt (wrapped, with what was wrong). w has seen unverified bytes when Fetch fails:
// the caller must discard them (FetchFile does). Memory stays bounded whatever the GCS
// holds: one chunk of at most ChunkBytes and a decoder window of at most 8 MiB.
func Fetch(ctx context.Context, store gcs.Store, sum string, limit int64, w io.Writer) error {
	if !ValidSum(sum) {
		return fmt.Errorf("ship: %q is not a sha256", sum)
	}
	kv, found, err := store.Get(ctx, MetaKey(sum))
	if err != nil {
		return fmt.Errorf("ship: read blob %s: %w", sum, err)
	}
	if !found {
		return fmt.Errorf("%w: sha256 %s (its uploader is gone, or never uploaded it)", ErrNotFound, sum)
	}
	m, err := DecodeMeta(kv.Value)
	if err != nil {
		return fmt.Errorf("blob %s: %w", sum, err)
	}
	if m.Size > limit {
		return fmt.Errorf("%w: blob %s has %d bytes, the limit is %d", ErrTooLarge, sum, m.Size, limit)
	}
	if m.Stored > limit+limit/8+ChunkBytes {
		return fmt.Errorf("%w: blob %s stores %d compressed bytes for %d", ErrCorrupt, sum, m.Stored, m.Size)
	}
	cr := &chunkReader{ctx: ctx, store: store, sum: sum, m: m}
	dec, err := zstd.NewReader(cr, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(decoderWindow),
		zstd.WithDecoderMaxMemory(uint64(m.Size)+decoderWindow))
	if err != nil {
		return err
	}
	defer dec.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(dec, m.Size+1))
	if err != nil {
		if cr.err != nil {
			err = cr.err
		}
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrCorrupt) || ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("%w: blob %s: %v", ErrCorrupt, sum, err)
	}
	if n != m.Size {
		return fmt.Errorf("%w: blob %s decodes to %d bytes, its record says %d", ErrCorrupt, sum, n, m.Size)
	}
	if cr.i != m.Chunks || cr.read != m.Stored {
		return fmt.Errorf("%w: blob %s: the stream ended after %d of %d chunks", ErrCorrupt, sum, cr.i, m.Chunks)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sum {
		return fmt.Errorf("%w: the bytes fetched for sha256 %s hash to %s", ErrCorrupt, sum, got)
	}
	return nil
}

// chunkReader reads a blob's chunk keys in order, one at a time.
type chunkReader struct {
	ctx   context.Context
	store gcs.Store
	sum   string
	m     Meta
	i     int
	read  int64
	cur   []byte
	err   error
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		if r.i == r.m.Chunks {
			return 0, io.EOF
		}
		kv, found, err := r.store.Get(r.ctx, chunkKey(r.sum, gcs.LeaseID(r.m.Lease), r.i))
		switch {
		case err != nil:
			r.err = fmt.Errorf("ship: read chunk %d of blob %s: %w", r.i, r.sum, err)
		case !found:
			r.err = fmt.Errorf("%w: chunk %d of blob %s is gone (its last holder ended?)", ErrNotFound, r.i, r.sum)
		case len(kv.Value) == 0 || len(kv.Value) > ChunkBytes || r.read+int64(len(kv.Value)) > r.m.Stored:
			r.err = fmt.Errorf("%w: chunk %d of blob %s has %d bytes", ErrCorrupt, r.i, r.sum, len(kv.Value))
		default:
			r.cur = kv.Value
			r.read += int64(len(kv.Value))
			r.i++
		}
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}
