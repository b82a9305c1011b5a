package gcs

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// More sentinels of the Store contract (see Store). Both implementations return errors that
// satisfy errors.Is with these, wrapped with their package prefix.
var (
	// ErrCompacted: the requested revision (a Watch's fromRev, or Compact's rev) is at or
	// before the store's compaction point.
	ErrCompacted = errors.New("gcs: revision compacted")
	// ErrFutureRev: Compact was asked for a revision the store has not reached.
	ErrFutureRev = errors.New("gcs: revision in the future")
	// ErrEmptyKey: an operation named the empty key (only a prefix may be empty).
	ErrEmptyKey = errors.New("gcs: empty key")
	// ErrDuplicateKey: a Txn puts one key twice, or puts a key that a delete of the same Txn
	// covers (etcd rejects both; split such work over several Txns).
	ErrDuplicateKey = errors.New("gcs: duplicate key in transaction")
	// ErrNoSpace: the store reached its space quota (etcd's NOSPACE alarm). Only deletes and
	// compaction help; the design keeps this from ever happening by garbage-collecting.
	ErrNoSpace = errors.New("gcs: store space quota exceeded")
	// ErrPermissionDenied: the store refused the request to this client: its role may not
	// do that with that key (see identity's GCS role table), or its certificate was revoked
	// (its user is gone). Only the etcd store returns it, with auth enabled.
	ErrPermissionDenied = errors.New("gcs: permission denied")
)

// IsPermanent reports whether err will recur if the same request is retried unchanged:
// the contract's sentinels (ErrClosed, ErrTooLarge, ErrLeaseNotFound, ErrCompacted,
// ErrFutureRev, ErrEmptyKey, ErrDuplicateKey, ErrNoSpace, ErrPermissionDenied) and context
// errors. Anything else (unavailable, timeouts, leader changes) is treated as transient.
func IsPermanent(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrClosed), errors.Is(err, ErrTooLarge), errors.Is(err, ErrLeaseNotFound),
		errors.Is(err, ErrCompacted), errors.Is(err, ErrFutureRev), errors.Is(err, ErrEmptyKey),
		errors.Is(err, ErrDuplicateKey), errors.Is(err, ErrNoSpace), errors.Is(err, ErrPermissionDenied),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return true
	}
	return false
}

// OpBytes is what one Op counts against MaxRequestBytes: its key plus its value.
func OpBytes(op Op) int { return len(op.Key) + len(op.Value) }

// CheckTxn validates a transaction against the contract before it is sent: at most
// MaxTxnOps ops and MaxRequestBytes bytes (ErrTooLarge), no empty key except as the prefix
// of OpDeletePrefix (ErrEmptyKey), a known OpKind, and no key put twice or put and deleted
// (ErrDuplicateKey). Implementations call it so that both report the same errors.
func CheckTxn(cmps []Cmp, ops []Op) error {
	if len(ops) > MaxTxnOps {
		return fmt.Errorf("gcs: txn with %d ops (max %d): %w", len(ops), MaxTxnOps, ErrTooLarge)
	}
	size := 0
	for _, c := range cmps {
		if c.Key == "" {
			return fmt.Errorf("gcs: txn cmp: %w", ErrEmptyKey)
		}
		size += len(c.Key)
	}
	puts, dels := 0, 0
	for _, op := range ops {
		switch op.Kind {
		case OpPut:
			puts++
		case OpDelete, OpDeletePrefix:
			dels++
		default:
			return fmt.Errorf("gcs: txn op on %q: unknown kind %d", op.Key, op.Kind)
		}
		if op.Key == "" && op.Kind != OpDeletePrefix {
			return fmt.Errorf("gcs: txn op: %w", ErrEmptyKey)
		}
		size += OpBytes(op)
	}
	if size > MaxRequestBytes {
		return fmt.Errorf("gcs: txn of %d bytes (max %d): %w", size, MaxRequestBytes, ErrTooLarge)
	}
	if puts == 0 || puts+dels < 2 {
		return nil
	}
	seen := make(map[string]struct{}, puts)
	for _, op := range ops {
		if op.Kind != OpPut {
			continue
		}
		if _, dup := seen[op.Key]; dup {
			return fmt.Errorf("gcs: txn puts %q twice: %w", op.Key, ErrDuplicateKey)
		}
		seen[op.Key] = struct{}{}
	}
	if dels == 0 {
		return nil
	}
	for _, op := range ops {
		var hit bool
		switch op.Kind {
		case OpDelete:
			_, hit = seen[op.Key]
		case OpDeletePrefix:
			for k := range seen {
				if strings.HasPrefix(k, op.Key) {
					hit = true
					break
				}
			}
		}
		if hit {
			return fmt.Errorf("gcs: txn puts a key it deletes (%q): %w", op.Key, ErrDuplicateKey)
		}
	}
	return nil
}

// PrefixEnd returns the smallest key greater than every key that starts with prefix, or ""
// when there is none (prefix is empty or all 0xff bytes). It is the etcd range end of a
// prefix.
func PrefixEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}
