package identity

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The join endpoint's routes: a join (with the token), a driver's renewal (with its
// certificate).
const (
	joinPath    = "/v1/join"
	renewPath   = "/v1/renew"
	releasePath = "/v1/release" // a driver that ended gives its certificate up (Release)
	checkPath   = "/v1/check"   // is the token current? (JoinRequest.CheckOnly)
	aboutPath   = "/v1/about"   // GET: what this endpoint is and where the GCS is (JoinEndpointAt)
)

// Limits of the join endpoint: a request is small, and a slow or idle client must not hold
// a connection for long.
const (
	maxJoinBody       = 16 << 10
	joinReadTimeout   = 10 * time.Second
	joinHeaderTimeout = 5 * time.Second
	joinIdleTimeout   = 30 * time.Second
	// DefaultJoinTimeout bounds a whole Join call.
	DefaultJoinTimeout = 10 * time.Second
)

// Errors of Join, to branch on.
var (
	// ErrTokenRejected: the head refused the token's secret (wrong, or rotated).
	ErrTokenRejected = errors.New("identity: the head refused the join token (wrong, or rotated since: ask for the current one, `rayctl token show` on the head)")
	// ErrCAMismatch: the server at the join address does not hold a certificate of the CA
	// the token names: another cluster, or someone in between.
	ErrCAMismatch = errors.New("identity: the join endpoint is not the cluster the token names (its certificate does not chain to the CA the token pins)")
	// ErrJoinUnreachable: nothing answered at the join address.
	ErrJoinUnreachable = errors.New("identity: the head's join endpoint did not answer")
	// ErrRenewRefused: the head refused to renew a certificate (revoked, or of a role
	// that does not renew): trying again does not help.
	ErrRenewRefused = errors.New("identity: the head refused to renew the certificate")
)

// JoinPolicy is what a head's join endpoint decides beyond the token.
type JoinPolicy struct {
	// DriverValidity is the lifetime of driver certificates, joined or renewed (zero:
	// DriverCertValidity).
	DriverValidity time.Duration
	// MayRenew, if set, says whether a driver certificate (of the CA, valid now: the TLS
	// handshake checked) may be renewed: not if it, or a certificate of its GCS user, was
	// revoked. nil: no renewals.
	MayRenew func(*x509.Certificate) error
	// Release, if set, is told of a driver certificate (of the CA, valid now) whose holder
	// has ended and gives it up (Release): the head forgets it (its records and GCS user)
	// at once rather than at its expiry. Its error refuses the release. nil: refused.
	Release func(*x509.Certificate) error
	// GCSAddress is the cluster's GCS address (HOST:PORT[,HOST:PORT]), told to whoever
	// asks the endpoint what it is (JoinEndpointAt): a client given the join port where
	// the GCS's belongs can say which one to use. Public: `rayctl start --head` prints it.
	GCSAddress string
}

// joinRequest and joinResponse are the JSON bodies of POST /v1/join.
type joinRequest struct {
	Secret string   `json:"secret"` // hex
	Role   string   `json:"role"`
	Name   string   `json:"name"`
	Hosts  []string `json:"hosts,omitempty"`
	CSR    []byte   `json:"csr"` // DER certificate request, proves the key
}

type joinResponse struct {
	CA   string `json:"ca"`   // PEM
	Cert string `json:"cert"` // PEM
}

// JoinServer is the head's join endpoint: HTTPS with the head's certificate; a client that
// presents the join token's secret gets a certificate signed by the CA for the key of its
// certificate request.
type JoinServer struct {
	l   net.Listener
	srv *http.Server
	ca  *CA
	// secret returns the current token (read per request: `rayctl token rotate` replaces
	// the token file while the head runs).
	secret func() (Token, error)
	// record, if set, is told of each certificate before it is handed out; its error
	// refuses the join (the head keeps a record of every certificate it issues).
	record func(*x509.Certificate) error
	policy JoinPolicy
	log    *slog.Logger
}

// ServeJoin listens on addr (host:port; port 0 picks one) and serves the join endpoint
// until Close. head must be a RoleHead certificate of ca. record, if not nil, is called
// with each certificate issued before it is handed out, and its error refuses the join
// (the head records certificates in the GCS, for listing and revoking them).
//
// A driver renews its certificate at the same endpoint (Renew): it presents the
// certificate, which must chain to ca, be valid, be a driver's and pass policy.MayRenew;
// the renewed certificate has the same name and GCS user, and a new serial and key.
func ServeJoin(addr string, ca *CA, head *Credentials, token func() (Token, error), record func(*x509.Certificate) error, policy JoinPolicy, log *slog.Logger) (*JoinServer, error) {
	if head.Role() != RoleHead {
		return nil, fmt.Errorf("identity: the join endpoint needs a %s certificate, got %q", RoleHead, head.Role())
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("identity: join endpoint: listen on %s: %w", addr, err)
	}
	tcfg := head.ServerTLS()
	// Joiners have no certificate yet (that is the point); a renewing driver presents its.
	tcfg.ClientAuth = tls.VerifyClientCertIfGiven
	if policy.DriverValidity <= 0 {
		policy.DriverValidity = DriverCertValidity
	}
	s := &JoinServer{l: l, ca: ca, secret: token, record: record, policy: policy, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+joinPath, s.handle)
	mux.HandleFunc("POST "+renewPath, s.handleRenew)
	mux.HandleFunc("POST "+releasePath, s.handleRelease)
	mux.HandleFunc("POST "+checkPath, s.handle)
	mux.HandleFunc("GET "+aboutPath, s.handleAbout)
	s.srv = &http.Server{
		Handler:           mux,
		TLSConfig:         tcfg,
		ReadHeaderTimeout: joinHeaderTimeout,
		ReadTimeout:       joinReadTimeout,
		WriteTimeout:      joinReadTimeout,
		IdleTimeout:       joinIdleTimeout,
		MaxHeaderBytes:    8 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	go func() { _ = s.srv.ServeTLS(l, "", "") }() // ends with Close
	return s, nil
}

// Addr is the address the endpoint listens on.
func (s *JoinServer) Addr() string { return s.l.Addr().String() }

// Close stops the endpoint.
func (s *JoinServer) Close() error { return s.srv.Close() }

func (s *JoinServer) handle(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeJoinRequest(w, r)
	if !ok {
		return
	}
	tok, err := s.secret()
	if err != nil {
		s.log.Error("identity: join endpoint: read the token", "err", err)
		http.Error(w, "the head cannot read its token", http.StatusInternalServerError)
		return
	}
	var secret [32]byte
	// The length first: hex.Decode writes past a too-small destination (it panicked on a
	// longer secret, found by FuzzJoinRequest).
	ok = len(req.Secret) == 2*len(secret)
	if ok {
		n, herr := hex.Decode(secret[:], []byte(req.Secret))
		ok = herr == nil && n == len(secret)
	}
	if !ok || !tok.SecretEquals(secret) {
		s.log.Warn("identity: join refused: wrong token", "from", r.RemoteAddr, "name", req.Name)
		http.Error(w, "join token refused", http.StatusForbidden)
		return
	}
	if r.URL.Path == checkPath {
		w.WriteHeader(http.StatusNoContent) // the token is current; nothing issued
		return
	}
	if req.Role == RoleHead || req.Role == RoleLocal || !validRole(req.Role) {
		http.Error(w, "bad request: role "+strconv.Quote(req.Role)+" cannot be requested", http.StatusBadRequest)
		return
	}
	csr, err := x509.ParseCertificateRequest(req.CSR)
	if err == nil {
		err = csr.CheckSignature()
	}
	if err != nil {
		http.Error(w, "bad request: certificate request: "+err.Error(), http.StatusBadRequest)
		return
	}
	pub, ok := csr.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		http.Error(w, "bad request: want an ECDSA P-256 key", http.StatusBadRequest)
		return
	}
	issue := Request{Name: req.Name, Role: req.Role, Hosts: req.Hosts}
	switch req.Role {
	case RoleClient:
		issue.Validity = ClientCertValidity
	case RoleDriver:
		issue.Validity = s.policy.DriverValidity
	}
	s.issue(w, r, pub, issue)
}

// handleRenew renews the driver certificate the client presented.
func (s *JoinServer) handleRenew(w http.ResponseWriter, r *http.Request) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		http.Error(w, "renewing needs the certificate to renew", http.StatusUnauthorized)
		return
	}
	cert := r.TLS.VerifiedChains[0][0]
	if roleOf(cert) != RoleDriver || s.policy.MayRenew == nil {
		http.Error(w, "only a driver's certificate is renewed", http.StatusForbidden)
		return
	}
	if err := s.policy.MayRenew(cert); err != nil {
		s.log.Warn("identity: renewal refused", "from", r.RemoteAddr, "user", GCSUser(cert), "err", err)
		http.Error(w, "renewal refused: "+err.Error(), http.StatusForbidden)
		return
	}
	req, ok := decodeJoinRequest(w, r)
	if !ok {
		return
	}
	pub, err := csrKey(req.CSR)
	if err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	var hosts []string
	for _, ip := range cert.IPAddresses {
		hosts = append(hosts, ip.String())
	}
	hosts = append(hosts, cert.DNSNames...)
	s.issue(w, r, pub, Request{Name: NameOf(cert), Role: RoleDriver, Hosts: hosts, Validity: s.policy.DriverValidity, User: GCSUser(cert)})
}

