package gcs

import (
	"context"
	"errors"
	"time"
)

// MaxTxnOps is the most operations one Txn may carry (etcd's default --max-txn-ops).
const MaxTxnOps = 128

// MaxRequestBytes is the most bytes (keys plus values) one request may carry. etcd's
// default limit is 1.5 MiB; we stay a little under it to leave room for framing.
const MaxRequestBytes = 1<<20 + 1<<19 - 64<<10

// ErrClosed is returned by every Store method after Close.
var ErrClosed = errors.New("gcs: store closed")

// ErrTooLarge is returned by Txn when the operations exceed MaxTxnOps or MaxRequestBytes.
var ErrTooLarge = errors.New("gcs: transaction too large")

// ErrLeaseNotFound is returned when a lease has expired or was revoked.
var ErrLeaseNotFound = errors.New("gcs: lease not found")

// LeaseID names a lease. The zero value means "no lease".
type LeaseID int64

// KV is one stored key.
type KV struct {
	Key       string
	Value     []byte
	CreateRev int64   // revision that created the key (since its last deletion)
	ModRev    int64   // revision of the last change
	Lease     LeaseID // lease attached to the key, or 0
}

// OpKind says what an Op does.
type OpKind uint8

const (
	OpPut          OpKind = iota + 1 // set Key to Value (with Lease if non-zero)
	OpDelete                         // delete Key
	OpDeletePrefix                   // delete every key starting with Key
)

// Op is one operation of a Txn.
type Op struct {
	Kind  OpKind
	Key   string
	Value []byte
	Lease LeaseID
}

// Cmp is a condition of a conditional transaction: the key's ModRev must equal ModRev
// (ModRev 0 means the key must not exist).
type Cmp struct {
	Key    string
	ModRev int64
}

// EventType says what happened to a watched key.
type EventType uint8

const (
	EventPut    EventType = iota + 1
	EventDelete           // KV holds the key and the deletion revision as ModRev; Value is nil
)

// Event is one change seen by a watch.
type Event struct {
	Type EventType
	KV   KV
}

// WatchResponse is a batch of events of one revision range, in revision order.
// Err is set (and the channel then closed) when the watch cannot continue, for
// example because the requested start revision was compacted.
type WatchResponse struct {
	Events []Event
	Err    error
}

// Store is the global control store (GCS): a small key-value interface with the semantics
// of etcd v3, which is the production implementation (package gcs/etcdstore); package
// gcs/memstore is an in-memory fake for unit tests. Package gcs/gcstest holds the
// conformance suite both pass.
//
// Contract:
//   - Keys are arbitrary strings; values are opaque bytes (callers must not modify a
//     Value they passed in or got back).
//   - Every successful mutation returns the store revision it created. Revisions grow
//     strictly across all keys; a Txn is one revision.
//   - Txn applies all ops atomically, or none when a Cmp fails (ok=false, err=nil).
//     More than MaxTxnOps ops or more than MaxRequestBytes bytes gives ErrTooLarge.
//   - Watch delivers every change to keys under prefix with revision >= fromRev
//     (fromRev 0 means "from now"), in revision order, without gaps, until ctx is done;
//     then the channel is closed. A compacted fromRev gives one response with Err set.
//   - A key put with a lease is deleted (and watchers see EventDelete) when the lease
//     expires or is revoked. KeepAlive keeps a lease alive until ctx is done; the
//     returned channel is closed when the lease is lost (expired, revoked, or the
//     store became unreachable for longer than the TTL).
//   - Methods honour ctx cancellation and deadlines.
//
// Details both implementations share (the conformance suite in gcs/gcstest checks each):
//   - The empty key is invalid (ErrEmptyKey), except as a prefix (List, Count, Watch,
//     OpDeletePrefix). A Txn may not put a key twice, nor put a key one of its deletes covers
//     (ErrDuplicateKey). CheckTxn implements these checks and the size limits.
//   - A mutation that changes nothing (deleting an absent key, a Txn whose ops change
//     nothing, a Txn whose Cmp fails) creates no revision and returns the current one.
//   - Lease TTLs are whole seconds: Grant rounds up, with a minimum of 1 s (etcd may raise
//     it further to its own minimum, 1.5 election timeouts). Putting a key with an unknown,
//     expired or revoked lease gives ErrLeaseNotFound, as do KeepAlive and Revoke. The lost
//     channel of KeepAlive is also closed once ctx is done (the keep-alive stopped).
//   - Compact(rev) keeps revision rev and later: a Watch from fromRev < rev fails with
//     ErrCompacted (as does a watcher that falls that far behind), Compact of a revision at
//     or before the last compaction gives ErrCompacted, of a future revision ErrFutureRev.
//   - Close ends every watch (their channels are closed, possibly after a response with
//     ErrClosed) and closes every lost channel of KeepAlive; a Watch on a closed store yields
//     one response with ErrClosed. Close itself returns ErrClosed when called again.
//   - A watch consumer must keep reading its channel or cancel ctx: delivery blocks on it.
type Store interface {
	Get(ctx context.Context, key string) (kv KV, found bool, err error)
	// List returns every key under prefix in key order, and the revision it read at.
	List(ctx context.Context, prefix string) (kvs []KV, rev int64, err error)
	// Count returns how many keys are under prefix.
	Count(ctx context.Context, prefix string) (int64, error)
	Put(ctx context.Context, key string, value []byte, lease LeaseID) (rev int64, err error)
	Delete(ctx context.Context, key string) (rev int64, err error)
	// Txn applies ops atomically if every cmp holds.
	Txn(ctx context.Context, cmps []Cmp, ops []Op) (ok bool, rev int64, err error)
	Watch(ctx context.Context, prefix string, fromRev int64) <-chan WatchResponse

	Grant(ctx context.Context, ttl time.Duration) (LeaseID, error)
	KeepAlive(ctx context.Context, id LeaseID) (lost <-chan struct{}, err error)
	Revoke(ctx context.Context, id LeaseID) error

	// Compact discards the history before rev (watches from earlier revisions fail).
	Compact(ctx context.Context, rev int64) error
	// Revision returns the store's current revision.
	Revision(ctx context.Context) (int64, error)
	Close() error
}
