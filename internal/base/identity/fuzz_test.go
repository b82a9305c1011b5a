package identity

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/fuzzing"
)

// The fuzz targets of this package's decoders of untrusted bytes: the token text (a flag,
// an environment variable or a file), credential files (Load), and the join endpoint's
// request body (from anyone who reaches the head's join port). Their seeds need keys and
// certificates, which are random when made, so a fixed set is kept in testdata/fixture
// (test keys of a CA made for this; rewrite them with RAY_GO_WRITE_FIXTURES=1 go test
// -run TestFixtures, then regenerate the corpora with -update-corpus).

const fixtureDir = "testdata/fixture"

// TestFixtures checks that testdata/fixture holds credentials Load accepts today (so the
// valid seeds of FuzzCredentialFiles and FuzzJoinRequest are still valid ones) and a
// certificate request whose signature checks; with RAY_GO_WRITE_FIXTURES=1 it writes
// new ones first.
func TestFixtures(t *testing.T) {
	if os.Getenv("RAY_GO_WRITE_FIXTURES") == "1" {
		writeFixtures(t)
	}
	c, err := Load(FilesIn(fixtureDir))
	if err != nil {
		t.Fatalf("the fixtures are no longer valid credentials (%v): rewrite them with RAY_GO_WRITE_FIXTURES=1 go test -run TestFixtures, "+
			"then go test -run Corpus -update-corpus", err)
	}
	if c.Role() != RoleNode {
		t.Errorf("the fixture certificate has role %q, want %q", c.Role(), RoleNode)
	}
	der, err := os.ReadFile(filepath.Join(fixtureDir, "join.csr"))
	if err != nil {
		t.Fatal(err)
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil || csr.CheckSignature() != nil {
		t.Fatalf("the fixture certificate request: %v", err)
	}
}

func writeFixtures(t *testing.T) {
	ca, err := NewCA("fuzz fixture cluster", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := SaveCA(fixtureDir, ca); err != nil {
		t.Fatal(err)
	}
	// Valid as long as the CA, so the fixtures outlast the tests that use them.
	c, err := ca.Issue(Request{Name: "agent-fixture", Role: RoleNode, Hosts: []string{"10.0.0.5"}, Validity: CAValidity})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Save(fixtureDir); err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "joiner"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(fixtureDir, "join.csr"), csr); err != nil {
		t.Fatal(err)
	}
}

type fixture struct {
	ca               *CA
	caPEM, cert, key []byte
	csr              []byte
	token            Token
}

func loadFixture(t testing.TB) fixture {
	t.Helper()
	var f fixture
	var err error
	if f.ca, err = LoadCA(fixtureDir); err != nil {
		t.Fatal(err)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(fixtureDir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	f.caPEM, f.cert, f.key, f.csr = read(CAFile), read(CertFile), read(KeyFile), read("join.csr")
	for i := range f.token.Secret {
		f.token.Secret[i] = byte(i * 7)
	}
	f.token.CAHash = f.ca.Fingerprint()
	return f
}

func tokenSeeds(t testing.TB) [][]any {
	tok := loadFixture(t).token.String()
	return [][]any{
		{tok},
		{"  " + tok + "\n"},
		{strings.ToUpper(tok)},
		{tok[:100]},
		{strings.Replace(tok, ".", "", 1)},
		{tok + "." + tok[:3]},
		{"zz" + tok[2:]},
		{""},
	}
}

func TestFuzzParseTokenCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzParseToken", tokenSeeds(t)) }

// FuzzParseToken feeds arbitrary text to ParseToken (a token comes from a flag, RAY_GO_TOKEN
// or a token file): refused with ErrBadToken, or a token whose text form parses to the
// same token and is what was given (up to white space and the case of the hex digits);
// never a panic.
func FuzzParseToken(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := ParseToken(s)
		if err != nil {
			if tok != (Token{}) || !strings.Contains(err.Error(), ErrBadToken.Error()) {
				t.Fatalf("refused %q with %v but returned %v", s, err, tok)
			}
			return
		}
		if !strings.EqualFold(tok.String(), strings.TrimSpace(s)) {
			t.Fatalf("%q parsed to %s", s, tok)
		}
		again, err := ParseToken(tok.String())
		if err != nil || again != tok {
			t.Fatalf("token %s reads back as %v, %v", tok, again, err)
		}
	})
}

func credentialSeeds(t testing.TB) [][]any {
	f := loadFixture(t)
	caBlock, _ := pem.Decode(f.caPEM)
	return [][]any{
		{f.caPEM, f.cert, f.key},
		{f.cert, f.cert, f.key},   // the node's certificate as the CA
		{f.caPEM, f.caPEM, f.key}, // the CA's certificate with the node's key
		{f.caPEM, f.cert, f.cert}, // no key
		{pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caBlock.Bytes[:len(caBlock.Bytes)/2]}), f.cert, f.key},
		{f.caPEM, f.cert[:len(f.cert)/2], f.key},
		{[]byte("-----BEGIN CERTIFICATE-----\n"), f.cert, f.key},
		{[]byte{}, []byte{}, []byte{}},
	}
}