// handleRelease forgets the driver certificate the client presented (JoinPolicy.Release).
func (s *JoinServer) handleRelease(w http.ResponseWriter, r *http.Request) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		http.Error(w, "releasing needs the certificate to release", http.StatusUnauthorized)
		return
	}
	cert := r.TLS.VerifiedChains[0][0]
	if roleOf(cert) != RoleDriver || s.policy.Release == nil {
		http.Error(w, "only a driver's certificate is released", http.StatusForbidden)
		return
	}
	if err := s.policy.Release(cert); err != nil {
		s.log.Warn("identity: release refused", "from", r.RemoteAddr, "user", GCSUser(cert), "err", err)
		http.Error(w, "release refused: "+err.Error(), http.StatusConflict)
		return
	}
	s.log.Info("identity: released a driver's certificate", "from", r.RemoteAddr, "user", GCSUser(cert))
	w.WriteHeader(http.StatusNoContent)
}

// decodeJoinRequest reads r's body (at most maxJoinBody) as a joinRequest; if it cannot,
// it answers 400 Bad Request and reports false.
func decodeJoinRequest(w http.ResponseWriter, r *http.Request) (joinRequest, bool) {
	var req joinRequest
	body, err := io.ReadAll(io.LimitReader(r.Body, maxJoinBody+1))
	if err != nil || len(body) > maxJoinBody {
		http.Error(w, "request too large or unreadable", http.StatusBadRequest)
		return req, false
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return req, false
	}
	return req, true
}

