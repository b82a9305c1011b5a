package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
	"github.com/ray-go/ray/internal/base/identity"
)

// gcsRoles is what a head defines: every ray role with its permissions in namespace.
func gcsRoles(namespace string) map[string][]identity.KeyRange {
	roles := map[string][]identity.KeyRange{}
	for _, r := range identity.GCSRoles {
		roles[r] = identity.GCSPermissions(r, namespace)
	}
	return roles
}

// With auth on, each certificate does what its role may and is refused the rest with
// gcs.ErrPermissionDenied; a certificate without a user is refused at New; the in-process
// client is root; deleting a user cuts a connection opened before at its next request;
// and all of it survives a restart on the same directory.
func TestAuth(t *testing.T) {
	ctx := context.Background()
	const ns = "cluster-a/"
	ca, err := identity.NewCA("gcs auth test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := ca.Issue(identity.Request{Name: "gcs", Role: identity.RoleHead})
	files, err := srv.Save(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := etcdstore.EmbedConfig{Dir: dir, TLS: files, Namespace: ns, Auth: true}
	e, err := etcdstore.StartEmbedded(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { e.Close() }()
	a, err := e.Auth()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Enable(ctx, gcsRoles(ns)); err != nil {
		t.Fatal(err)
	}
	if err := a.Enable(ctx, gcsRoles(ns)); err != nil { // idempotent
		t.Fatalf("enable again: %v", err)
	}
	if !a.Enabled() {
		t.Fatal("auth is not on")
	}
	user := func(role string) *identity.Credentials {
		t.Helper()
		c, err := ca.Issue(identity.Request{Name: "t-" + role, Role: role})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.PutUser(ctx, c.User(), identity.GCSRoleOf(role)); err != nil {
			t.Fatal(err)
		}
		return c
	}
	open := func(c *identity.Credentials) (gcs.Store, error) {
		return etcdstore.New(ctx, etcdstore.Config{Endpoints: e.Endpoints(), TLS: c.ClientTLS(), Namespace: ns, DialTimeout: 5 * time.Second})
	}
	mustOpen := func(c *identity.Credentials) gcs.Store {
		t.Helper()
		s, err := open(c)
		if err != nil {
			t.Fatalf("open as %s: %v", c.User(), err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}

	in := e.Client() // root: everything
	for _, k := range []string{gcs.RevokedKey("1f"), gcs.SubmissionKey("s0"), gcs.JobKey("j0"), gcs.NodeKey("n0")} {
		if _, err := in.Put(ctx, k, []byte("v"), 0); err != nil {
			t.Fatalf("the in-process client: put %s: %v", k, err)
		}
	}

	node, driver, client := user(identity.RoleNode), user(identity.RoleDriver), user(identity.RoleClient)
	for _, c := range []struct {
		creds *identity.Credentials
		key   string
		write bool
	}{
		{node, gcs.NodeKey("n1"), true},
		{node, gcs.StateRequestKey("q1"), true},
		{node, gcs.RevokedKey("2f"), false},
		{node, gcs.CertKey("2f"), false},
		{node, gcs.SubmissionKey("s1"), false},
		{node, gcs.JobKey("j1"), false},
		{driver, gcs.JobKey("j1"), true},
		{driver, gcs.SubmissionKey("s1"), false},
		{driver, gcs.RevokedKey("2f"), false},
		{client, gcs.SubmissionKey("s1"), true},
		{client, gcs.NodeKey("n1"), false},
		{client, gcs.RevokedKey("2f"), false},
	} {
		s := mustOpen(c.creds)
		_, err := s.Put(ctx, c.key, []byte("x"), 0)
		switch {
		case c.write && err != nil:
			t.Errorf("%s may write %s: %v", c.creds.User(), c.key, err)
		case !c.write && !errors.Is(err, gcs.ErrPermissionDenied):
			t.Errorf("%s writes %s: %v, want ErrPermissionDenied", c.creds.User(), c.key, err)
		case !c.write:
			_, err := s.Delete(ctx, c.key)
			if !errors.Is(err, gcs.ErrPermissionDenied) {
				t.Errorf("%s deletes %s: %v, want ErrPermissionDenied", c.creds.User(), c.key, err)
			}
			// It may read what it may not write.
			if _, _, err := s.Get(ctx, c.key); err != nil {
				t.Errorf("%s reads %s: %v", c.creds.User(), c.key, err)
			}
		}
	}
	// What a node does besides puts: lists, transactions, leases, watches.
	s := mustOpen(node)
	if _, _, err := s.List(ctx, gcs.RevokedPrefix); err != nil {
		t.Errorf("a node lists revoked/: %v", err)
	}
	lease, err := s.Grant(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, gcs.AgentAliveKey("a1"), []byte("h"), lease); err != nil {
		t.Fatal(err)
	}
	if _, err := s.KeepAlive(ctx, lease); err != nil {
		t.Fatalf("a node keeps its lease alive: %v", err)
	}
	if ok, _, err := s.Txn(ctx, []gcs.Cmp{{Key: gcs.NodeKey("n1"), ModRev: 0}}, []gcs.Op{{Kind: gcs.OpPut, Key: gcs.NodeKey("n2"), Value: []byte("x")}, {Kind: gcs.OpDeletePrefix, Key: gcs.LoadPrefix}}); err != nil || ok {
		t.Errorf("a node's txn: %v %v", ok, err)
	}
	if _, _, err := s.Txn(ctx, nil, []gcs.Op{{Kind: gcs.OpPut, Key: gcs.NodeKey("n3"), Value: []byte("x")}, {Kind: gcs.OpDelete, Key: gcs.RevokedKey("1f")}}); !errors.Is(err, gcs.ErrPermissionDenied) {
		t.Errorf("a node's txn that deletes revoked/: %v, want ErrPermissionDenied", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	w := s.Watch(wctx, gcs.RevokedPrefix, 0)
	if _, err := in.Put(ctx, gcs.RevokedKey("3f"), []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if resp := <-w; resp.Err != nil || len(resp.Events) != 1 {
		t.Errorf("a node's watch of revoked/: %+v", resp)
	}
	cancel()

	// Outside the namespace: nothing.
	outside, err := etcdstore.New(ctx, etcdstore.Config{Endpoints: e.Endpoints(), TLS: node.ClientTLS(), Namespace: "cluster-b/", DialTimeout: 5 * time.Second})
	if !errors.Is(err, etcdstore.ErrNoAccess) {
		if outside != nil {
			outside.Close()
		}
		t.Errorf("a node in another namespace: %v, want ErrNoAccess", err)
	}
	// A certificate of the CA the head made no user for: refused at New.
	stranger, _ := ca.Issue(identity.Request{Name: "stranger", Role: identity.RoleNode})
	if st, err := open(stranger); !errors.Is(err, etcdstore.ErrNoAccess) || !errors.Is(err, gcs.ErrPermissionDenied) {
		if st != nil {
			st.Close()
		}
		t.Errorf("a certificate without a user: %v, want ErrNoAccess", err)
	} else if n := strings.Count(err.Error(), "etcdstore: "); n != 1 {
		// Before, "etcdstore: etcd at X: etcdstore: the GCS grants this certificate no access".
		t.Errorf("a certificate without a user: the error says \"etcdstore: \" %d times: %v", n, err)
	} else {
		t.Logf("no user: %v", err)
	}

	// Revocation: the user goes, and a connection opened before fails its next request.
	gone := user(identity.RoleNode)
	open1 := mustOpen(gone)
	if _, err := open1.Put(ctx, gcs.NodeKey("gone"), []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	goneLease, err := open1.Grant(ctx, 30*time.Second)
	if err == nil {
		_, err = open1.Put(ctx, gcs.AgentAliveKey("gone"), []byte("x"), goneLease)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteUser(ctx, gone.User()); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteUser(ctx, gone.User()); err != nil {
		t.Fatalf("delete a missing user: %v", err)
	}
	if _, err := open1.Put(ctx, gcs.NodeKey("gone"), []byte("y"), 0); !errors.Is(err, gcs.ErrPermissionDenied) {
		t.Errorf("a put on a connection of a deleted user: %v, want ErrPermissionDenied", err)
	} else {
		t.Logf("put after the user's deletion: %v", err)
	}
	if _, _, err := open1.Get(ctx, gcs.NodeKey("gone")); !errors.Is(err, gcs.ErrPermissionDenied) {
		t.Errorf("a get on a connection of a deleted user: %v, want ErrPermissionDenied", err)
	}
	// Its lease is not renewed any more: its keys go when the lease expires. (etcd grants
	// a new lease to any user, deleted or not; a lease without keys is harmless.)
	if _, err := open1.KeepAlive(ctx, goneLease); !errors.Is(err, gcs.ErrPermissionDenied) {
		t.Errorf("a lease renewal on a connection of a deleted user: %v, want ErrPermissionDenied", err)
	}
	users, err := a.Users(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(users, gone.User()) || !slices.Contains(users, node.User()) || slices.Contains(users, etcdstore.RootUser) {
		t.Errorf("users: %v", users)
	}
	if roles, err := a.Roles(ctx, node.User()); err != nil || !slices.Equal(roles, []string{identity.GCSRoleNode}) {
		t.Errorf("the roles of %s: %v %v", node.User(), roles, err)
	}

	// A restart on the same directory keeps auth, its roles and users.
	e.Close()
	if e, err = etcdstore.StartEmbedded(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if a, err = e.Auth(); err != nil || !a.Enabled() {
		t.Fatalf("after a restart: %v, enabled %v", err, a != nil && a.Enabled())
	}
	if _, err := e.Client().Put(ctx, gcs.RevokedKey("4f"), []byte("v"), 0); err != nil {
		t.Fatalf("the in-process client after a restart: %v", err)
	}
	s2, err := open(node)
	if err != nil {
		t.Fatalf("a node after a restart: %v", err)
	}
	defer s2.Close()
	if _, err := s2.Put(ctx, gcs.RevokedKey("5f"), []byte("x"), 0); !errors.Is(err, gcs.ErrPermissionDenied) {
		t.Errorf("a node writes revoked/ after a restart: %v", err)
	}
	if _, err := open(gone); !errors.Is(err, etcdstore.ErrNoAccess) {
		t.Errorf("a deleted user after a restart: %v, want ErrNoAccess", err)
	}
}

// Auth needs TLS; a server without it has no Auth.
func TestAuthConfig(t *testing.T) {
	if err := (etcdstore.EmbedConfig{Dir: "x", Auth: true}).Validate(); err == nil {
		t.Error("Auth without TLS was accepted")
	}
	e, err := etcdstore.StartEmbedded(context.Background(), etcdstore.EmbedConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Auth(); !errors.Is(err, etcdstore.ErrNoAuth) {
		t.Errorf("Auth of a server without it: %v", err)
	}
}

// BenchmarkAuthPut measures what etcd's authorization costs a client of the GCS: puts and
// gets of a node's certificate over TLS (gRPC, as agents and drivers talk to the head),
// with auth off and on (the user's role checked on every request), and on with a CRL (the
// client port is then a relay, frontdoor.go), sequential and from 16
// goroutines; fsync off so that the request path is what is measured.
//
//	go test -run '^$' -bench BenchmarkAuthPut -benchtime 3000x -count 5 ./internal/base/gcs/etcdstore
func BenchmarkAuthPut(b *testing.B) {
	ctx := context.Background()
	for _, v := range []struct {
		name    string
		on, crl bool
	}{{"auth=off", false, false}, {"auth=on", true, false}, {"auth=on,crl=on", true, true}} {
		on := v.on
		b.Run(v.name, func(b *testing.B) {
			ca, err := identity.NewCA("bench", time.Now())
			if err != nil {
				b.Fatal(err)
			}
			srv, _ := ca.Issue(identity.Request{Name: "gcs", Role: identity.RoleHead})
			files, err := srv.Save(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			cfg := etcdstore.EmbedConfig{Dir: b.TempDir(), TLS: files, Auth: true, UnsafeNoFsync: true}
			if v.crl { // revocation: the client port is the front door, a relay (frontdoor.go)
				cfg.CRL = filepath.Join(b.TempDir(), "ca.crl")
				crl, err := ca.CRL(nil, 1, time.Now())
				if err == nil {
					err = identity.WriteFile(cfg.CRL, crl)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			e, err := etcdstore.StartEmbedded(ctx, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			node, _ := ca.Issue(identity.Request{Name: "bench-node", Role: identity.RoleNode})
			if on {
				a, _ := e.Auth()
				if err := a.Enable(ctx, gcsRoles("")); err != nil {
					b.Fatal(err)
				}
				if err := a.PutUser(ctx, node.User(), identity.GCSRoleNode); err != nil {
					b.Fatal(err)
				}
			}
			s, err := etcdstore.New(ctx, etcdstore.Config{Endpoints: e.Endpoints(), TLS: node.ClientTLS()})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			val := make([]byte, 256)
			b.Run("put", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, err := s.Put(ctx, gcs.NodeKey("n"), val, 0); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("get", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, _, err := s.Get(ctx, gcs.NodeKey("n")); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("txn100", func(b *testing.B) { // a group commit: 100 puts in one transaction
				ops := make([]gcs.Op, 100)
				for i := range ops {
					ops[i] = gcs.Op{Kind: gcs.OpPut, Key: gcs.LineagePageKey(fmt.Sprintf("n/%04d", i)), Value: val}
				}
				for i := 0; i < b.N; i++ {
					if _, _, err := s.Txn(ctx, nil, ops); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("put16", func(b *testing.B) {
				b.SetParallelism(8) // 16 goroutines on 2 cores
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := s.Put(ctx, gcs.NodeKey("p"), val, 0); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		})
	}
}

// Watches opened while users are added and deleted (a join, a driver's certificate
// released) are created, by the in-process client and by a certificate's client alike,
// and see the events after them: etcd refuses a watch whose creation raced an auth change
// ("revision of auth store is old"), and its client does not retry that for a watch (CI
// saw `rayctl job submit` fail to follow a job's log for it).
func TestWatchSurvivesAuthChanges(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ns = "cluster-w/"
	ca, err := identity.NewCA("gcs watch test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := ca.Issue(identity.Request{Name: "gcs", Role: identity.RoleHead})
	files, err := srv.Save(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e, err := etcdstore.StartEmbedded(ctx, etcdstore.EmbedConfig{Dir: t.TempDir(), TLS: files, Namespace: ns, Auth: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	a, err := e.Auth()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Enable(ctx, gcsRoles(ns)); err != nil {
		t.Fatal(err)
	}
	node, err := ca.Issue(identity.Request{Name: "w-node", Role: identity.RoleNode})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.PutUser(ctx, node.User(), identity.GCSRoleOf(identity.RoleNode)); err != nil {
		t.Fatal(err)
	}
	remote, err := etcdstore.New(ctx, etcdstore.Config{Endpoints: e.Endpoints(), TLS: node.ClientTLS(), Namespace: ns, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	in := e.Client()

	churnCtx, stopChurn := context.WithCancel(ctx)
	churned := make(chan int)
	go func() { // what joins and released driver certificates do to the auth store
		n := 0
		for ; churnCtx.Err() == nil; n++ {
			u := fmt.Sprintf("churn-%d", n%8)
			if err := a.PutUser(churnCtx, u, identity.GCSRoleOf(identity.RoleDriver)); err == nil {
				_ = a.DeleteUser(churnCtx, u)
			}
		}
		churned <- n
	}()
	for i := 0; i < 150; i++ {
		for name, s := range map[string]gcs.Store{"in-process": in, "certificate": remote} {
			key := gcs.NodeKey(fmt.Sprintf("w%d", i))
			rev, err := in.Revision(ctx)
			if err != nil {
				t.Fatal(err)
			}
			wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
			wch := s.Watch(wctx, key, rev+1)
			if _, err := in.Put(ctx, key, []byte(name), 0); err != nil {
				t.Fatal(err)
			}
			select {
			case wr, ok := <-wch:
				switch {
				case !ok:
					t.Fatalf("%s watch %d closed without an event", name, i)
				case wr.Err != nil:
					t.Fatalf("%s watch %d: %v", name, i, wr.Err)
				case len(wr.Events) == 0 || string(wr.Events[0].KV.Value) != name:
					t.Fatalf("%s watch %d: events %+v, want the put of %q", name, i, wr.Events, name)
				}
			case <-wctx.Done():
				t.Fatalf("%s watch %d: no event in 20 s", name, i)
			}
			wcancel()
		}
	}
	stopChurn()
	t.Logf("%d user changes during the watches", <-churned)
}