func TestFuzzCredentialFilesCorpus(t *testing.T) {
	fuzzing.Corpus(t, "FuzzCredentialFiles", credentialSeeds(t))
}

// FuzzCredentialFiles writes arbitrary CA, certificate and key files (an agent's tls/
// directory, or the files given for an external GCS) and loads them with Load. They must be
// refused, or be credentials whose certificate chains to the CA for client use now, with a
// role of this package; never a panic; and what Save writes of them loads the same.
func FuzzCredentialFiles(f *testing.F) {
	f.Fuzz(func(t *testing.T, caPEM, certPEM, keyPEM []byte) {
		dir := t.TempDir()
		files := Files{CA: filepath.Join(dir, "ca"), Cert: filepath.Join(dir, "cert"), Key: filepath.Join(dir, "key")}
		for p, b := range map[string][]byte{files.CA: caPEM, files.Cert: certPEM, files.Key: keyPEM} {
			if err := os.WriteFile(p, b, FileMode); err != nil {
				t.Fatal(err)
			}
		}
		var (
			c   *Credentials
			err error
		)
		n := uint64(len(caPEM) + len(certPEM) + len(keyPEM))
		fuzzing.CheckAlloc(t, 64*n+1<<20, "Load", func() { c, err = Load(files) })
		if err != nil {
			return
		}
		if err := c.Verify(time.Now()); err != nil {
			t.Fatalf("loaded credentials that do not verify: %v", err)
		}
		saved, err := c.Save(filepath.Join(dir, "saved"))
		if err != nil {
			t.Fatal(err)
		}
		again, err := Load(saved)
		if err != nil || !bytes.Equal(again.Leaf().Raw, c.Leaf().Raw) || again.CAFingerprint() != c.CAFingerprint() {
			t.Fatalf("saved credentials load as %v, %v", again, err)
		}
	})
}