// csrKey checks a DER certificate request and returns its key (ECDSA P-256).
func csrKey(der []byte) (*ecdsa.PublicKey, error) {
	csr, err := x509.ParseCertificateRequest(der)
	if err == nil {
		err = csr.CheckSignature()
	}
	if err != nil {
		return nil, fmt.Errorf("certificate request: %w", err)
	}
	pub, ok := csr.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return nil, errors.New("want an ECDSA P-256 key")
	}
	return pub, nil
}

// issue signs, records and sends a certificate.
func (s *JoinServer) issue(w http.ResponseWriter, r *http.Request, pub *ecdsa.PublicKey, issue Request) {
	der, err := s.ca.Sign(pub, issue)
	if err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	req := issue
	if s.record != nil {
		cert, err := x509.ParseCertificate(der)
		if err == nil {
			err = s.record(cert)
		}
		if err != nil {
			s.log.Error("identity: join endpoint: record the certificate", "name", req.Name, "err", err)
			http.Error(w, "the head could not record the certificate; try again", http.StatusServiceUnavailable)
			return
		}
	}
	s.log.Info("identity: issued a certificate", "from", r.RemoteAddr, "name", req.Name, "role", req.Role, "hosts", req.Hosts, "renewal", req.User != "")
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(joinResponse{
		CA:   string(s.ca.CertPEM()),
		Cert: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
	})
}

// JoinRequest says whom to ask for a certificate and what for.
type JoinRequest struct {
	// Address is the head's join endpoint, host:port.
	Address string
	Token   Token
	// Role (RoleNode, RoleDriver or RoleClient), Name and Hosts of the certificate.
	Role  string
	Name  string
	Hosts []string
	// Timeout bounds the call (default DefaultJoinTimeout).
	Timeout time.Duration
	// CheckOnly asks only whether the token is current (rayctl with a cached certificate):
	// Join returns nil credentials and no error if it is, ErrTokenRejected if not.
	CheckOnly bool
}

