package identity

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func newCA(t *testing.T) *CA {
	t.Helper()
	ca, err := NewCA("test cluster", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestIssuedCertificatesChainToTheirCA(t *testing.T) {
	ca, other := newCA(t), newCA(t)
	c, err := ca.Issue(Request{Name: "n1", Role: RoleNode, Hosts: []string{"10.0.0.5", "node1.example"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Verify(time.Now()); err != nil {
		t.Fatal(err)
	}
	if c.Role() != RoleNode || c.Name() != "n1" {
		t.Fatalf("role %q name %q", c.Role(), c.Name())
	}
	leaf := c.Leaf()
	for _, h := range []string{"127.0.0.1", "10.0.0.5", "localhost", "node1.example"} {
		if err := leaf.VerifyHostname(h); err != nil {
			t.Errorf("host %s: %v", h, err)
		}
	}
	if c.CAFingerprint() != ca.Fingerprint() {
		t.Fatal("fingerprint differs")
	}
	// The same certificate with another CA: refused.
	if _, err := NewCredentials(other.CertPEM(), c.CertPEM, c.KeyPEM); err == nil {
		t.Fatal("credentials with a foreign CA accepted")
	}
	// A key that is not the certificate's: refused.
	c2, _ := ca.Issue(Request{Name: "n2", Role: RoleNode})
	if _, err := NewCredentials(ca.CertPEM(), c.CertPEM, c2.KeyPEM); err == nil {
		t.Fatal("mismatched key accepted")
	}
}

func TestSignRefusesBadRequests(t *testing.T) {
	ca := newCA(t)
	for _, req := range []Request{
		{Name: "x", Role: "admin"},
		{Name: "", Role: RoleNode},
		{Name: "x", Role: RoleNode, Hosts: []string{"not a host"}},
		{Name: "x", Role: RoleNode, Hosts: []string{"-bad.example"}},
	} {
		if _, err := ca.Issue(req); err == nil {
			t.Errorf("%+v: accepted", req)
		}
	}
}

func TestExpiry(t *testing.T) {
	past := time.Now().Add(-48 * time.Hour)
	ca, err := NewCA("old cluster", past)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ca.Issue(Request{Name: "old", Role: RoleClient, Now: past, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Verify(time.Now())
	if !errors.Is(err, ErrExpired) || !strings.Contains(err.Error(), "old") {
		t.Fatalf("expired certificate: %v", err)
	}
	dir := t.TempDir()
	f, err := c.Save(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Load(f); !errors.Is(err, ErrExpired) {
		t.Fatalf("Load of an expired certificate: %v", err)
	}
	// A certificate never outlives its CA.
	c, _ = ca.Issue(Request{Name: "long", Role: RoleNode, Validity: 2 * CAValidity})
	if c.Leaf().NotAfter.After(ca.Cert.NotAfter) {
		t.Fatal("certificate outlives the CA")
	}
}

func TestSaveLoadAndFileModes(t *testing.T) {
	ca := newCA(t)
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "tls")
	c, _ := ca.Issue(Request{Name: "n", Role: RoleNode})
	f, err := c.Save(dir)
	if err != nil {
		t.Fatal(err)
	}
	caDir := filepath.Join(root, "ca")
	if err := SaveCA(caDir, ca); err != nil {
		t.Fatal(err)
	}
	tok, _ := NewToken(ca)
	if err := SaveToken(filepath.Join(caDir, TokenFile), tok); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, caDir} {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm() != DirMode {
			t.Errorf("%s: mode %v, %v (want %v)", d, fi.Mode().Perm(), err, DirMode)
		}
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			fi, _ := e.Info()
			if fi.Mode().Perm() != FileMode {
				t.Errorf("%s/%s: mode %v (want %v)", d, e.Name(), fi.Mode().Perm(), FileMode)
			}
			if strings.Contains(e.Name(), ".tmp") {
				t.Errorf("temporary file left: %s", e.Name())
			}
		}
	}
	back, err := Load(f)
	if err != nil || back.Name() != "n" {
		t.Fatalf("Load: %v", err)
	}
	ca2, err := LoadCA(caDir)
	if err != nil || ca2.Fingerprint() != ca.Fingerprint() {
		t.Fatalf("LoadCA: %v", err)
	}
	if _, err := LoadCA(filepath.Join(root, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("LoadCA of nothing: %v", err)
	}
	tok2, err := ReadTokenFile(filepath.Join(caDir, TokenFile))
	if err != nil || tok2 != tok {
		t.Fatalf("ReadTokenFile: %v", err)
	}
	// A token file others can read is refused.
	loose := filepath.Join(root, "loose")
	os.WriteFile(loose, []byte(tok.String()), 0o644)
	if _, err := ReadTokenFile(loose); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("world-readable token file: %v", err)
	}
	if _, err := Load(Files{CA: f.CA}); err == nil {
		t.Fatal("Load with missing names accepted")
	}
}

func TestParseToken(t *testing.T) {
	ca := newCA(t)
	tok, err := NewToken(ca)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseToken("  " + tok.String() + "\n")
	if err != nil || back != tok {
		t.Fatalf("round trip: %v", err)
	}
	if back.CAHash != ca.Fingerprint() {
		t.Fatal("token does not pin the CA")
	}
	s := tok.String()
	for name, bad := range map[string]string{
		"empty":     "",
		"one part":  strings.ReplaceAll(s, ".", ""),
		"three":     s + ".ab",
		"short":     s[:100],
		"not hex":   "zz" + s[2:],
		"hash hex":  s[:65] + "zz" + s[67:],
		"long hash": s + "00",
	} {
		if _, err := ParseToken(bad); !errors.Is(err, ErrBadToken) {
			t.Errorf("%s: %v", name, err)
		}
	}
	var other [32]byte
	if tok.SecretEquals(other) || !tok.SecretEquals(tok.Secret) {
		t.Fatal("SecretEquals")
	}
}

// joinCluster runs a join endpoint of a new CA and returns it with the token.
func joinCluster(t *testing.T) (*CA, *JoinServer, *Token) {
	t.Helper()
	ca := newCA(t)
	head, err := ca.Issue(Request{Name: "head", Role: RoleHead})
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := NewToken(ca)
	cur := &tok
	s, err := ServeJoin("127.0.0.1:0", ca, head, func() (Token, error) { return *cur, nil }, nil, JoinPolicy{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return ca, s, cur
}

func TestJoin(t *testing.T) {
	ctx := context.Background()
	ca, s, tok := joinCluster(t)
	c, err := Join(ctx, JoinRequest{Address: s.Addr(), Token: *tok, Role: RoleNode, Name: "n1", Hosts: []string{"10.1.2.3"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Role() != RoleNode || c.CAFingerprint() != ca.Fingerprint() || c.Leaf().VerifyHostname("10.1.2.3") != nil {
		t.Fatalf("joined credentials: role %s", c.Role())
	}

	// A wrong secret: refused.
	bad := *tok
	bad.Secret[0] ^= 1
	if _, err := Join(ctx, JoinRequest{Address: s.Addr(), Token: bad, Role: RoleNode, Name: "n2"}); !errors.Is(err, ErrTokenRejected) {
		t.Fatalf("wrong secret: %v", err)
	}
	// A rotated token: the old one is refused, the new one works.
	old := *tok
	*tok, _ = NewToken(ca)
	if _, err := Join(ctx, JoinRequest{Address: s.Addr(), Token: old, Role: RoleNode, Name: "n3"}); !errors.Is(err, ErrTokenRejected) {
		t.Fatalf("rotated token: %v", err)
	}
	if _, err := Join(ctx, JoinRequest{Address: s.Addr(), Token: *tok, Role: RoleDriver, Name: "d"}); err != nil {
		t.Fatalf("new token: %v", err)
	}
	// Asking for the head's role: refused.
	if _, err := Join(ctx, JoinRequest{Address: s.Addr(), Token: *tok, Role: RoleHead, Name: "evil"}); err == nil {
		t.Fatal("a joiner got a head certificate")
	}
	// The token pins another CA: the client refuses the server before sending the secret.
	pinned := *tok
	pinned.CAHash = newCA(t).Fingerprint()
	if _, err := Join(ctx, JoinRequest{Address: s.Addr(), Token: pinned, Role: RoleNode, Name: "n4"}); !errors.Is(err, ErrCAMismatch) {
		t.Fatalf("foreign CA pin: %v", err)
	}
	// Nothing listening: unreachable, quickly.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	if _, err := Join(ctx, JoinRequest{Address: addr, Token: *tok, Role: RoleNode, Name: "n5", Timeout: 2 * time.Second}); !errors.Is(err, ErrJoinUnreachable) {
		t.Fatalf("nothing listening: %v", err)
	}
}

// A server holding a node certificate of the right CA (not a head's) is not a join endpoint.
func TestJoinRefusesANonHeadServer(t *testing.T) {
	ca := newCA(t)
	node, _ := ca.Issue(Request{Name: "node", Role: RoleNode})
	if _, err := ServeJoin("127.0.0.1:0", ca, node, nil, nil, JoinPolicy{}, nil); err == nil {
		t.Fatal("ServeJoin with a node certificate")
	}
	cfg := node.ServerTLS()
	cfg.ClientAuth = tls.NoClientCert
	addr, _ := tlsServer(t, cfg)
	tok, _ := NewToken(ca)
	_, err := Join(context.Background(), JoinRequest{Address: addr, Token: tok, Role: RoleNode, Name: "n"})
	if !errors.Is(err, ErrCAMismatch) || !strings.Contains(err.Error(), "not the head") {
		t.Fatalf("node server: %v", err)
	}
}

// Mutual TLS between credentials of one CA works; a client of another CA is refused.
func TestMutualTLS(t *testing.T) {
	ca, other := newCA(t), newCA(t)
	srv, _ := ca.Issue(Request{Name: "srv", Role: RoleNode})
	good, _ := ca.Issue(Request{Name: "good", Role: RoleClient})
	foreign, _ := other.Issue(Request{Name: "foreign", Role: RoleClient})
	addr, _ := tlsServer(t, srv.ServerTLS())
	dial := func(cfg *tls.Config) error {
		cfg.ServerName = "127.0.0.1"
		c, err := tls.Dial("tcp", addr, cfg)
		if err != nil {
			return err
		}
		defer c.Close()
		buf := make([]byte, 2)
		_, err = c.Read(buf)
		return err
	}
	if err := dial(good.ClientTLS()); err != nil {
		t.Fatalf("same CA: %v", err)
	}
	if err := dial(foreign.ClientTLS()); err == nil {
		t.Fatal("a client of another CA was accepted")
	}
	noCert := good.ClientTLS()
	noCert.GetClientCertificate = nil
	if err := dial(noCert); err == nil {
		t.Fatal("a client without a certificate was accepted")
	}
}

func TestJoinAddress(t *testing.T) {
	if a, err := JoinAddress("10.0.0.1:6379"); err != nil || a != "10.0.0.1:6380" {
		t.Fatalf("%q %v", a, err)
	}
	if _, err := JoinAddress("nohost"); err == nil {
		t.Fatal("bad address accepted")
	}
}

func TestPlainText(t *testing.T) {
	_, s, _ := joinCluster(t)
	if PlainText(s.Addr(), time.Second) {
		t.Fatal("a TLS server reads as plain text")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
			c.Close()
		}
	}()
	if !PlainText(l.Addr().String(), time.Second) {
		t.Fatal("a plain-text server does not read as plain text")
	}
	// One that hangs up on a ClientHello (etcd's multiplexer) is plain text too; nothing
	// listening is not.
	l2, _ := net.Listen("tcp", "127.0.0.1:0")
	go func() {
		for {
			c, err := l2.Accept()
			if err != nil {
				return
			}
			c.Read(make([]byte, 10))
			c.Close()
		}
	}()
	if !PlainText(l2.Addr().String(), time.Second) {
		t.Fatal("a server that hangs up does not read as plain text")
	}
	addr := l2.Addr().String()
	l2.Close()
	if PlainText(addr, time.Second) {
		t.Fatal("nothing listening reads as plain text")
	}
}

func TestNotPrivate(t *testing.T) {
	root := filepath.Join(t.TempDir(), "s")
	if err := MkdirPrivate(filepath.Join(root, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(root, "sub", "ok"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if bad, files, err := NotPrivate(root); err != nil || len(bad) != 0 || files != 1 {
		t.Fatalf("a private tree: %v, %d files, %v", bad, files, err)
	}
	if err := os.WriteFile(filepath.Join(root, "open"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	bad, files, err := NotPrivate(root)
	if err != nil || len(bad) != 2 || files != 2 || !strings.Contains(bad[0], "open: mode -rw-r--r--") || !strings.Contains(bad[1], "sub: mode -rwxr-xr-x") {
		t.Fatalf("a readable file and directory: %q, %d files, %v", bad, files, err)
	}
	if _, _, err := NotPrivate(filepath.Join(root, "missing")); err != nil {
		t.Fatalf("a missing root: %v", err)
	}
}
