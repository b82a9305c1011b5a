package etcdstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"time"

	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/auth"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3rpc"
	"go.etcd.io/etcd/server/v3/proxy/grpcproxy/adapter"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/ray-go/ray/internal/base/identity"
)

// RootUser is etcd's administrator: the user AuthEnable requires, holding the root role.
// The head creates it without a password (no one can log in as it); the embedded server's
// in-process clients act as it (EmbedConfig.Auth), and a certificate whose user is granted
// the root role (the head's) is as powerful.
const RootUser = "root"

// inProcessIdentity makes ctx carry what etcd's server reads to find a TLS client's user
// (peer TLS state with a verified chain, and incoming metadata without a token; see
// etcdserver.AuthInfoFromCtx and auth.AuthInfoFromTLS): the in-process client has no
// connection, so it says who it is this way. Only code of this process can do it.
type inProcessIdentity struct {
	peer *peer.Peer
}

func newInProcessIdentity(user string) *inProcessIdentity {
	cert := &x509.Certificate{Subject: pkix.Name{CommonName: user}} // only its subject is read
	return &inProcessIdentity{peer: &peer.Peer{
		Addr:     &net.UnixAddr{Name: "in-process", Net: "unix"},
		AuthInfo: credentials.TLSInfo{State: tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{cert}}}},
	}}
}

func (id *inProcessIdentity) ctx(ctx context.Context) context.Context {
	return peer.NewContext(metadata.NewIncomingContext(ctx, metadata.MD{}), id.peer)
}

// authRetryFor bounds the retries of a request that failed because the auth store changed
// while it was in flight (a user added by a join, deleted by a revocation or by the head's
// collection of expired certificates): etcd refuses such a request without applying it,
// and the gRPC client retries it on its own; the in-process client does not, so these
// wrappers do. The retries back off (from authRetryFirst, doubling up to authRetryMax): a
// burst of auth changes (the collection deletes up to a few hundred users in a row, one
// raft round each) refuses every request proposed during it, and 20 retries at once used
// to run out within the burst ("revision of auth store is old").
const (
	authRetryFor   = 10 * time.Second
	authRetryFirst = 100 * time.Microsecond
	authRetryMax   = 20 * time.Millisecond
)

func retryAuth[T any](ctx context.Context, call func(context.Context) (T, error)) (T, error) {
	var (
		out   T
		err   error
		start time.Time
	)
	for wait := authRetryFirst; ; wait = min(2*wait, authRetryMax) {
		out, err = call(ctx)
		if err == nil || !is(err, rpctypes.ErrAuthOldRevision) || ctx.Err() != nil {
			return out, err
		}
		if start.IsZero() {
			start = time.Now()
		} else if time.Since(start) > authRetryFor {
			return out, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return out, err
		case <-t.C:
		}
	}
}

// identKV, identLease and identWatch are the in-process client's adapters with the
// identity added to every request's context (and the retry above).
type identKV struct {
	pb.KVClient
	id *inProcessIdentity
}

func (k identKV) Range(ctx context.Context, r *pb.RangeRequest, o ...grpc.CallOption) (*pb.RangeResponse, error) {
	return retryAuth(k.id.ctx(ctx), func(ctx context.Context) (*pb.RangeResponse, error) { return k.KVClient.Range(ctx, r, o...) })
}
func (k identKV) Put(ctx context.Context, r *pb.PutRequest, o ...grpc.CallOption) (*pb.PutResponse, error) {
	return retryAuth(k.id.ctx(ctx), func(ctx context.Context) (*pb.PutResponse, error) { return k.KVClient.Put(ctx, r, o...) })
}
func (k identKV) DeleteRange(ctx context.Context, r *pb.DeleteRangeRequest, o ...grpc.CallOption) (*pb.DeleteRangeResponse, error) {
	return retryAuth(k.id.ctx(ctx), func(ctx context.Context) (*pb.DeleteRangeResponse, error) {
		return k.KVClient.DeleteRange(ctx, r, o...)
	})
}
func (k identKV) Txn(ctx context.Context, r *pb.TxnRequest, o ...grpc.CallOption) (*pb.TxnResponse, error) {
	return retryAuth(k.id.ctx(ctx), func(ctx context.Context) (*pb.TxnResponse, error) { return k.KVClient.Txn(ctx, r, o...) })
}
func (k identKV) Compact(ctx context.Context, r *pb.CompactionRequest, o ...grpc.CallOption) (*pb.CompactionResponse, error) {
	return retryAuth(k.id.ctx(ctx), func(ctx context.Context) (*pb.CompactionResponse, error) { return k.KVClient.Compact(ctx, r, o...) })
}