// Join presents the token to the head's join endpoint and returns credentials: a new key,
// the certificate the head signed for it and the CA certificate. The server must prove it
// holds a head certificate of the CA the token pins before the secret is sent.
func Join(ctx context.Context, req JoinRequest) (*Credentials, error) {
	if req.Timeout <= 0 {
		req.Timeout = DefaultJoinTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		return nil, err
	}
	body, _ := json.Marshal(joinRequest{Secret: hex.EncodeToString(req.Token.Secret[:]), Role: req.Role,
		Name: req.Name, Hosts: req.Hosts, CSR: csr})

	var pinErr error
	tcfg := &tls.Config{
		MinVersion: tls.VersionTLS13,
		// The server is checked against the pinned CA below, not the system roots: the
		// cluster CA is self-signed and the join address may be any IP.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			pinErr = verifyPinned(cs.PeerCertificates, req.Token.CAHash)
			return pinErr
		},
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tcfg, DisableKeepAlives: true,
		TLSHandshakeTimeout: req.Timeout, ResponseHeaderTimeout: req.Timeout, ForceAttemptHTTP2: false}}
	path := joinPath
	if req.CheckOnly {
		path = checkPath
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+req.Address+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("identity: join address %q: %w", req.Address, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(hreq)
	if err != nil {
		if pinErr != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCAMismatch, req.Address, pinErr)
		}
		return nil, fmt.Errorf("%w at %s (is the head agent running, and is this its join address?): %v", ErrJoinUnreachable, req.Address, err)
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("identity: join %s: read the answer: %w", req.Address, err)
	}
	switch resp.StatusCode {
	case http.StatusNoContent:
		if req.CheckOnly {
			return nil, nil
		}
		return nil, fmt.Errorf("identity: join %s: the head issued nothing", req.Address)
	case http.StatusOK:
	case http.StatusForbidden:
		return nil, ErrTokenRejected
	default:
		return nil, fmt.Errorf("identity: join %s: the head answered %s: %s", req.Address, resp.Status, strings.TrimSpace(string(rb)))
	}
	var jr joinResponse
	if err := json.Unmarshal(rb, &jr); err != nil {
		return nil, fmt.Errorf("identity: join %s: undecodable answer: %w", req.Address, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	creds, err := NewCredentials([]byte(jr.CA), []byte(jr.Cert), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		return nil, fmt.Errorf("identity: join %s: the head's answer: %w", req.Address, err)
	}
	if creds.CAFingerprint() != req.Token.CAHash {
		return nil, fmt.Errorf("%w: the head returned another CA certificate", ErrCAMismatch)
	}
	if !samePublicKey(creds.Leaf(), &key.PublicKey) {
		return nil, errors.New("identity: join: the head signed another key than ours")
	}
	return creds, nil
}

// Renew asks the head's join endpoint at address (host:port) to renew c, a driver's
// certificate, presenting it: on success c presents the renewed certificate (same name and
// GCS user, a new key and serial, a later expiry) from its next handshake on. The server
// must hold a head certificate of c's CA. ErrRenewRefused: the head will not renew it (it
// was revoked); ErrJoinUnreachable: try again later.
func Renew(ctx context.Context, address string, c *Credentials, timeout time.Duration) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(joinRequest{CSR: csr})
	status, rb, err := postWithCert(ctx, address, renewPath, c, body, timeout)
	if err != nil {
		return err
	}
	switch status {
	case http.StatusOK:
	case http.StatusForbidden, http.StatusUnauthorized:
		return fmt.Errorf("%w: %s", ErrRenewRefused, strings.TrimSpace(string(rb)))
	default:
		return fmt.Errorf("identity: renew at %s: the head answered %d %s: %s", address, status, http.StatusText(status), strings.TrimSpace(string(rb)))
	}
	var jr joinResponse
	if err := json.Unmarshal(rb, &jr); err != nil {
		return fmt.Errorf("identity: renew at %s: undecodable answer: %w", address, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	certPEM := []byte(jr.Cert)
	if err := c.Renew(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})); err != nil {
		return fmt.Errorf("identity: renew at %s: %w", address, err)
	}
	return nil
}

// Release tells the head's join endpoint at address (host:port) that the driver holding c
// has ended, presenting c: the head forgets the certificate (its records and GCS user) at
// once, not at its expiry. c must not be used afterwards: the GCS refuses it.
func Release(ctx context.Context, address string, c *Credentials, timeout time.Duration) error {
	status, rb, err := postWithCert(ctx, address, releasePath, c, nil, timeout)
	if err != nil {
		return err
	}
	if status != http.StatusNoContent {
		return fmt.Errorf("identity: release at %s: the head answered %d %s: %s", address, status, http.StatusText(status), strings.TrimSpace(string(rb)))
	}
	return nil
}

