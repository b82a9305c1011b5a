package gcs

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// CertRecord is certs/<serial>: a certificate the head's CA issued (the join endpoint's,
// and the head's own), for `rayctl cert list`. Serial is identity.SerialText's form.
type CertRecord struct {
	Serial string `json:"serial"`
	Name   string `json:"name"` // the name it was issued for (identity.NameOf)
	// User is its GCS (etcd) user, the subject's common name (identity.GCSUser); empty in
	// records written before certificates had users, whose Name is the common name.
	User     string    `json:"user,omitempty"`
	Role     string    `json:"role"`
	AgentID  string    `json:"agent_id,omitempty"` // for agents (head and node roles)
	NotAfter time.Time `json:"not_after"`
	IssuedAt time.Time `json:"issued_at"`
}

// RevokedRecord is revoked/<serial>: a certificate no process of the cluster accepts any
// more (`rayctl cert revoke`).
type RevokedRecord struct {
	Serial    string    `json:"serial"`
	RevokedAt time.Time `json:"revoked_at"`
	// NotAfter is the revoked certificate's expiry when its record said (zero: unknown):
	// the head drops the revocation some time after it (an expired certificate is
	// refused anyway).
	NotAfter time.Time `json:"not_after,omitzero"`
}

// CertKey and RevokedKey are the keys of a certificate's records.
func CertKey(serial string) string    { return CertsPrefix + serial }
func RevokedKey(serial string) string { return RevokedPrefix + serial }

// maxCertRecord bounds what the decoders read: a record is a few hundred bytes.
const maxCertRecord = 4 << 10

// DecodeCertRecord and DecodeRevokedRecord read what the JSON encoding of the records
// wrote; anything else, or larger than a record can be, is an error.
func DecodeCertRecord(b []byte) (CertRecord, error) {
	var r CertRecord
	return r, decodeRecord(b, &r)
}

func DecodeRevokedRecord(b []byte) (RevokedRecord, error) {
	var r RevokedRecord
	return r, decodeRecord(b, &r)
}

func decodeRecord(b []byte, v any) error {
	if len(b) > maxCertRecord {
		return fmt.Errorf("gcs: a certificate record of %d bytes (at most %d)", len(b), maxCertRecord)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("gcs: certificate record: %w", err)
	}
	return nil
}

// ListRevoked returns the revoked/ records (undecodable ones are skipped: the key names
// the serial, which is what counts) and the revision it read at.
func ListRevoked(ctx context.Context, s Store) ([]RevokedRecord, int64, error) {
	kvs, rev, err := s.List(ctx, RevokedPrefix)
	if err != nil {
		return nil, 0, err
	}
	out := make([]RevokedRecord, 0, len(kvs))
	for _, kv := range kvs {
		serial, _ := TrimKey(RevokedPrefix, kv.Key)
		r, err := DecodeRevokedRecord(kv.Value)
		if err != nil || r.Serial != serial {
			r = RevokedRecord{Serial: serial}
		}
		out = append(out, r)
	}
	return out, rev, nil
}

// WatchRevoked calls apply with the whole revoked/ list, first as it is after rev (the
// revision of a list the caller already applied; 0: read it now), then after every change,
// until ctx is done. A watch that fails (the store unreachable, compacted) is started again
// from a fresh list after a pause of retry. It returns when ctx is done.
func WatchRevoked(ctx context.Context, s Store, rev int64, retry time.Duration, apply func([]RevokedRecord)) {
	for ctx.Err() == nil {
		if rev == 0 {
			list, r, err := ListRevoked(ctx, s)
			if err != nil {
				pause(ctx, retry)
				continue
			}
			apply(list)
			rev = r
		}
		wctx, cancel := context.WithCancel(ctx)
		for resp := range s.Watch(wctx, RevokedPrefix, rev+1) {
			if resp.Err != nil {
				break
			}
			list, r, err := ListRevoked(ctx, s)
			if err != nil {
				break
			}
			apply(list)
			rev = r
		}
		cancel()
		if ctx.Err() == nil {
			rev = 0 // the watch ended: list again
			pause(ctx, retry)
		}
	}
}

func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