type identLease struct {
	pb.LeaseClient
	id *inProcessIdentity
}

func (l identLease) LeaseGrant(ctx context.Context, r *pb.LeaseGrantRequest, o ...grpc.CallOption) (*pb.LeaseGrantResponse, error) {
	return retryAuth(l.id.ctx(ctx), func(ctx context.Context) (*pb.LeaseGrantResponse, error) {
		return l.LeaseClient.LeaseGrant(ctx, r, o...)
	})
}
func (l identLease) LeaseRevoke(ctx context.Context, r *pb.LeaseRevokeRequest, o ...grpc.CallOption) (*pb.LeaseRevokeResponse, error) {
	return retryAuth(l.id.ctx(ctx), func(ctx context.Context) (*pb.LeaseRevokeResponse, error) {
		return l.LeaseClient.LeaseRevoke(ctx, r, o...)
	})
}
func (l identLease) LeaseKeepAlive(ctx context.Context, o ...grpc.CallOption) (pb.Lease_LeaseKeepAliveClient, error) {
	return l.LeaseClient.LeaseKeepAlive(l.id.ctx(ctx), o...)
}
func (l identLease) LeaseTimeToLive(ctx context.Context, r *pb.LeaseTimeToLiveRequest, o ...grpc.CallOption) (*pb.LeaseTimeToLiveResponse, error) {
	return l.LeaseClient.LeaseTimeToLive(l.id.ctx(ctx), r, o...)
}
func (l identLease) LeaseLeases(ctx context.Context, r *pb.LeaseLeasesRequest, o ...grpc.CallOption) (*pb.LeaseLeasesResponse, error) {
	return l.LeaseClient.LeaseLeases(l.id.ctx(ctx), r, o...)
}

type identWatch struct {
	pb.WatchClient
	id *inProcessIdentity
}

func (w identWatch) Watch(ctx context.Context, o ...grpc.CallOption) (pb.Watch_WatchClient, error) {
	return w.WatchClient.Watch(w.id.ctx(ctx), o...)
}

// newInProcessClient is etcd's v3client.New with every request made as user (the KV, lease
// and watch parts a Store uses).
func newInProcessClient(s *etcdserver.EtcdServer, user string) *clientv3.Client {
	id := newInProcessIdentity(user)
	c := clientv3.NewCtxClient(context.Background(), clientv3.WithZapLogger(s.Logger()))
	c.KV = clientv3.NewKVFromKVClient(identKV{adapter.KvServerToKvClient(v3rpc.NewQuotaKVServer(s)), id}, c)
	c.Lease = clientv3.NewLeaseFromLeaseClient(identLease{adapter.LeaseServerToLeaseClient(v3rpc.NewQuotaLeaseServer(s)), id}, c, time.Second)
	c.Watcher = &blankWatcher{clientv3.NewWatchFromWatchClient(identWatch{adapter.WatchServerToWatchClient(v3rpc.NewWatchServer(s)), id}, c)}
	return c
}

// blankWatcher is v3client's watchWrapper: the context a watch is created with is kept by
// the watch stream, and its String (read by tracing code) must not race with its values.
type blankWatcher struct{ clientv3.Watcher }

