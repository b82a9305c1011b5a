package identity

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// ErrNotAPeer: the other end of a node-to-node connection holds no certificate of this
// cluster's CA, or one issued for a role that has no business on the data plane.
var ErrNotAPeer = errors.New("identity: not a member of this cluster")

// PeerServerTLS is the TLS server configuration of a node's node-to-node ports (protoactor's
// gRPC remote, the object data stream): TLS 1.3, this certificate, and a client
// certificate of the cluster's CA (VerifyPeer) required.
func (c *Credentials) PeerServerTLS() *tls.Config {
	return &tls.Config{
		MinVersion:       tls.VersionTLS13,
		GetCertificate:   c.getPeerCertificate,
		ClientAuth:       tls.RequireAnyClientCert, // verified by VerifyConnection: CA, role
		VerifyConnection: c.verifyPeer,
	}
}

// PeerClientTLS is the TLS client configuration for dialing another node: TLS 1.3, this
// certificate, and the server must hold a certificate of the cluster's CA (VerifyPeer).
//
// The server's host name is not checked against its certificate: a node is known by its
// cluster membership, not by an address (a driver's certificate names no routable host, a
// machine may be reached at any of its addresses), as cluster-internal mTLS usually works.
// What is checked is the chain to this cluster's CA, the validity period and the role,
// in VerifyConnection, after the handshake proved the server holds the certificate's key.
func (c *Credentials) PeerClientTLS() *tls.Config {
	return &tls.Config{
		MinVersion:           tls.VersionTLS13,
		GetClientCertificate: c.getClientCertificate,
		InsecureSkipVerify:   true, // replaced by VerifyConnection: CA, role
		VerifyConnection:     c.verifyPeer,
	}
}

func (c *Credentials) verifyPeer(cs tls.ConnectionState) error {
	if err := VerifyPeer(c.pool, cs.PeerCertificates); err != nil {
		return err
	}
	return c.checkRevoked(cs.PeerCertificates[0])
}

// VerifyPeer checks that chain (leaf first, as TLS presents it) is a certificate of the CA
// in roots, valid now, not issued for RoleClient: a node's peer is whatever holds a key the
// cluster's CA certified for running a node (head, joined agents and their worker
// processes, drivers, a local-mode process), while a client certificate (rayctl
// status/job/memory) reaches the GCS and the join endpoint, never another node.
//
// Key usages are not checked: with an external etcd (`--gcs-endpoints`) the cluster's
// certificate comes from the operator's PKI, where a client certificate often carries the
// client-auth usage only, and it serves node to node as well. Its subject's OU is the
// operator's too, so only the one role this package issues for clients is refused.
func VerifyPeer(roots *x509.CertPool, chain []*x509.Certificate) error {
	if len(chain) == 0 {
		return fmt.Errorf("%w: it presented no certificate", ErrNotAPeer)
	}
	inter := x509.NewCertPool()
	for _, cert := range chain[1:] {
		inter.AddCert(cert)
	}
	leaf := chain[0]
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return fmt.Errorf("%w: the certificate of %q: %w", ErrNotAPeer, leaf.Subject.CommonName, err)
	}
	if roleOf(leaf) == RoleClient {
		return fmt.Errorf("%w: %q holds a %s certificate (rayctl's), which reaches the GCS, not the nodes", ErrNotAPeer, leaf.Subject.CommonName, RoleClient)
	}
	return nil
}
