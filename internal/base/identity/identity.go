package identity

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Roles a certificate is issued for (the subject's OrganizationalUnit). The join client
// accepts only a RoleHead certificate as the join endpoint's.
const (
	RoleHead   = "head"   // the head agent: the GCS and the join endpoint
	RoleNode   = "node"   // an agent that joined with the token
	RoleDriver = "driver" // a driver (ray.Init with an address) that joined with the token
	RoleClient = "client" // rayctl status/job/memory with the token
	RoleLocal  = "local"  // everything of a local-mode cluster (one process, one CA)
)

// Validity periods.
const (
	CAValidity   = 10 * 365 * 24 * time.Hour
	CertValidity = 365 * 24 * time.Hour
	// ClientCertValidity is the lifetime of the certificates the join endpoint issues for
	// RoleClient (rayctl with the token: one per command): short, so that the GCS users the
	// head creates for them can be deleted soon (etcd checks expiry at the handshake only).
	ClientCertValidity = 24 * time.Hour
	// DriverCertValidity is the lifetime of the certificates the join endpoint issues for
	// RoleDriver (ray.Init with an address and the token: one per driver process): short,
	// so that their records and GCS users go soon after the driver ends. A driver renews
	// its certificate while it runs (Renew, at half its lifetime), keeping its GCS user.
	DriverCertValidity = time.Hour
	// MinRenewableValidity is the shortest lifetime a head may give driver certificates
	// (tests shorten it): a renewal must have time to happen.
	MinRenewableValidity = 10 * time.Second
	// ClockSkew is how far the clocks of a cluster's machines may disagree: a revocation
	// is kept that long past its certificate's expiry, for a peer whose clock is behind.
	ClockSkew = clockSkew
	// clockSkew backdates NotBefore so that a peer whose clock is a little behind accepts a
	// certificate issued a moment ago.
	clockSkew = 5 * time.Minute
)

// Names of the files in a credentials directory (Files) and a CA directory (SaveCA).
const (
	CAFile    = "ca.crt"
	CertFile  = "node.crt"
	KeyFile   = "node.key"
	CAKeyFile = "ca.key"
	TokenFile = "token"
)

// Modes of what this package writes: only the owner reads keys, certificates and tokens.
const (
	DirMode  os.FileMode = 0o700
	FileMode os.FileMode = 0o600
)

// CA is a cluster's certificate authority: a self-signed ECDSA P-256 certificate and its key.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// NewCA creates a CA named name (e.g. "ray-go cluster <id>"), valid from now for
// CAValidity.
func NewCA(name string, now time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("identity: generate the CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"ray-go"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true, // it signs leaves only
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("identity: create the CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n.Add(n, big.NewInt(1)) // never 0
}

// CertPEM returns the CA certificate in PEM.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// Fingerprint is the SHA-256 of the CA certificate (DER): what a join token pins.
func (ca *CA) Fingerprint() [32]byte { return sha256.Sum256(ca.Cert.Raw) }

// Request describes a certificate to issue.
type Request struct {
	// Name is the subject's common name (an agent, node or process ID).
	Name string
	// Role is one of the Role constants.
	Role string
	// Hosts are the IP addresses and DNS names the holder serves at (subject alternative
	// names). 127.0.0.1 and localhost are always added: every process may serve locally.
	Hosts []string
	// Now is the issue time (zero: time.Now()); Validity the lifetime (zero: CertValidity).
	Now      time.Time
	Validity time.Duration
	// User, if set, is the common name (the GCS user) to give the certificate instead of
	// "<Name>:<its serial>": a renewal keeps its GCS user, "<Name>:<the first serial>".
	User string
}

func validRole(r string) bool {
	switch r {
	case RoleHead, RoleNode, RoleDriver, RoleClient, RoleLocal:
		return true
	}
	return false
}

// Issue creates a key pair and a certificate signed by the CA for it.
func (ca *CA) Issue(req Request) (*Credentials, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("identity: generate a key: %w", err)
	}
	der, err := ca.Sign(&key.PublicKey, req)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return NewCredentials(ca.CertPEM(),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
}

// Sign signs a certificate for pub (usable as TLS server and client) and returns it in
// DER. Hosts that are neither IP addresses nor DNS names are refused.
func (ca *CA) Sign(pub *ecdsa.PublicKey, req Request) ([]byte, error) {
	if !validRole(req.Role) {
		return nil, fmt.Errorf("identity: unknown role %q", req.Role)
	}
	if req.Name == "" || len(req.Name) > 128 || strings.Contains(req.Name, userSep) {
		return nil, errors.New("identity: a certificate needs a name of 1 to 128 characters, without '" + userSep + "'")
	}
	if req.Now.IsZero() {
		req.Now = time.Now()
	}
	if req.Validity <= 0 {
		req.Validity = CertValidity
	}
	sn := serial()
	// The serial in the common name makes it unique per certificate: the GCS's user
	// (GCSUser), deleted when this certificate is revoked, is no other certificate's, but
	// for the renewals of a driver's certificate, which keep the first one's.
	cn := req.Name + userSep + SerialText(sn)
	if req.User != "" {
		if first, ok := SerialOfUser(req.User); !ok || req.User != req.Name+userSep+first {
			return nil, fmt.Errorf("identity: user %q is not of the form %s%s<serial>", req.User, req.Name, userSep)
		}
		cn = req.User
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"ray-go"}, OrganizationalUnit: []string{req.Role}},
		NotBefore:    req.Now.Add(-clockSkew),
		NotAfter:     req.Now.Add(req.Validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	hosts := append([]string{"127.0.0.1", "localhost"}, req.Hosts...)
	for _, h := range hosts {
		switch ip := net.ParseIP(h); {
		case ip != nil:
			if !slices.ContainsFunc(tmpl.IPAddresses, ip.Equal) {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			}
		case validDNSName(h):
			if !slices.Contains(tmpl.DNSNames, h) {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		default:
			return nil, fmt.Errorf("identity: host %q is neither an IP address nor a DNS name", h)
		}
	}
	if len(tmpl.IPAddresses)+len(tmpl.DNSNames) > 64 {
		return nil, errors.New("identity: more than 64 hosts in one certificate")
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("identity: sign a certificate for %s: %w", req.Name, err)
	}
	return der, nil
}

func validDNSName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// Credentials are what a process presents and trusts: the cluster's CA certificate, its own
// certificate and its private key (all PEM).
//
// The certificate and key may be replaced while they are in use (Renew: a driver's
// certificate is short-lived and renewed while it runs): every TLS configuration these
// credentials make presents the current ones at each handshake; connections already open
// keep theirs.
type Credentials struct {
	// CAPEM is the CA certificate; CertPEM and KeyPEM the certificate and key as first
	// made (CurrentPEM: the ones in use).
	CAPEM, CertPEM, KeyPEM []byte

	cur  atomic.Pointer[keyPair]
	ca   *x509.Certificate
	pool *x509.CertPool
	// revoked: the serials node-to-node handshakes refuse (SetRevoked).
	revoked atomic.Pointer[Revoked]
}

// NewCredentials parses PEM credentials and checks that the certificate matches the key
// and was signed by the CA.
func NewCredentials(caPEM, certPEM, keyPEM []byte) (*Credentials, error) {
	c := &Credentials{CAPEM: caPEM, CertPEM: certPEM, KeyPEM: keyPEM}
	block, _ := pem.Decode(caPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("identity: the CA certificate is not a PEM CERTIFICATE")
	}
	var err error
	if c.ca, err = x509.ParseCertificate(block.Bytes); err != nil {
		return nil, fmt.Errorf("identity: parse the CA certificate: %w", err)
	}
	kp, err := newKeyPair(c.ca, certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	c.cur.Store(kp)
	c.pool = x509.NewCertPool()
	c.pool.AddCert(c.ca)
	// The chain must hold at some time; whether that time is now is Verify's question.
	at := kp.leaf.NotBefore
	if c.ca.NotBefore.After(at) {
		at = c.ca.NotBefore
	}
	if err := c.Verify(at); err != nil {
		return nil, err
	}
	return c, nil
}

// keyPair is a certificate and its key, as TLS presents them.
type keyPair struct {
	pair  tls.Certificate // the certificate alone
	chain tls.Certificate // with the CA certificate after it (a server's: a client that pins the CA finds it)
	leaf  *x509.Certificate

	certPEM, keyPEM []byte
}

func newKeyPair(ca *x509.Certificate, certPEM, keyPEM []byte) (*keyPair, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("identity: certificate and key: %w", err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, err
		}
	}
	chain := pair
	chain.Certificate = append(slices.Clone(pair.Certificate), ca.Raw)
	return &keyPair{pair: pair, chain: chain, leaf: leaf, certPEM: certPEM, keyPEM: keyPEM}, nil
}

// Renew makes certPEM and keyPEM the certificate and key these credentials present from
// the next handshake on. The certificate must be of the same CA, GCS user (CN) and role as
// the current one, valid now, and expire no earlier.
func (c *Credentials) Renew(certPEM, keyPEM []byte) error {
	kp, err := newKeyPair(c.ca, certPEM, keyPEM)
	if err != nil {
		return err
	}
	old := c.cur.Load()
	if _, err := kp.leaf.Verify(x509.VerifyOptions{Roots: c.pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return fmt.Errorf("identity: the renewed certificate: %w", err)
	}
	switch {
	case GCSUser(kp.leaf) != GCSUser(old.leaf) || roleOf(kp.leaf) != roleOf(old.leaf):
		return fmt.Errorf("identity: the renewed certificate is of %s (%s), not %s (%s)", GCSUser(kp.leaf), roleOf(kp.leaf), GCSUser(old.leaf), roleOf(old.leaf))
	case kp.leaf.NotAfter.Before(old.leaf.NotAfter):
		return errors.New("identity: the renewed certificate expires before the current one")
	}
	c.cur.Store(kp)
	return nil
}

// CurrentPEM returns the certificate and key in use (Renew replaces them).
func (c *Credentials) CurrentPEM() (certPEM, keyPEM []byte) {
	kp := c.cur.Load()
	return kp.certPEM, kp.keyPEM
}

func (c *Credentials) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return &c.cur.Load().chain, nil
}

func (c *Credentials) getClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return &c.cur.Load().pair, nil
}

func (c *Credentials) getPeerCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return &c.cur.Load().pair, nil
}

// Verify checks that the certificate chains to the CA and is valid at now.
func (c *Credentials) Verify(now time.Time) error {
	leaf := c.Leaf()
	_, err := leaf.Verify(x509.VerifyOptions{Roots: c.pool, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		var inv x509.CertificateInvalidError
		if errors.As(err, &inv) && inv.Reason == x509.Expired {
			return fmt.Errorf("identity: the certificate of %s is valid from %s to %s, not at %s: %w",
				c.Name(), leaf.NotBefore.Format(time.RFC3339), leaf.NotAfter.Format(time.RFC3339), now.Format(time.RFC3339), ErrExpired)
		}
		return fmt.Errorf("identity: the certificate of %s does not chain to the cluster CA: %w", c.Name(), err)
	}
	return nil
}

// ErrExpired: a certificate is outside its validity period.
var ErrExpired = errors.New("certificate expired or not yet valid (join again with the token)")

// Name is the name the certificate was issued for (NameOf); Role its role.
func (c *Credentials) Name() string { return NameOf(c.Leaf()) }

// User is the certificate's GCS user: its common name (GCSUser).
func (c *Credentials) User() string { return GCSUser(c.Leaf()) }

// Role returns the role the certificate was issued for.
func (c *Credentials) Role() string { return roleOf(c.Leaf()) }

func roleOf(cert *x509.Certificate) string {
	if len(cert.Subject.OrganizationalUnit) == 1 {
		return cert.Subject.OrganizationalUnit[0]
	}
	return ""
}

// Leaf returns the parsed certificate in use.
func (c *Credentials) Leaf() *x509.Certificate { return c.cur.Load().leaf }

// CAFingerprint is the SHA-256 of the CA certificate these credentials trust.
func (c *Credentials) CAFingerprint() [32]byte { return sha256.Sum256(c.ca.Raw) }

// ServerTLS is a TLS server configuration: it presents the certificate (with the CA, so a
// client that pins the CA finds it) and requires a client certificate signed by the CA.
func (c *Credentials) ServerTLS() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS13,
		GetCertificate: c.getCertificate,
		ClientAuth:     tls.RequireAndVerifyClientCert,
		ClientCAs:      c.pool,
	}
}

// ClientTLS is a TLS client configuration: it presents the certificate and trusts only the
// CA (the server's name is checked against its certificate's hosts as usual).
func (c *Credentials) ClientTLS() *tls.Config {
	return &tls.Config{
		MinVersion:           tls.VersionTLS12, // etcd's gRPC gateway speaks 1.2 too
		GetClientCertificate: c.getClientCertificate,
		RootCAs:              c.pool,
	}
}

// Files names the three files of saved credentials.
type Files struct{ CA, Cert, Key string }

// FilesIn returns the standard file names in dir.
func FilesIn(dir string) Files {
	return Files{CA: filepath.Join(dir, CAFile), Cert: filepath.Join(dir, CertFile), Key: filepath.Join(dir, KeyFile)}
}

// IsZero reports whether no file is named.
func (f Files) IsZero() bool { return f == Files{} }

// Save writes the credentials to dir (created DirMode; files FileMode, replaced atomically)
// and returns the file names.
func (c *Credentials) Save(dir string) (Files, error) {
	f := FilesIn(dir)
	if err := MkdirPrivate(dir); err != nil {
		return f, err
	}
	for _, w := range []struct {
		path string
		b    []byte
	}{{f.CA, c.CAPEM}, {f.Cert, c.cur.Load().certPEM}, {f.Key, c.cur.Load().keyPEM}} {
		if err := WriteFile(w.path, w.b); err != nil {
			return f, err
		}
	}
	return f, nil
}

// Load reads saved credentials and checks them: the files must exist, match and not have
// expired.
func Load(f Files) (*Credentials, error) { return load(f, os.ReadFile) }

// LoadOwned is Load of files that must be the current user's or root's, writable by
// nobody else and not symbolic links (OpenOwned): an agent's own, which rayctl and the
// agent's processes trust.
func LoadOwned(f Files) (*Credentials, error) { return load(f, ReadOwnedFile) }

func load(f Files, readFile func(string) ([]byte, error)) (*Credentials, error) {
	if f.CA == "" || f.Cert == "" || f.Key == "" {
		return nil, fmt.Errorf("identity: credentials need three files: a CA certificate, a certificate and its key (got CA %q, certificate %q, key %q)", f.CA, f.Cert, f.Key)
	}
	var b [3][]byte
	for i, p := range []string{f.CA, f.Cert, f.Key} {
		var err error
		if b[i], err = readFile(p); err != nil {
			return nil, fmt.Errorf("identity: read credentials: %w", err)
		}
	}
	c, err := NewCredentials(b[0], b[1], b[2])
	if err != nil {
		return nil, fmt.Errorf("%w (files %s, %s, %s)", err, f.CA, f.Cert, f.Key)
	}
	if err := c.Verify(time.Now()); err != nil {
		return nil, err
	}
	return c, nil
}

// MkdirPrivate creates dir (and its parents) with DirMode and makes sure dir itself has
// that mode even if it existed.
func MkdirPrivate(dir string) error {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return fmt.Errorf("identity: create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, DirMode); err != nil {
		return fmt.Errorf("identity: chmod %s: %w", dir, err)
	}
	return nil
}

// WriteFile writes b to path with FileMode, atomically (a reader sees the old or the new
// content, never half).
func WriteFile(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("identity: write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename: nothing there
	err = tmp.Chmod(FileMode)   // CreateTemp makes 0600 already; say it anyway
	if err == nil {
		_, err = tmp.Write(b)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("identity: write %s: %w", path, err)
	}
	return nil
}

// SaveCA writes the CA's certificate and key to dir (DirMode, files FileMode).
func SaveCA(dir string, ca *CA) error {
	if err := MkdirPrivate(dir); err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(ca.Key)
	if err != nil {
		return err
	}
	if err := WriteFile(filepath.Join(dir, CAFile), ca.CertPEM()); err != nil {
		return err
	}
	return WriteFile(filepath.Join(dir, CAKeyFile), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
}

// LoadCA reads a CA that SaveCA wrote. It fails with os.ErrNotExist (wrapped) when there is
// none.
func LoadCA(dir string) (*CA, error) {
	certPEM, err := ReadOwnedFile(filepath.Join(dir, CAFile))
	if err != nil {
		return nil, fmt.Errorf("identity: read the CA: %w", err)
	}
	keyPEM, err := ReadOwnedFile(filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, fmt.Errorf("identity: read the CA key: %w", err)
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, fmt.Errorf("identity: the CA files in %s are not PEM", dir)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("identity: parse the CA certificate in %s: %w", dir, err)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("identity: parse the CA key in %s: %w", dir, err)
	}
	if !cert.IsCA || !key.PublicKey.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("identity: the CA certificate and key in %s do not belong together", dir)
	}
	return &CA{Cert: cert, Key: key}, nil
}

// FingerprintHex formats a fingerprint as lowercase hex.
func FingerprintHex(fp [32]byte) string { return hex.EncodeToString(fp[:]) }

// samePublicKey reports whether a certificate carries key.
func samePublicKey(cert *x509.Certificate, key *ecdsa.PublicKey) bool {
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	return ok && pub.Equal(key)
}

// NotPrivate walks root (root included) and returns what does not have this package's
// modes (directories DirMode, files FileMode: nothing for others to read), with the number
// of files seen. Entries that vanish during the walk (a temporary file renamed) are
// skipped. What a node writes to its session directory must pass it.
func NotPrivate(root string) (bad []string, files int, err error) {
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil // gone meanwhile
		}
		want := FileMode
		if d.IsDir() {
			want = DirMode
		} else {
			files++
		}
		if info.Mode().Perm() != want {
			bad = append(bad, fmt.Sprintf("%s: mode %v, want %v", p, info.Mode().Perm(), want))
		}
		return nil
	})
	return bad, files, err
}
