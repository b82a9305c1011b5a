package testcluster_test

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
	"github.com/ray-go/ray/internal/base/identity"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/objects/transfer"
)

// TestSecureByDefault: the test cluster is secured like a real one. Its GCS answers only
// a client with a certificate of the cluster's CA, and a node's object data stream serves
// only a peer of that CA; plain text and a certificate of another CA are refused.
func TestSecureByDefault(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if len(cluster.GCSEndpoints) == 0 || !strings.HasPrefix(cluster.GCSEndpoints[0], "https://") {
		t.Fatalf("GCS endpoints %v: want https", cluster.GCSEndpoints)
	}
	strangerCA, err := identity.NewCA("stranger", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	issue := func(ca *identity.CA, role string) *identity.Credentials {
		c, err := ca.Issue(identity.Request{Name: "test-" + role, Role: role})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	member, stranger := issue(cluster.CA, identity.RoleClient), issue(strangerCA, identity.RoleClient)
	// A stranger that trusts any server: only the GCS's check of its certificate stops it.
	trustsAnything := stranger.ClientTLS()
	trustsAnything.InsecureSkipVerify = true

	readGCS := func(endpoints []string, tlsCfg *tls.Config) error {
		s, err := etcdstore.New(ctx, etcdstore.Config{Endpoints: endpoints, DialTimeout: 3 * time.Second, TLS: tlsCfg})
		if err != nil {
			return err
		}
		defer s.Close()
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, _, err = s.Get(rctx, gcs.ActorKey("none"))
		return err
	}
	plain := make([]string, len(cluster.GCSEndpoints))
	for i, ep := range cluster.GCSEndpoints {
		plain[i] = "http://" + strings.TrimPrefix(ep, "https://")
	}
	if err := readGCS(cluster.GCSEndpoints, member.ClientTLS()); err != nil {
		t.Fatalf("a client with a certificate of the cluster's CA cannot read the GCS: %v", err)
	}
	for name, try := range map[string]func() error{
		"plain text":                  func() error { return readGCS(plain, nil) },
		"a certificate of another CA": func() error { return readGCS(cluster.GCSEndpoints, trustsAnything) },
	} {
		if err := try(); err == nil {
			t.Errorf("GCS: %s was served", name)
		} else {
			t.Logf("GCS: %s refused: %v", name, err)
		}
	}

	var addr string // a running node's (earlier tests stop nodes)
	for i, n := range cluster.Nodes {
		if !cluster.Stopped(i) {
			addr = n.DataAddress()
			break
		}
	}
	if addr == "" {
		t.Fatal("the node has no data address")
	}
	id := ids.PutID(ids.NewRootTaskID(), 1) // not in the store: a member is told so
	peer := issue(cluster.CA, identity.RoleNode).PeerClientTLS()
	if _, err := transfer.Fetch(ctx, addr, id, transfer.FetchOptions{Timeout: 5 * time.Second, TLS: peer}); !errors.Is(err, transfer.ErrNotFound) {
		t.Fatalf("a peer of the cluster: %v, want ErrNotFound from the node", err)
	}
	transfer.CloseIdleConnections() // the pool is keyed by address: the others must connect anew
	strangerPeer := issue(strangerCA, identity.RoleNode).PeerClientTLS()
	strangerPeer.VerifyConnection = nil
	strangerPeer.InsecureSkipVerify = true
	for name, opt := range map[string]transfer.FetchOptions{
		"plain text":                  {Timeout: 5 * time.Second},
		"a certificate of another CA": {Timeout: 5 * time.Second, TLS: strangerPeer},
	} {
		_, err := transfer.Fetch(ctx, addr, id, opt)
		transfer.CloseIdleConnections()
		if err == nil || errors.Is(err, transfer.ErrNotFound) {
			t.Errorf("data stream: %s was answered (%v)", name, err)
		} else {
			t.Logf("data stream: %s refused: %v", name, err)
		}
	}
	transfer.CloseIdleConnections()
}
