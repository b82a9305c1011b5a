package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
	"github.com/ray-go/ray/internal/base/identity"
	"github.com/ray-go/ray/internal/base/workerenv"
)

// Errors about credentials (the CLI gives them their own exit code).
var (
	// ErrNoCredentials: a secure cluster was to be joined without a token or credentials.
	ErrNoCredentials = errors.New("agent: no credentials to join the cluster")
	// ErrCredentials: the credentials were refused (a wrong or rotated token, a join
	// endpoint of another cluster, a GCS that does not accept the certificate).
	ErrCredentials = errors.New("agent: credentials refused")
)

// Directories of the agent's identity under SessionDir.
const (
	caDirName  = "ca"  // head: ca.crt, ca.key, token
	tlsDirName = "tls" // every agent: ca.crt, node.crt, node.key (what its processes get)
)

// CADir is where a head agent keeps its CA and the join token; TLSDir where an agent keeps
// its own credentials (read by the processes it starts, and by rayctl on this machine).
func CADir(sessionDir string) string  { return filepath.Join(sessionDir, caDirName) }
func TLSDir(sessionDir string) string { return filepath.Join(sessionDir, tlsDirName) }

// TokenPath is the head's token file.
func TokenPath(sessionDir string) string {
	return filepath.Join(CADir(sessionDir), identity.TokenFile)
}

// headIdentity loads the head's CA and token from its session directory, or creates them
// the first time, and issues the head's certificate (for 127.0.0.1 and Host).
func (a *Agent) headIdentity() (*identity.CA, *identity.Credentials, error) {
	dir := CADir(a.cfg.SessionDir)
	ca, err := identity.LoadCA(dir)
	if errors.Is(err, os.ErrNotExist) {
		if ca, err = identity.NewCA("ray-go cluster "+a.id, time.Now()); err == nil {
			err = identity.SaveCA(dir, ca)
		}
		if err == nil {
			var tok identity.Token
			if tok, err = identity.NewToken(ca); err == nil {
				err = identity.SaveToken(TokenPath(a.cfg.SessionDir), tok)
			}
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("agent: the cluster CA in %s: %w", dir, err)
	}
	// The token is read through the CA directory opened here, never again by its path: a
	// directory above that another user could rename (a session dir they made) cannot put
	// a token of theirs in its place. `rayctl token rotate` replaces the file in it.
	td, err := identity.OpenTokenDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("agent: the join token: %w", err)
	}
	if _, err := td.Read(); err != nil {
		td.Close()
		return nil, nil, fmt.Errorf("agent: the join token: %w", err)
	}
	a.tokenDir = td
	creds, err := ca.Issue(identity.Request{Name: "head-" + a.id, Role: identity.RoleHead, Hosts: []string{a.cfg.host()}})
	if err != nil {
		return nil, nil, fmt.Errorf("agent: the head's certificate: %w", err)
	}
	return ca, creds, nil
}

// serveJoin starts the head's join endpoint.
func (a *Agent) serveJoin(ca *identity.CA, creds *identity.Credentials) error {
	addr := a.cfg.JoinAddress
	if addr == "" {
		port := 0
		if a.cfg.GCSPort != 0 {
			port = a.cfg.GCSPort + 1
		}
		addr = net.JoinHostPort(a.cfg.host(), strconv.Itoa(port))
	}
	record := func(cert *x509.Certificate) error {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		return a.recordCert(ctx, cert)
	}
	s, err := identity.ServeJoin(addr, ca, creds, a.tokenDir.Read, record,
		identity.JoinPolicy{DriverValidity: a.cfg.DriverCertValidity, MayRenew: a.mayRenew, Release: a.releaseCert,
			GCSAddress: a.Address()}, a.log)
	if err != nil {
		if isAddrInUse(err) {
			return fmt.Errorf("%w: the join endpoint's address %s is already in use (pass another with --join-port): %v", ErrPortInUse, addr, err)
		}
		return fmt.Errorf("agent: %w", err)
	}
	a.join = s
	return nil
}

