// Package identity is a ray-go cluster's identity: its certificate authority, the
// certificates it signs, the join token and the join protocol that turns a token into a
// certificate (DESIGN §9). It imports only the standard library (crypto/x509, crypto/tls,
// net/http); no maintained library does this small job without pulling in a PKI server.
//
// # Keys and certificates
//
// The head agent creates the CA (NewCA: a self-signed ECDSA P-256 certificate, valid 10
// years) and keeps it in its session directory (SaveCA: ca.crt and ca.key, files 0600 in a
// 0700 directory; LoadCA reads them back when the head restarts on the same directory).
// Every certificate it signs (CA.Sign, CA.Issue) is ECDSA P-256, valid a year (from the join
// endpoint, a day for RoleClient, ClientCertValidity, and an hour for RoleDriver,
// DriverCertValidity, JoinPolicy), usable as a TLS server and client
// certificate, names its role in the subject's OU (head, node, driver, client, local), has
// the common name "<name>:<serial>" (the name it was requested for, NameOf, and its serial
// number: unique per certificate, the GCS user below) and lists the hosts it serves at,
// always with 127.0.0.1 and localhost. Credentials hold a certificate, its key and the CA certificate, give TLS
// configurations (ServerTLS requires a client certificate of the CA; ClientTLS trusts only
// the CA) and are saved as ca.crt, node.crt and node.key (Save, Load; Load refuses expired
// or mismatched files with a message that says which). The TLS configurations present the
// current certificate at each handshake: Credentials.Renew replaces it (with one of the
// same GCS user and role), which is how a driver renews its short-lived certificate while
// it runs: Renew presents it to the join endpoint's /v1/renew (no token), which signs a
// new key for the same name and GCS user (Request.User: the renewal keeps the first
// serial's common name) if JoinPolicy.MayRenew (the head: not revoked) agrees. A driver
// that ended gives its certificate up the same way (Release: /v1/release), and
// JoinPolicy.Release (the head: delete its records and GCS user) forgets it.
//
// # The join token
//
// Token is "<secret>.<CA hash>": 256 random bits, hex, and the SHA-256 of the CA
// certificate, hex (kubeadm's bootstrap token and discovery-token-ca-cert-hash in one
// string). The secret authenticates the joiner to the head; the hash authenticates the
// head to the joiner, so a token is all a new machine needs: no CA file to copy, and no
// trust on first use.
//
// # Joining
//
// The head serves the join endpoint (ServeJoin; by default on the GCS port + 1, see
// JoinAddress) over TLS 1.3 with its head certificate and the CA certificate in the chain.
// Join generates a key, connects, checks before sending anything that the server's chain
// contains the CA the token pins and that the server's certificate is a head certificate
// of that CA, then sends the secret and a certificate request. The server compares the
// secret in constant time, signs the requested role (never head or local) for the
// request's key, has the certificate recorded (ServeJoin's record callback; a failure
// refuses the join) and answers with the certificate and the CA certificate. The endpoint
// reads the token on each request, so replacing the token file (`rayctl token rotate`)
// takes effect at once; certificates already issued stay valid. Requests are bounded
// (16 KiB bodies, 5 s to send headers, 10 s per request, 30 s idle). GET /v1/about says
// what the endpoint is and the GCS address (JoinPolicy.GCSAddress), for a client given the
// join port as the GCS's to say which to use (JoinEndpointAt).
//
// # Node to node
//
// PeerServerTLS and PeerClientTLS are the configurations of the nodes' own connections
// (protoactor's gRPC remote, the object data stream): TLS 1.3 both ways, and the other end
// must hold a certificate of the same CA that was not issued for RoleClient (VerifyPeer).
// Host names are not checked (a node is known by its CA, not by an address), nor key usages
// (an external etcd's PKI may issue client-only certificates, which then serve node to node
// too). ErrNotAPeer says a connection was refused for that.
//
// # Revocation
//
// A certificate is known by its serial number (SerialText: lowercase hex; ParseSerial reads
// it back, also with colons or a 0x prefix). Revoked is a set of serials behind an atomic
// pointer, replaced whole by its owner; Credentials.SetRevoked makes PeerServerTLS and
// PeerClientTLS (those made before too) refuse a peer whose certificate is in it, after the
// chain check, with ErrRevoked (wrapping ErrNotAPeer) and a warning on Revoked.Log. CA.CRL
// signs a certificate revocation list (x509.CreateRevocationList, PEM "X509 CRL") for
// servers that take one, as etcd does. The set's content and the CRL's come from the
// GCS's revoked/ records (`rayctl cert revoke`), which this package does not read: the
// node watches them into its set, the head agent into the CRL of its embedded etcd, and
// ServeJoin's record callback is how the head lists what it issued (certs/). A handshake
// is where certificates are checked; connections already open are closed by their owner's
// Revoked when their peer's certificate is revoked, if they were tracked (TrackPeer:
// the node's gRPC remote both ways and its data stream's served connections).
//
// # The GCS's roles
//
// The GCS (etcd) runs with client-certificate authentication and etcd's auth on: etcd takes
// a client's user from its certificate's common name (GCSUser) and checks that user's
// roles on every request, and grants nothing a role does not name. The head creates a
// user per certificate it issues, with the etcd role GCSRoleOf the certificate's role, and
// deletes it when the certificate is revoked (so a connection opened before the
// revocation is refused at its next request; etcd checks the CRL at handshakes only) or
// expires. The roles, in the cluster's key namespace ("r": read, "w": write; the table is
// gcsTable, GCSAccess reads it, GCSPermissions turns it into etcd's key ranges):
//
//	keys                        root (head)  ray-node   ray-driver  ray-client
//	                            head, local  agents,    drivers,    rayctl with
//	                                         workers    head's jobs the token
//	revoked/  (revocations)     rw           r          r           r
//	certs/    (issued certs)    rw           r          r           r
//	submissions/                rw           r          r           rw
//	jobs/                       rw           r          rw          r
//	joblogs/                    rw           r          r           r
//	statereq/, logreq/          rw           rw         rw          rw
//	blobs/    (shipped code)    rw           rw         rw          rw
//	every other key             rw           rw         rw          r
//	outside the namespace,
//	users, roles, auth          yes          no         no          no
//
// Why: a revoked/ record is what shuts a certificate out, so only the head (and rayctl
// with its credentials) may write or delete one; certs/ is the head's record of what it
// issued; a submissions/ record makes the head run a command, and a jobs/ record makes
// every agent start the job's executable with the job's arguments, so a node (an agent's
// machine, or the code of a job running there) may write neither: submitting is for
// holders of the token (rayctl's client certificate, 24 hours) and registering a job for
// drivers (who joined with the token, or whom the head started for a submission); joblogs/
// is written by the head; blobs/ holds content named by its sha256 and checked against
// that name by every reader (package internal/base/ship), which rayctl writes for job
// submit. Everything else is the runtime's own state (nodes, members,
// objects, lineage, actors, placement, method logs, leases' keys, state API replies), which
// every node process writes. Reads are open to every role: the cluster's processes, and
// rayctl with the token, read the whole state. etcd's root role is the head's: its
// in-process client acts as etcd's root user, and its certificate's user has the role.
//
// NotPrivate lists what under a directory does not have DirMode or FileMode: the check of a
// session directory.
//
// Errors to branch on: ErrBadToken (malformed text), ErrTokenRejected (wrong secret),
// ErrCAMismatch (the server is not the token's cluster), ErrJoinUnreachable, ErrExpired,
// ErrNotAPeer and ErrRevoked (a peer refused at the handshake).
package identity
