package identity

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"log/slog"
	"math/big"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A peer whose certificate is in the revoked set is refused on both sides of a
// node-to-node handshake, with a warning; the others are not, and a set replaced without
// it lets it in again.
func TestPeerTLSRefusesRevokedCertificates(t *testing.T) {
	ca := newCA(t)
	var logged bytes.Buffer
	revoked := &Revoked{Log: slog.New(slog.NewTextHandler(&logged, nil))}
	srv := issue(t, ca, "srv", RoleNode)
	srv.SetRevoked(revoked)
	addr, errs := peerServer(t, srv)
	gone, kept := issue(t, ca, "agent-gone", RoleNode), issue(t, ca, "agent-kept", RoleNode)
	revoked.Replace([]string{SerialText(gone.Leaf().SerialNumber)})

	if err := peerDial(addr, gone.PeerClientTLS()); err == nil {
		t.Fatal("a revoked certificate was accepted")
	}
	select {
	case err := <-errs:
		if !errors.Is(err, ErrRevoked) || !errors.Is(err, ErrNotAPeer) {
			t.Fatalf("server says %v, want ErrRevoked", err)
		}
		t.Logf("server says %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the server reported no failed handshake")
	}
	if !strings.Contains(logged.String(), "level=WARN") || !strings.Contains(logged.String(), "agent-gone") {
		t.Fatalf("no warning naming the peer: %q", logged.String())
	}
	if err := peerDial(addr, kept.PeerClientTLS()); err != nil {
		t.Fatalf("an unrevoked certificate: %v", err)
	}

	// The client side: a member does not talk to a server whose certificate is revoked.
	me := issue(t, ca, "me", RoleNode)
	me.SetRevoked(revoked)
	gsrv, _ := peerServer(t, gone)
	if err := peerDial(gsrv, me.PeerClientTLS()); !errors.Is(err, ErrRevoked) {
		t.Fatalf("dial of a revoked server: %v, want ErrRevoked", err)
	}

	revoked.Replace(nil)
	if err := peerDial(addr, gone.PeerClientTLS()); err != nil {
		t.Fatalf("after the set was replaced without it: %v", err)
	}
}

func TestCRL(t *testing.T) {
	ca := newCA(t)
	a, b := issue(t, ca, "a", RoleNode), issue(t, ca, "b", RoleNode)
	now := time.Now()
	for _, list := range [][]RevokedCert{nil, {{Serial: a.Leaf().SerialNumber, RevokedAt: now}}} {
		p, err := ca.CRL(list, int64(len(list)+1), now)
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(p)
		if block == nil || block.Type != "X509 CRL" {
			t.Fatalf("not a PEM X509 CRL: %q", p)
		}
		crl, err := x509.ParseRevocationList(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if err := crl.CheckSignatureFrom(ca.Cert); err != nil {
			t.Fatalf("the CRL's signature: %v", err)
		}
		if crl.Number.Int64() != int64(len(list)+1) || !crl.NextUpdate.After(now) {
			t.Fatalf("number %v, next update %v", crl.Number, crl.NextUpdate)
		}
		var got []string
		for _, e := range crl.RevokedCertificateEntries {
			got = append(got, SerialText(e.SerialNumber))
		}
		if len(got) != len(list) || (len(list) == 1 && got[0] != SerialText(a.Leaf().SerialNumber)) {
			t.Fatalf("revoked %v, want %d entries", got, len(list))
		}
		for _, g := range got {
			if g == SerialText(b.Leaf().SerialNumber) {
				t.Fatal("b is listed")
			}
		}
	}
}

func TestParseSerial(t *testing.T) {
	n, _ := new(big.Int).SetString("1f00ab", 16)
	for _, s := range []string{"1f00ab", "1F00AB", "0x1f00ab", "1f:00:ab", " 1f00ab\n"} {
		got, err := ParseSerial(s)
		if err != nil || got.Cmp(n) != 0 {
			t.Errorf("ParseSerial(%q) = %v, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "0", "xyz", "-1f", strings.Repeat("f", 41)} {
		if _, err := ParseSerial(s); err == nil {
			t.Errorf("ParseSerial(%q) accepted", s)
		}
	}
	if SerialText(n) != "1f00ab" {
		t.Fatal(SerialText(n))
	}
}

// closer counts its Close calls.
type closer struct{ closed atomic.Int32 }

func (c *closer) Close() error { c.closed.Add(1); return nil }

// Tracked connections of a certificate are closed when it is revoked, once; the others
// stay, untracking forgets one, and a connection of a certificate revoked already is
// closed as it is tracked.
func TestRevokedClosesTrackedConnections(t *testing.T) {
	ca := newCA(t)
	me := issue(t, ca, "me", RoleNode)
	gone, kept := issue(t, ca, "gone", RoleNode), issue(t, ca, "kept", RoleNode)
	var untracked closer
	if untrack := me.TrackPeer(&untracked, gone.Leaf()); untrack == nil {
		t.Fatal("TrackPeer without a revoked set returned nil")
	}
	revoked := &Revoked{}
	me.SetRevoked(revoked)
	var a, b, c, d closer
	me.TrackPeer(&a, gone.Leaf())
	me.TrackPeer(&b, gone.Leaf())
	me.TrackPeer(&c, kept.Leaf())
	untrackD := me.TrackPeer(&d, gone.Leaf())
	untrackD()
	if n := revoked.Tracked(); n != 3 {
		t.Fatalf("tracked %d connections, want 3", n)
	}
	revoked.Replace([]string{SerialText(gone.Leaf().SerialNumber)})
	if a.closed.Load() != 1 || b.closed.Load() != 1 || c.closed.Load() != 0 || d.closed.Load() != 0 || untracked.closed.Load() != 0 {
		t.Fatalf("closed: a %d b %d c %d d %d untracked %d; want 1 1 0 0 0", a.closed.Load(), b.closed.Load(), c.closed.Load(), d.closed.Load(), untracked.closed.Load())
	}
	if n := revoked.Tracked(); n != 1 {
		t.Fatalf("tracked %d connections after the revocation, want 1", n)
	}
	revoked.Replace([]string{SerialText(gone.Leaf().SerialNumber)}) // again: nothing to close
	if a.closed.Load() != 1 {
		t.Fatalf("a closed %d times", a.closed.Load())
	}
	var e closer
	me.TrackPeer(&e, gone.Leaf())
	if e.closed.Load() != 1 || revoked.Tracked() != 1 {
		t.Fatalf("a connection of a revoked certificate: closed %d, tracked %d", e.closed.Load(), revoked.Tracked())
	}
}