// postWithCert POSTs body to path at the join endpoint at address, presenting c's
// certificate; the server must hold a head certificate of c's CA. It returns the answer's
// status and body (at most 64 KiB).
func postWithCert(ctx context.Context, address, path string, c *Credentials, body []byte, timeout time.Duration) (int, []byte, error) {
	if timeout <= 0 {
		timeout = DefaultJoinTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pin := c.CAFingerprint()
	var pinErr error
	tcfg := &tls.Config{
		MinVersion:           tls.VersionTLS13,
		GetClientCertificate: c.getClientCertificate,
		InsecureSkipVerify:   true, // replaced by VerifyConnection, as Join's
		VerifyConnection: func(cs tls.ConnectionState) error {
			pinErr = verifyPinned(cs.PeerCertificates, pin)
			return pinErr
		},
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tcfg, DisableKeepAlives: true,
		TLSHandshakeTimeout: timeout, ResponseHeaderTimeout: timeout, ForceAttemptHTTP2: false}}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+address+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, fmt.Errorf("identity: join address %q: %w", address, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(hreq)
	if err != nil {
		if pinErr != nil {
			return 0, nil, fmt.Errorf("%w: %s: %v", ErrCAMismatch, address, pinErr)
		}
		return 0, nil, fmt.Errorf("%w at %s: %v", ErrJoinUnreachable, address, err)
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return 0, nil, fmt.Errorf("identity: %s at %s: read the answer: %w", path, address, err)
	}
	return resp.StatusCode, rb, nil
}

// RenewAt is when a certificate should be renewed: half its lifetime after it was issued.
func RenewAt(cert *x509.Certificate) time.Time {
	issued := cert.NotBefore.Add(clockSkew)
	return issued.Add(cert.NotAfter.Sub(issued) / 2)
}

// verifyPinned checks a server's chain: one of its certificates is the CA whose SHA-256 is
// pin, and the first (the server's own) is a head certificate that CA signed.
func verifyPinned(chain []*x509.Certificate, pin [32]byte) error {
	if len(chain) == 0 {
		return errors.New("the server presented no certificate")
	}
	pool := x509.NewCertPool()
	found := false
	for _, c := range chain[1:] {
		if sha256.Sum256(c.Raw) == pin {
			pool.AddCert(c)
			found = true
		}
	}
	if !found {
		return fmt.Errorf("none of its certificates is the CA %s…", hex.EncodeToString(pin[:])[:16])
	}
	if _, err := chain[0].Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return fmt.Errorf("its certificate does not chain to the pinned CA: %w", err)
	}
	if roleOf(chain[0]) != RoleHead {
		return fmt.Errorf("its certificate is a %q certificate, not the head's", roleOf(chain[0]))
	}
	return nil
}

// JoinAddress returns the default join endpoint of a cluster whose (embedded) GCS is at
// gcsAddr: the same host, the GCS port + 1.
func JoinAddress(gcsAddr string) (string, error) {
	host, port, err := net.SplitHostPort(strings.TrimPrefix(strings.TrimPrefix(gcsAddr, "https://"), "http://"))
	if err != nil {
		return "", fmt.Errorf("identity: GCS address %q: %w", gcsAddr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p >= 65535 {
		return "", fmt.Errorf("identity: GCS address %q: bad port", gcsAddr)
	}
	return net.JoinHostPort(host, strconv.Itoa(p+1)), nil
}

// aboutResponse is the JSON body of GET /v1/about.
type aboutResponse struct {
	Service string `json:"service"` // aboutService
	GCS     string `json:"gcs,omitempty"`
}

const aboutService = "ray-go join endpoint"

func (s *JoinServer) handleAbout(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(aboutResponse{Service: aboutService, GCS: s.policy.GCSAddress})
}

// JoinEndpointAt reports whether a head's join endpoint answers at addr (host:port), and
// the GCS address it names ("" when it names none): for a client whose connection to addr,
// taken for the GCS, failed. It asks GET /v1/about over TLS without checking the server's
// certificate (nothing secret is sent, and the answer only words an error).
func JoinEndpointAt(addr string, timeout time.Duration) (gcs string, ok bool) {
	c := &http.Client{Timeout: timeout, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, // a probe: nothing is trusted or sent
		DisableKeepAlives: true,
	}}
	resp, err := c.Get("https://" + addr + aboutPath)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	var about aboutResponse
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 4<<10)).Decode(&about) != nil || about.Service != aboutService {
		return "", false
	}
	return about.GCS, true
}

// PlainText reports whether the server at addr (host:port) speaks plain text rather than
// TLS: it opens a connection and starts a TLS handshake (nothing secret is sent). A server
// that cannot be reached, or that speaks TLS, gives false. Clients without credentials use
// it to tell a user who forgot --insecure from one who forgot the token.
func PlainText(addr string, timeout time.Duration) bool {
	d := &net.Dialer{Timeout: timeout}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) // a probe: nothing is trusted or sent
	if err == nil {
		conn.Close()
		return false
	}
	// A plain-text server answers a ClientHello with something that is not a TLS record
	// (an HTTP 400), or closes the connection without a TLS alert (etcd's connection
	// multiplexer matches no protocol). A TLS server always answers with a record.
	var rec tls.RecordHeaderError
	var op *net.OpError
	dialFailed := errors.As(err, &op) && op.Op == "dial"
	return errors.As(err, &rec) || (!dialFailed && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)))
}