// joinCredentials gets a joining agent's credentials: the external GCS's files, or a
// certificate from the head for the token. They are saved in TLSDir for the processes
// the agent starts.
func (a *Agent) joinCredentials(ctx context.Context) (*identity.Credentials, error) {
	cfg := a.cfg
	if !cfg.GCSFiles.IsZero() {
		c, err := identity.Load(cfg.GCSFiles)
		if err != nil {
			return nil, fmt.Errorf("%w: GCS credentials: %w", ErrCredentials, err)
		}
		a.creds = cfg.GCSFiles
		return c, nil
	}
	if cfg.Token == nil {
		if identity.PlainText(cfg.GCSEndpoints[0], 2*time.Second) {
			return nil, fmt.Errorf("%w: the cluster at %s speaks plain text (its head was started with --insecure): join it with --insecure",
				ErrNoCredentials, a.Address())
		}
		if err := a.previousCertRefused(ctx); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: the cluster at %s is secure: pass its join token (--token, %s or --token-file; "+
			"`rayctl start --head` printed it, `rayctl token show` on the head prints it again)", ErrNoCredentials, a.Address(), workerenv.Token)
	}
	addr := cfg.JoinAddress
	if addr == "" {
		var err error
		if addr, err = identity.JoinAddress(cfg.GCSEndpoints[0]); err != nil {
			return nil, err
		}
	}
	var hosts []string
	if cfg.Host != "" {
		hosts = append(hosts, cfg.Host)
	}
	c, err := identity.Join(ctx, identity.JoinRequest{Address: addr, Token: *cfg.Token, Role: identity.RoleNode, Name: "agent-" + a.id, Hosts: hosts})
	if err != nil {
		if gcsAddr, ok := identity.JoinEndpointAt(cfg.GCSEndpoints[0], 2*time.Second); ok {
			if gcsAddr == "" {
				gcsAddr = "the join port - 1 unless the head was started with --join-port"
			}
			return nil, joinEndpointError(fmt.Sprintf("%s is the head's join endpoint (where agents and drivers trade the join token for a certificate), "+
				"not the cluster's GCS: pass the GCS address with --address: %s", cfg.GCSEndpoints[0], gcsAddr))
		}
	}
	switch {
	case errors.Is(err, identity.ErrJoinUnreachable):
		return nil, fmt.Errorf("%w: %w (pass the head's join address with --join-address if it is not the GCS port + 1)", ErrGCSUnreachable, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrCredentials, err)
	}
	files, err := c.Save(TLSDir(cfg.SessionDir))
	if err != nil {
		return nil, fmt.Errorf("agent: save the credentials: %w", err)
	}
	a.creds = files
	return c, nil
}

// ErrJoinEndpoint: the address given for the GCS is the head's join endpoint (its port, the
// GCS port + 1 by default). The error says which address to use; it is also
// ErrGCSUnreachable.
var ErrJoinEndpoint = errors.New("agent: the head's join endpoint given as the GCS address")

type joinEndpointError string

func (e joinEndpointError) Error() string { return string(e) }
func (e joinEndpointError) Is(target error) bool {
	return target == ErrJoinEndpoint || target == ErrGCSUnreachable
}

// previousCertRefused explains a restart without a token of an agent whose certificate,
// from its last run (kept in TLSDir), the cluster no longer accepts: revoked (`rayctl cert
// revoke`: the GCS refuses its handshakes or its requests) or expired. The agent needs a
// token either way, but "no credentials" alone hid why its certificate stopped working.
// Nil when there is no such certificate, or the cluster still takes it (or cannot say).
func (a *Agent) previousCertRefused(ctx context.Context) error {
	prev, err := identity.Load(identity.FilesIn(TLSDir(a.cfg.SessionDir)))
	if err != nil || prev.Role() != identity.RoleNode {
		return nil
	}
	serial := identity.SerialText(prev.Leaf().SerialNumber)
	rejoin := a.cfg.Rejoin
	if rejoin == "" {
		rejoin = "start it again with the cluster's join token (a new certificate)"
	}
	if exp := prev.Leaf().NotAfter; time.Now().After(exp) {
		return fmt.Errorf("%w: this agent's certificate from its last run (serial %s) expired at %s; to rejoin the cluster at %s: %s",
			ErrCredentials, serial, exp.UTC().Format(time.RFC3339), a.Address(), rejoin)
	}
	s, err := etcdstore.New(ctx, etcdstore.Config{Endpoints: a.cfg.GCSEndpoints, DialTimeout: 5 * time.Second, Namespace: a.cfg.Namespace,
		Logger: a.log, TLS: prev.ClientTLS()})
	if err == nil {
		_ = s.Close()
		return nil
	}
	if !errors.Is(err, etcdstore.ErrTLSRefused) && !errors.Is(err, etcdstore.ErrNoAccess) {
		return nil
	}
	return fmt.Errorf("%w: the cluster at %s refuses this agent's certificate from its last run (serial %s): it was revoked "+
		"(`rayctl cert revoke`; `rayctl cert list` on the head says), so it cannot rejoin with it; to rejoin the cluster: %s (%v)",
		ErrCredentials, a.Address(), serial, rejoin, err)
}

// clientTLS is the TLS configuration of credentials, nil for none.
func clientTLS(c *identity.Credentials) *tls.Config {
	if c == nil {
		return nil
	}
	return c.ClientTLS()
}

// CredentialFiles are the files of the agent's own GCS credentials (zero when Insecure):
// what its worker processes and submitted drivers are given.
func (a *Agent) CredentialFiles() identity.Files { return a.creds }

// JoinAddress is the head's join endpoint (empty unless this is a secure head with an
// embedded GCS).
func (a *Agent) JoinAddress() string {
	if a.join == nil {
		return ""
	}
	return a.join.Addr()
}

// Token reads the head's current join token (through the CA directory opened at start).
func (a *Agent) Token() (identity.Token, error) {
	if a.tokenDir == nil {
		return identity.Token{}, errors.New("agent: no join token: not a secure head with an embedded GCS")
	}
	return a.tokenDir.Read()
}