type blankContext struct{ context.Context }

func (*blankContext) String() string { return "(blankCtx)" }

func (w *blankWatcher) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	return w.Watcher.Watch(&blankContext{ctx}, key, opts...)
}

// Auth manages the users and roles of an embedded server that has EmbedConfig.Auth, as its
// root user. With client-certificate authentication (EmbedConfig.TLS) etcd takes a
// client's user from its certificate's common name and checks that user's roles on every
// request: a user deleted, or stripped of its role, is refused at its next request, on
// connections opened before too. Watches are the exception: etcd checks a watch's
// permission when it is created, so a watch already open keeps its events.
type Auth struct {
	s  *etcdserver.EtcdServer
	id *inProcessIdentity
}

// ErrNoAuth: Auth was asked of a server started without EmbedConfig.Auth.
var ErrNoAuth = errors.New("etcdstore: the embedded server was started without EmbedConfig.Auth")

// Auth returns the manager of the server's users and roles.
func (e *Embedded) Auth() (*Auth, error) {
	if !e.cfg.Auth {
		return nil, ErrNoAuth
	}
	return &Auth{s: e.etcd.Server, id: newInProcessIdentity(RootUser)}, nil
}

// Enabled reports whether etcd's authentication is on.
func (a *Auth) Enabled() bool { return a.s.AuthStore().IsAuthEnabled() }

// Enable makes roles exactly the etcd roles other than root (each with exactly the
// permissions given: others are revoked, roles not named are left alone), creates the root
// user (no password) if missing, and turns authentication on. It is idempotent: a head
// that restarts runs it again.
func (a *Auth) Enable(ctx context.Context, roles map[string][]identity.KeyRange) error {
	ctx = a.id.ctx(ctx)
	names := make([]string, 0, len(roles))
	for n := range roles {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := a.setRole(ctx, name, roles[name]); err != nil {
			return err
		}
	}
	if _, err := a.s.UserAdd(ctx, &pb.AuthUserAddRequest{Name: RootUser, Options: &authpb.UserAddOptions{NoPassword: true}}); err != nil &&
		!errors.Is(err, auth.ErrUserAlreadyExist) {
		return fmt.Errorf("etcdstore: auth: add the root user: %w", err)
	}
	if _, err := a.s.UserGrantRole(ctx, &pb.AuthUserGrantRoleRequest{User: RootUser, Role: identity.GCSRoleRoot}); err != nil {
		return fmt.Errorf("etcdstore: auth: grant root its role: %w", err)
	}
	if a.Enabled() {
		return nil
	}
	if _, err := a.s.AuthEnable(ctx, &pb.AuthEnableRequest{}); err != nil {
		return fmt.Errorf("etcdstore: auth: enable: %w", err)
	}
	return nil
}

func permOf(kr identity.KeyRange) *authpb.Permission {
	t := authpb.READ
	if kr.Write {
		t = authpb.READWRITE
	}
	return &authpb.Permission{Key: []byte(kr.Key), RangeEnd: []byte(kr.End), PermType: t}
}