func joinSeeds(t testing.TB) [][]any {
	f := loadFixture(t)
	req := func(r joinRequest) []byte {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	secret := f.token.String()[:64]
	return [][]any{
		{req(joinRequest{Secret: secret, Role: RoleNode, Name: "agent-1", Hosts: []string{"10.0.0.7", "n7.example"}, CSR: f.csr})},
		{req(joinRequest{Secret: secret, Role: RoleClient, Name: "rayctl-h-1", CSR: f.csr})},
		{req(joinRequest{Secret: strings.Repeat("0", 64), Role: RoleNode, Name: "x", CSR: f.csr})}, // a wrong secret
		{req(joinRequest{Secret: secret, Role: RoleHead, Name: "x", CSR: f.csr})},
		{req(joinRequest{Secret: secret, Role: RoleNode, Name: "x", Hosts: []string{"bad host"}, CSR: f.csr})},
		{req(joinRequest{Secret: secret, Role: RoleNode, Name: "x", CSR: f.csr[:len(f.csr)-5]})},
		{req(joinRequest{Secret: secret, Role: RoleNode, Name: "", CSR: f.csr})},
		{[]byte(`{"secret":` + strings.Repeat("[", 64))},
		{[]byte{}},
		{[]byte(`{"secret":"` + strings.Repeat("0", 67) + `"}`)}, // longer than a secret: hex.Decode panicked
	}
}

// TestJoinRequestErrors: the handler's answer to each seed.
func TestJoinRequestErrors(t *testing.T) {
	fx := loadFixture(t)
	s := &JoinServer{ca: fx.ca, secret: func() (Token, error) { return fx.token, nil }, log: slog.New(slog.DiscardHandler)}
	want := []int{200, 200, 403, 400, 400, 400, 400, 400, 400, 403}
	for i, seed := range joinSeeds(t) {
		w := httptest.NewRecorder()
		s.handle(w, httptest.NewRequest(http.MethodPost, joinPath, bytes.NewReader(seed[0].([]byte))))
		if w.Code != want[i] {
			t.Errorf("seed %d: status %d (%s), want %d", i, w.Code, strings.TrimSpace(w.Body.String()), want[i])
		}
	}
}

func TestFuzzJoinRequestCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzJoinRequest", joinSeeds(t)) }

// FuzzJoinRequest posts arbitrary bodies to the join endpoint's handler (anyone who reaches
// the head's join port can). It must answer 200 only to a request with the token's secret,
// a role that may be requested and a valid certificate request, with a certificate of the
// CA for the request's key, name and role; anything else gets a 4xx; never a panic; and
// the handler must allocate in proportion to the body.
func FuzzJoinRequest(f *testing.F) {
	fx := loadFixture(f)
	s := &JoinServer{ca: fx.ca, secret: func() (Token, error) { return fx.token, nil }, log: slog.New(slog.DiscardHandler)}
	f.Fuzz(func(t *testing.T, body []byte) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, joinPath, bytes.NewReader(body))
		fuzzing.CheckAlloc(t, 64*uint64(len(body))+1<<20, "the join handler", func() { s.handle(w, r) })
		if w.Code != http.StatusOK {
			if w.Code < 400 || w.Code >= 500 {
				t.Fatalf("status %d for %q", w.Code, body)
			}
			return
		}
		var req joinRequest
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatalf("granted %q, which does not decode: %v", body, err)
		}
		var secret [32]byte
		copy(secret[:], mustHex(t, req.Secret))
		if !fx.token.SecretEquals(secret) || req.Role == RoleHead || req.Role == RoleLocal {
			t.Fatalf("granted %+v", req)
		}
		var resp joinResponse
		if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode([]byte(resp.Cert))
		if block == nil {
			t.Fatalf("no certificate in %q", resp.Cert)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		csr, _ := x509.ParseCertificateRequest(req.CSR)
		if err := cert.CheckSignatureFrom(fx.ca.Cert); err != nil || roleOf(cert) != req.Role || NameOf(cert) != req.Name || cert.Subject.CommonName != req.Name+":"+SerialText(cert.SerialNumber) ||
			!csr.PublicKey.(*ecdsa.PublicKey).Equal(cert.PublicKey) {
			t.Fatalf("granted %+v a certificate for %v (role %q), %v", req, cert.Subject, roleOf(cert), err)
		}
	})
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b := make([]byte, len(s)/2)
	for i := range b {
		var v byte
		for _, c := range s[2*i : 2*i+2] {
			v <<= 4
			switch {
			case c >= '0' && c <= '9':
				v |= byte(c - '0')
			case c >= 'a' && c <= 'f':
				v |= byte(c - 'a' + 10)
			case c >= 'A' && c <= 'F':
				v |= byte(c - 'A' + 10)
			default:
				t.Fatalf("granted a secret that is not hex: %q", s)
			}
		}
		b[i] = v
	}
	return b
}
