package identity

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrRevoked: the other end of a node-to-node connection holds a certificate of this
// cluster's CA that was revoked (`rayctl cert revoke`).
var ErrRevoked = errors.New("identity: certificate revoked")

// SerialText is how a certificate's serial number is written in the GCS, the CLI and the
// logs: lowercase hex, no leading zeros.
func SerialText(n *big.Int) string { return n.Text(16) }

// ParseSerial reads a serial number written by SerialText (a "0x" prefix, colons and upper
// case are accepted too, as other tools print serials).
func ParseSerial(s string) (*big.Int, error) {
	t := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(strings.TrimSpace(s), "0x"), ":", ""))
	n, ok := new(big.Int).SetString(t, 16)
	if !ok || n.Sign() <= 0 || n.BitLen() > 160 {
		return nil, fmt.Errorf("identity: %q is not a certificate serial number (hex, as `rayctl cert list` prints it)", s)
	}
	return n, nil
}

// Revoked is the set of revoked serial numbers a process consults on every node-to-node
// handshake (Credentials.SetRevoked). Its owner replaces the whole set when the GCS's
// revoked/ records change; handshakes read it without a lock. The zero value is empty.
//
// It also holds the process's open node-to-node connections by the serial of the peer's
// certificate (Track): a revocation closes those of the revoked certificates, so that a
// peer cut off by `rayctl cert revoke` loses the connections it already had, not only new
// ones. Tracking takes a mutex once per connection, never per message.
type Revoked struct {
	set atomic.Pointer[map[string]struct{}]
	// Log receives a warning for each handshake refused for a revoked certificate (nil:
	// none).
	Log *slog.Logger

	mu    sync.Mutex
	conns map[string]map[*tracked]struct{} // by serial
}

// tracked is one connection Track holds.
type tracked struct {
	c    io.Closer
	name string
}

// Replace makes serials (SerialText form) the revoked set, and closes the tracked
// connections of peers whose certificate is in it.
func (r *Revoked) Replace(serials []string) {
	m := make(map[string]struct{}, len(serials))
	for _, s := range serials {
		m[s] = struct{}{}
	}
	r.set.Store(&m)
	var closing []*tracked
	r.mu.Lock()
	for serial := range m {
		for t := range r.conns[serial] {
			closing = append(closing, t)
		}
		delete(r.conns, serial)
	}
	r.mu.Unlock()
	for _, t := range closing {
		if r.Log != nil {
			r.Log.Warn("identity: closed a connection of a peer whose certificate was revoked", "name", t.name)
		}
		_ = t.c.Close()
	}
}

// Track holds c, a connection whose peer proved itself with leaf, until the returned
// function is called (when c closes): a revocation of leaf closes c. A leaf revoked
// already closes c at once.
func (r *Revoked) Track(c io.Closer, leaf *x509.Certificate) (untrack func()) {
	serial := SerialText(leaf.SerialNumber)
	t := &tracked{c: c, name: leaf.Subject.CommonName}
	r.mu.Lock()
	if r.conns == nil {
		r.conns = map[string]map[*tracked]struct{}{}
	}
	set := r.conns[serial]
	if set == nil {
		set = map[*tracked]struct{}{}
		r.conns[serial] = set
	}
	set[t] = struct{}{}
	r.mu.Unlock()
	if r.Contains(leaf) { // revoked between the handshake and now
		r.untrack(serial, t)
		_ = c.Close()
		return func() {}
	}
	return func() { r.untrack(serial, t) }
}

func (r *Revoked) untrack(serial string, t *tracked) {
	r.mu.Lock()
	if set := r.conns[serial]; set != nil {
		delete(set, t)
		if len(set) == 0 {
			delete(r.conns, serial)
		}
	}
	r.mu.Unlock()
}

// Tracked is the number of connections Track holds.
func (r *Revoked) Tracked() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, set := range r.conns {
		n += len(set)
	}
	return n
}

// Len is the number of revoked serials.
func (r *Revoked) Len() int {
	if m := r.set.Load(); m != nil {
		return len(*m)
	}
	return 0
}

// Contains reports whether cert's serial is in the set.
func (r *Revoked) Contains(cert *x509.Certificate) bool {
	m := r.set.Load()
	if m == nil || len(*m) == 0 {
		return false
	}
	_, ok := (*m)[SerialText(cert.SerialNumber)]
	return ok
}

// SetRevoked makes the node-to-node configurations of c (PeerServerTLS, PeerClientTLS,
// including those made before) refuse peers whose certificate is in r. Nil: none refused.
func (c *Credentials) SetRevoked(r *Revoked) { c.revoked.Store(r) }

// TrackPeer holds conn, a node-to-node connection whose peer proved itself with leaf, so
// that revoking leaf closes it (Revoked.Track), until the returned function is called.
// Without a revoked set (SetRevoked) it holds nothing.
func (c *Credentials) TrackPeer(conn io.Closer, leaf *x509.Certificate) (untrack func()) {
	r := c.revoked.Load()
	if r == nil || leaf == nil {
		return func() {}
	}
	return r.Track(conn, leaf)
}

// checkRevoked refuses a peer whose (verified) leaf certificate is revoked.
func (c *Credentials) checkRevoked(leaf *x509.Certificate) error {
	r := c.revoked.Load()
	if r == nil || !r.Contains(leaf) {
		return nil
	}
	if r.Log != nil {
		r.Log.Warn("identity: refused a peer whose certificate was revoked", "name", leaf.Subject.CommonName,
			"role", roleOf(leaf), "serial", SerialText(leaf.SerialNumber))
	}
	return fmt.Errorf("%w: %w: the certificate of %q (serial %s) was revoked", ErrNotAPeer, ErrRevoked,
		leaf.Subject.CommonName, SerialText(leaf.SerialNumber))
}

// RevokedCert is one entry of a certificate revocation list.
type RevokedCert struct {
	Serial    *big.Int
	RevokedAt time.Time
}

// CRLValidity is how long a CRL the head writes claims to be current (its NextUpdate);
// the head writes a new one whenever the revoked set changes, and at least this often.
const CRLValidity = 7 * 24 * time.Hour

// CRL returns a certificate revocation list of the CA listing revoked (PEM "X509 CRL",
// signed by the CA, valid from now for CRLValidity): what the embedded etcd checks every
// client and peer certificate against. number must grow with each new list.
func (ca *CA) CRL(revoked []RevokedCert, number int64, now time.Time) ([]byte, error) {
	entries := make([]x509.RevocationListEntry, 0, len(revoked))
	for _, r := range revoked {
		entries = append(entries, x509.RevocationListEntry{SerialNumber: r.Serial, RevocationTime: r.RevokedAt.UTC()})
	}
	der, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{
		Number:                    big.NewInt(number),
		ThisUpdate:                now.Add(-clockSkew),
		NextUpdate:                now.Add(CRLValidity),
		RevokedCertificateEntries: entries,
	}, ca.Cert, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("identity: create the CRL: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der}), nil
}