func (a *Auth) setRole(ctx context.Context, name string, want []identity.KeyRange) error {
	if _, err := a.s.RoleAdd(ctx, &pb.AuthRoleAddRequest{Name: name}); err != nil && !errors.Is(err, auth.ErrRoleAlreadyExist) {
		return fmt.Errorf("etcdstore: auth: add role %s: %w", name, err)
	}
	got, err := a.s.RoleGet(ctx, &pb.AuthRoleGetRequest{Role: name})
	if err != nil {
		return fmt.Errorf("etcdstore: auth: read role %s: %w", name, err)
	}
	wanted := make([]*authpb.Permission, len(want))
	for i, kr := range want {
		wanted[i] = permOf(kr)
	}
	same := func(p, q *authpb.Permission) bool {
		return string(p.Key) == string(q.Key) && string(p.RangeEnd) == string(q.RangeEnd) && p.PermType == q.PermType
	}
	for _, p := range got.Perm {
		if slices.ContainsFunc(wanted, func(q *authpb.Permission) bool { return same(p, q) }) {
			continue
		}
		if _, err := a.s.RoleRevokePermission(ctx, &pb.AuthRoleRevokePermissionRequest{Role: name, Key: p.Key, RangeEnd: p.RangeEnd}); err != nil &&
			!errors.Is(err, auth.ErrPermissionNotGranted) {
			return fmt.Errorf("etcdstore: auth: revoke a permission of role %s: %w", name, err)
		}
	}
	for _, q := range wanted {
		if slices.ContainsFunc(got.Perm, func(p *authpb.Permission) bool { return same(p, q) }) {
			continue
		}
		if _, err := a.s.RoleGrantPermission(ctx, &pb.AuthRoleGrantPermissionRequest{Name: name, Perm: q}); err != nil {
			return fmt.Errorf("etcdstore: auth: grant role %s %q-%q: %w", name, q.Key, q.RangeEnd, err)
		}
	}
	return nil
}

// PutUser creates user (no password: it authenticates with a certificate whose common name
// it is) if missing, and grants it role.
func (a *Auth) PutUser(ctx context.Context, user, role string) error {
	ctx = a.id.ctx(ctx)
	if user == RootUser {
		return errors.New("etcdstore: auth: the root user is not a certificate's")
	}
	if _, err := a.s.UserAdd(ctx, &pb.AuthUserAddRequest{Name: user, Options: &authpb.UserAddOptions{NoPassword: true}}); err != nil &&
		!errors.Is(err, auth.ErrUserAlreadyExist) {
		return fmt.Errorf("etcdstore: auth: add user %s: %w", user, err)
	}
	if _, err := a.s.UserGrantRole(ctx, &pb.AuthUserGrantRoleRequest{User: user, Role: role}); err != nil {
		return fmt.Errorf("etcdstore: auth: grant %s role %s: %w", user, role, err)
	}
	return nil
}

// DeleteUser deletes user (a missing one is no error): its connections are refused from
// their next request on.
func (a *Auth) DeleteUser(ctx context.Context, user string) error {
	if user == RootUser {
		return errors.New("etcdstore: auth: the root user cannot be deleted")
	}
	if _, err := a.s.UserDelete(a.id.ctx(ctx), &pb.AuthUserDeleteRequest{Name: user}); err != nil && !errors.Is(err, auth.ErrUserNotFound) {
		return fmt.Errorf("etcdstore: auth: delete user %s: %w", user, err)
	}
	return nil
}

// Users returns the names of the users other than root (one request, however many).
func (a *Auth) Users(ctx context.Context) ([]string, error) {
	list, err := a.s.UserList(a.id.ctx(ctx), &pb.AuthUserListRequest{})
	if err != nil {
		return nil, fmt.Errorf("etcdstore: auth: list users: %w", err)
	}
	out := make([]string, 0, len(list.Users))
	for _, u := range list.Users {
		if u != RootUser {
			out = append(out, u)
		}
	}
	return out, nil
}

// HasUser reports whether user exists (one request).
func (a *Auth) HasUser(ctx context.Context, user string) (bool, error) {
	_, err := a.s.UserGet(a.id.ctx(ctx), &pb.AuthUserGetRequest{Name: user})
	switch {
	case errors.Is(err, auth.ErrUserNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("etcdstore: auth: read user %s: %w", user, err)
	}
	return true, nil
}

// Roles returns the roles of user (auth.ErrUserNotFound, wrapped, if there is none).
func (a *Auth) Roles(ctx context.Context, user string) ([]string, error) {
	got, err := a.s.UserGet(a.id.ctx(ctx), &pb.AuthUserGetRequest{Name: user})
	if err != nil {
		return nil, fmt.Errorf("etcdstore: auth: read user %s: %w", user, err)
	}
	return got.Roles, nil
}