// credentialEnv is what the agent adds to the environment of a process it starts so that
// the process reaches the GCS as the agent does.
func (a *Agent) credentialEnv() []string {
	if a.cfg.Insecure {
		return []string{workerenv.Insecure + "=1"}
	}
	return []string{workerenv.GCSCA + "=" + a.procCreds.CA, workerenv.GCSCert + "=" + a.procCreds.Cert, workerenv.GCSKey + "=" + a.procCreds.Key}
}

// CRLPath is where a secure head keeps the certificate revocation list its embedded GCS
// checks every client and peer certificate against (rewritten from the GCS's revoked/
// records by writeCRLs).
func CRLPath(sessionDir string) string { return filepath.Join(CADir(sessionDir), "ca.crl") }

// initCRL makes sure the CRL file exists before the embedded GCS starts (etcd refuses
// every connection while it cannot read it): the one of the last run stays until
// writeCRLs replaces it, a first start writes an empty one.
func (a *Agent) initCRL(ca *identity.CA) (string, error) {
	path := CRLPath(a.cfg.SessionDir)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	b, err := ca.CRL(nil, time.Now().UnixNano(), time.Now())
	if err == nil {
		err = identity.WriteFile(path, b)
	}
	if err != nil {
		return "", fmt.Errorf("agent: the certificate revocation list: %w", err)
	}
	return path, nil
}

// recordCert writes certs/<serial> for a certificate the head's CA issued.
func (a *Agent) recordCert(ctx context.Context, cert *x509.Certificate) error {
	rec := gcs.CertRecord{Serial: identity.SerialText(cert.SerialNumber), Name: identity.NameOf(cert), User: identity.GCSUser(cert),
		NotAfter: cert.NotAfter.UTC(), IssuedAt: time.Now().UTC()}
	if len(cert.Subject.OrganizationalUnit) == 1 {
		rec.Role = cert.Subject.OrganizationalUnit[0]
	}
	for _, p := range []string{"agent-", "head-"} {
		if id, ok := strings.CutPrefix(rec.Name, p); ok && (rec.Role == identity.RoleNode || rec.Role == identity.RoleHead) {
			rec.AgentID = id
		}
	}
	b, err := json.Marshal(rec)
	if err == nil {
		_, err = a.store.Put(ctx, gcs.CertKey(rec.Serial), b, 0)
	}
	if err != nil {
		return fmt.Errorf("agent: record certificate %s of %s: %w", rec.Serial, rec.Name, err)
	}
	// The user after the record: syncUsers makes a user for every record, so a join that
	// failed between the two leaves nothing syncUsers does not repair.
	if a.auth != nil {
		if role := identity.GCSRoleOf(rec.Role); role != "" {
			if err := a.auth.PutUser(ctx, rec.User, role); err != nil {
				return fmt.Errorf("agent: the GCS user of certificate %s of %s: %w", rec.Serial, rec.Name, err)
			}
		}
	}
	return nil
}

// writeCRLs keeps the CRL file equal to the GCS's revoked/ records, signed by the CA,
// until the agent stops. The file is replaced atomically; etcd reads it at every
// handshake. After a new revocation it syncs the GCS users and cuts the GCS's client
// connections (Embedded.CutClientConnections).
func (a *Agent) writeCRLs() {
	defer a.wg.Done()
	path := CRLPath(a.cfg.SessionDir)
	written := -1 // revoked certificates in the file written last; -1: none written yet
	gcs.WatchRevoked(a.ctx, a.store, 0, time.Second, func(list []gcs.RevokedRecord) {
		entries := make([]identity.RevokedCert, 0, len(list))
		for _, r := range list {
			n, err := identity.ParseSerial(r.Serial)
			if err != nil {
				a.log.Warn("agent: a revoked/ record with no serial number; ignored", "serial", r.Serial)
				continue
			}
			entries = append(entries, identity.RevokedCert{Serial: n, RevokedAt: r.RevokedAt})
		}
		b, err := a.ca.CRL(entries, time.Now().UnixNano(), time.Now())
		if err == nil {
			err = identity.WriteFile(path, b)
		}
		if err != nil {
			a.log.Error("agent: write the certificate revocation list", "path", path, "err", err)
			return
		}
		a.log.Info("agent: certificate revocation list written", "revoked", len(entries), "path", path)
		a.syncUsers(a.ctx)
		// The GCS's connections opened before this revocation are cut, so that each makes
		// its handshake again against the new list: etcd would otherwise keep serving a
		// revoked certificate's open watches (requests are refused by syncUsers already).
		// Clients of valid certificates reconnect and resume their watches by themselves.
		if written >= 0 && len(entries) > written && a.embedded != nil {
			if n := a.embedded.CutClientConnections(); n > 0 {
				a.log.Info("agent: GCS client connections cut after a revocation; valid clients reconnect", "connections", n)
			}
		}
		written = len(entries)
	})
}
