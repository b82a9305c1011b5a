package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
	"github.com/ray-go/ray/internal/base/identity"
	"github.com/ray-go/ray/internal/base/pb"
)

// A secure head's GCS authorizes by the certificate's role: a node's certificate from
// the join may not write revoked/ or submissions/, rayctl's client certificate (a day)
// may submit; revoking a certificate deletes its user, so its open connection is refused
// at its next request; users of expired certificates and of certificates recorded before
// users existed are put right; and a restart on the same directory keeps all of it.
func TestGCSAuthorization(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const ns = "ns1/"
	head := startAgent(t, Config{Head: true, SessionDir: dir, Namespace: ns})
	tok, err := head.Token()
	if err != nil {
		t.Fatal(err)
	}
	join := func(role, name string) *identity.Credentials {
		t.Helper()
		c, err := identity.Join(ctx, identity.JoinRequest{Address: head.JoinAddress(), Token: tok, Role: role, Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	open := func(c *identity.Credentials) (gcs.Store, error) {
		return etcdstore.New(ctx, etcdstore.Config{Endpoints: strings.Split(head.Address(), ","), Namespace: ns, TLS: c.ClientTLS(), DialTimeout: 5 * time.Second})
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
	node, kept, client := join(identity.RoleNode, "agent-a"), join(identity.RoleNode, "agent-b"), join(identity.RoleClient, "rayctl-h-1")
	if d := client.Leaf().NotAfter.Sub(client.Leaf().NotBefore); d > identity.ClientCertValidity+10*time.Minute {
		t.Errorf("a client certificate valid for %v", d)
	}
	ns1, cs := mustOpen(node), mustOpen(client)
	if _, err := ns1.Put(ctx, gcs.NodeKey("a"), []byte("x"), 0); err != nil {
		t.Fatalf("a node writes nodes/: %v", err)
	}
	for _, k := range []string{gcs.RevokedKey("1f"), gcs.SubmissionKey("s"), gcs.CertKey("1f")} {
		if _, err := ns1.Put(ctx, k, []byte("x"), 0); !errors.Is(err, gcs.ErrPermissionDenied) {
			t.Errorf("a node writes %s: %v", k, err)
		}
	}
	if _, err := cs.Put(ctx, gcs.SubmissionKey("s"), []byte("x"), 0); err != nil {
		t.Errorf("a client submits: %v", err)
	}

	// A certificate recorded before the head made users (its record has no user, and its
	// name is the common name), and one that has expired.
	ca := headCA(t, dir)
	legacy, _ := ca.Issue(identity.Request{Name: "old-agent", Role: identity.RoleNode})
	rec := `{"serial":"` + identity.SerialText(legacy.Leaf().SerialNumber) + `","name":"` + legacy.User() + `","role":"node","not_after":"2099-01-01T00:00:00Z"}`
	if _, err := head.Store().Put(ctx, gcs.CertKey(identity.SerialText(legacy.Leaf().SerialNumber)), []byte(rec), 0); err != nil {
		t.Fatal(err)
	}
	expired, _ := ca.Issue(identity.Request{Name: "short", Role: identity.RoleNode, Validity: time.Millisecond})
	if err := head.recordCert(ctx, expired.Leaf()); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 10*time.Second, "the short certificate to expire", func() bool { return time.Now().After(expired.Leaf().NotAfter) })
	if err := head.syncUsersOnce(ctx); err != nil {
		t.Fatal(err)
	}
	users, err := head.auth.Users(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(users, legacy.User()) || slices.Contains(users, expired.User()) || !slices.Contains(users, node.User()) {
		t.Errorf("users after a sync: %v", users)
	}
	legacyStore := mustOpen(legacy)
	if _, err := legacyStore.Put(ctx, gcs.NodeKey("old"), []byte("x"), 0); err != nil {
		t.Errorf("the certificate recorded before users existed: %v", err)
	}

	// Revocation: the head deletes the user, then cuts the GCS's client connections; the
	// client opened before is refused (permission denied before the cut, its handshakes
	// after it: its requests wait for a connection until their deadline), and the
	// unrevoked certificate's client reconnects by itself.
	b, _ := json.Marshal(gcs.RevokedRecord{Serial: identity.SerialText(node.Leaf().SerialNumber), RevokedAt: time.Now()})
	if _, err := head.Store().Put(ctx, gcs.RevokedKey(identity.SerialText(node.Leaf().SerialNumber)), b, 0); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 20*time.Second, "the revoked certificate's open client is refused", func() bool {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := ns1.Put(pctx, gcs.NodeKey("a"), []byte("y"), 0)
		return err != nil
	})
	// Its request may be in flight when the cut closes its connection (a direct Put is not
	// retried; the runtime's writes go through gcs.Writer, which retries): it must work
	// again by itself, on a connection of its own making.
	eventually.True(t, 10*time.Second, "an unrevoked certificate's client opened before the revocation works after it", func() bool {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := legacyStore.Put(pctx, gcs.NodeKey("old"), []byte("y"), 0)
		if err != nil {
			t.Logf("put after the cut: %v", err)
		}
		return err == nil
	})

	// A restart keeps auth on, the users, and the revocation.
	if err := head.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	head = startAgent(t, Config{Head: true, SessionDir: dir, Namespace: ns, ID: head.ID()})
	ks := mustOpen(kept)
	if _, err := ks.Put(ctx, gcs.NodeKey("b"), []byte("x"), 0); err != nil {
		t.Errorf("a node after the head's restart: %v", err)
	}
	if _, err := ks.Put(ctx, gcs.RevokedKey("1f"), []byte("x"), 0); !errors.Is(err, gcs.ErrPermissionDenied) {
		t.Errorf("a node writes revoked/ after the head's restart: %v", err)
	}
	if _, err := head.Store().Put(ctx, gcs.RevokedKey("2f"), []byte("x"), 0); err != nil {
		t.Errorf("the head writes revoked/ after its restart: %v", err)
	}
}

// The GCS stays bounded: the records and users of many certificates that expired go at
// a collection (a bounded number per round), back to the count before them, while a
// revoked certificate that has not expired keeps its records and stays refused; a revoked
// one that expired loses its revocation too.
func TestCertCollection(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	head := startAgent(t, Config{Head: true, SessionDir: dir})
	store := head.Store()
	count := func() (certs, revoked, users int) {
		t.Helper()
		c, err := store.Count(ctx, gcs.CertsPrefix)
		if err != nil {
			t.Fatal(err)
		}
		r, err := store.Count(ctx, gcs.RevokedPrefix)
		if err != nil {
			t.Fatal(err)
		}
		u, err := head.auth.Users(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return int(c), int(r), len(u)
	}
	revoke := func(c *identity.Credentials) {
		t.Helper()
		serial := identity.SerialText(c.Leaf().SerialNumber)
		b, _ := json.Marshal(gcs.RevokedRecord{Serial: serial, RevokedAt: time.Now()})
		if _, err := store.Put(ctx, gcs.RevokedKey(serial), b, 0); err != nil {
			t.Fatal(err)
		}
	}
	baseCerts, baseRevoked, baseUsers := count()
	tok, err := head.Token()
	if err != nil {
		t.Fatal(err)
	}
	// An agent that joined (a year's validity) and is revoked: it stays refused.
	kept, err := identity.Join(ctx, identity.JoinRequest{Address: head.JoinAddress(), Token: tok, Role: identity.RoleNode, Name: "agent-kept"})
	if err != nil {
		t.Fatal(err)
	}
	revoke(kept)

	// Many short-lived certificates, as drivers and rayctl commands leave them; one of
	// them revoked.
	ca := headCA(t, dir)
	const n = collectPerRound + 10
	var short *identity.Credentials
	for i := range n {
		c, err := ca.Issue(identity.Request{Name: fmt.Sprintf("driver-%d", i), Role: identity.RoleDriver, Validity: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := head.recordCert(ctx, c.Leaf()); err != nil {
			t.Fatal(err)
		}
		short = c
	}
	revoke(short)
	if c, r, u := count(); c != baseCerts+n+1 || r != baseRevoked+2 || u < baseUsers+n {
		t.Fatalf("after %d certificates: %d records, %d revoked, %d users (before: %d, %d, %d)", n, c, r, u, baseCerts, baseRevoked, baseUsers)
	}
	eventually.True(t, 10*time.Second, "the short certificates to expire", func() bool { return time.Now().After(short.Leaf().NotAfter) })

	// Within the retention nothing goes (`rayctl cert list` shows them EXPIRED).
	if d, err := head.collectCertsOnce(ctx, time.Now()); err != nil || d != 0 {
		t.Fatalf("a collection within the retention deleted %d (%v)", d, err)
	}
	later := time.Now().Add(DefaultCertRetention + identity.ClockSkew + time.Minute)
	d1, err := head.collectCertsOnce(ctx, later)
	if err != nil {
		t.Fatal(err)
	}
	if d1 != collectPerRound {
		t.Errorf("the first round deleted %d records, want the bound %d", d1, collectPerRound)
	}
	for round := 0; round < 5; round++ {
		d, err := head.collectCertsOnce(ctx, later)
		if err != nil {
			t.Fatal(err)
		}
		if d == 0 {
			break
		}
		d1 += d
	}
	if d1 != n+1 { // n certificates and one revocation
		t.Errorf("the collection deleted %d records in all, want %d", d1, n+1)
	}
	if err := head.syncUsersOnce(ctx); err != nil {
		t.Fatal(err)
	}
	c, r, u := count()
	if c != baseCerts+1 || r != baseRevoked+1 || u != baseUsers {
		t.Errorf("after the collection: %d records, %d revoked, %d users; want %d, %d, %d (the revoked, unexpired one kept, without a user)",
			c, r, u, baseCerts+1, baseRevoked+1, baseUsers)
	}
	if _, ok, err := store.Get(ctx, gcs.RevokedKey(identity.SerialText(kept.Leaf().SerialNumber))); err != nil || !ok {
		t.Errorf("the revocation of an unexpired certificate was collected (%v)", err)
	}

	// The revoked, unexpired certificate is still refused by the GCS.
	eventually.True(t, 10*time.Second, "the revoked certificate to be refused", func() bool {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		s, err := etcdstore.New(cctx, etcdstore.Config{Endpoints: strings.Split(head.Address(), ","), TLS: kept.ClientTLS(), DialTimeout: time.Second})
		if err != nil {
			return true
		}
		defer s.Close()
		_, err = s.Put(cctx, gcs.NodeKey("x"), []byte("x"), 0)
		return err != nil
	})
}

// A driver's certificate is short-lived and renewed at the join endpoint with itself: the
// renewal keeps its name and GCS user (its connections keep working, old and new), the
// user outlives the first certificate's expiry and collection while the renewed one is
// valid; revoking any certificate of the user revokes the renewed ones too, and refuses
// further renewals.
func TestDriverCertRenewal(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const validity = 16 * time.Second
	head := startAgent(t, Config{Head: true, SessionDir: dir, DriverCertValidity: validity, CertRetention: time.Second})
	tok, err := head.Token()
	if err != nil {
		t.Fatal(err)
	}
	creds, err := identity.Join(ctx, identity.JoinRequest{Address: head.JoinAddress(), Token: tok, Role: identity.RoleDriver, Name: "driver-r"})
	if err != nil {
		t.Fatal(err)
	}
	first := creds.Leaf()
	if d := time.Until(first.NotAfter); d > validity+time.Second {
		t.Fatalf("a driver certificate valid for %v more", d)
	}
	open := func() gcs.Store {
		t.Helper()
		s, err := etcdstore.New(ctx, etcdstore.Config{Endpoints: strings.Split(head.Address(), ","), TLS: creds.ClientTLS(), DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	before := open()
	time.Sleep(time.Until(identity.RenewAt(first))) // when a driver renews
	if err := identity.Renew(ctx, head.JoinAddress(), creds, 0); err != nil {
		t.Fatal(err)
	}
	renewed := creds.Leaf()
	if renewed.SerialNumber.Cmp(first.SerialNumber) == 0 || identity.GCSUser(renewed) != identity.GCSUser(first) ||
		identity.NameOf(renewed) != "driver-r" || !renewed.NotAfter.After(first.NotAfter) {
		t.Fatalf("renewed %s (%s, until %v) from %s (until %v)", identity.GCSUser(renewed), identity.NameOf(renewed), renewed.NotAfter, identity.GCSUser(first), first.NotAfter)
	}
	after := open() // a new handshake: the renewed certificate
	eventually.True(t, validity, "the first certificate to expire, and its retention to pass", func() bool {
		return time.Now().After(first.NotAfter.Add(time.Second))
	})
	if err := head.syncUsersOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := head.collectCertsOnce(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := head.Store().Get(ctx, gcs.CertKey(identity.SerialText(first.SerialNumber))); ok {
		t.Error("the first certificate's record was not collected")
	}
	for i, s := range []gcs.Store{before, after} {
		if _, err := s.Put(ctx, gcs.NodeKey("d"), []byte("x"), 0); err != nil {
			t.Errorf("connection %d of the renewed driver after its first certificate expired: %v", i, err)
		}
	}

	// Revoking the first serial (as `rayctl cert revoke` of what cert list showed
	// earlier) revokes the identity.
	serial := identity.SerialText(first.SerialNumber)
	b, _ := json.Marshal(gcs.RevokedRecord{Serial: serial, RevokedAt: time.Now()})
	if _, err := head.Store().Put(ctx, gcs.RevokedKey(serial), b, 0); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 10*time.Second, "the renewed certificate to be revoked too", func() bool {
		_, ok, _ := head.Store().Get(ctx, gcs.RevokedKey(identity.SerialText(renewed.SerialNumber)))
		return ok
	})
	if err := identity.Renew(ctx, head.JoinAddress(), creds, 0); !errors.Is(err, identity.ErrRenewRefused) {
		t.Errorf("a renewal after the revocation: %v", err)
	}
	eventually.True(t, 10*time.Second, "the revoked driver's connection to be refused", func() bool {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := after.Put(pctx, gcs.NodeKey("d"), []byte("y"), 0)
		return err != nil
	})
}

// mayRenew reads the revoked set and the revoked serials' records, not every record: it
// still refuses a certificate whose user has another certificate revoked (not the first
// serial, nor the one presented: only that certificate's record names the user), and
// renews a good driver's certificate among many other records.
func TestMayRenewReadsTheRevoked(t *testing.T) {
	ctx := context.Background()
	head := startAgent(t, Config{Head: true, SessionDir: t.TempDir()})
	tok, err := head.Token()
	if err != nil {
		t.Fatal(err)
	}
	join := func(name string) *identity.Credentials {
		t.Helper()
		c, err := identity.Join(ctx, identity.JoinRequest{Address: head.JoinAddress(), Token: tok, Role: identity.RoleDriver, Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for i := range 20 { // others' records
		join(fmt.Sprintf("driver-other-%d", i))
	}
	bad, good := join("driver-bad"), join("driver-good")
	if err := identity.Renew(ctx, head.JoinAddress(), bad, 0); err != nil {
		t.Fatal(err)
	}
	middle := bad.Leaf()
	if err := identity.Renew(ctx, head.JoinAddress(), bad, 0); err != nil {
		t.Fatal(err)
	}
	// An unrelated revocation, with no record, and one of the bad driver's middle
	// certificate.
	for _, serial := range []string{"abcdef", identity.SerialText(middle.SerialNumber)} {
		b, _ := json.Marshal(gcs.RevokedRecord{Serial: serial, RevokedAt: time.Now()})
		if _, err := head.Store().Put(ctx, gcs.RevokedKey(serial), b, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := head.mayRenew(bad.Leaf()); !errors.Is(err, identity.ErrRevoked) {
		t.Errorf("mayRenew of a certificate whose user has another one revoked: %v, want ErrRevoked", err)
	}
	if err := identity.Renew(ctx, head.JoinAddress(), bad, 0); !errors.Is(err, identity.ErrRenewRefused) {
		t.Errorf("renewing it: %v, want ErrRenewRefused", err)
	}
	before := good.Leaf()
	if err := head.mayRenew(before); err != nil {
		t.Errorf("mayRenew of a good certificate: %v", err)
	}
	if err := identity.Renew(ctx, head.JoinAddress(), good, 0); err != nil {
		t.Fatalf("renewing a good certificate: %v", err)
	}
	if good.Leaf().SerialNumber.Cmp(before.SerialNumber) == 0 || identity.GCSUser(good.Leaf()) != identity.GCSUser(before) {
		t.Errorf("the good certificate was not renewed: %s", identity.GCSUser(good.Leaf()))
	}
}

// A head restarted on its session directory revokes the certificates its earlier start
// issued itself (the head's, the GCS's administrator, and head-<id>-jobs, its processes'),
// and deletes their GCS users: copies of tls/ and tls-jobs/ taken before the restart no
// longer open the GCS, while the new ones do, and restarts do not pile up valid ones.
func TestHeadRestartRevokesItsReplacedCerts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const ns = "ns1/"
	head := startAgent(t, Config{Head: true, SessionDir: dir, Namespace: ns})
	load := func(f identity.Files) *identity.Credentials {
		t.Helper()
		c, err := identity.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	oldHead, oldJobs := load(identity.FilesIn(TLSDir(dir))), load(head.procCreds)
	if err := head.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // twice: the second start finds the first one's revoked already
		head = startAgent(t, Config{Head: true, SessionDir: dir, Namespace: ns, ID: head.ID()})
		if i == 0 {
			if err := head.Stop(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	newHead, newJobs := load(identity.FilesIn(TLSDir(dir))), load(head.procCreds)
	users, err := head.auth.Users(ctx)
	if err != nil {
		t.Fatal(err)
	}
	recs, revoked, err := head.readCertState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	valid := 0
	for _, rec := range recs {
		if (rec.Role == identity.RoleHead || isHeadJobsName(rec.Name)) && !revoked[rec.Serial] {
			valid++
		}
	}
	if valid != 2 {
		t.Errorf("%d unrevoked certificates of the head after 2 restarts, want 2 (its own and its processes')", valid)
	}
	for _, c := range []*identity.Credentials{oldHead, oldJobs} {
		serial := identity.SerialText(c.Leaf().SerialNumber)
		if !revoked[serial] {
			t.Errorf("certificate %s (%s) of the head's first start not revoked after its restart", serial, c.User())
		}
		if slices.Contains(users, c.User()) {
			t.Errorf("the GCS user %s of the head's first start is still there after its restart", c.User())
		}
	}
	for _, c := range []*identity.Credentials{newHead, newJobs} {
		if revoked[identity.SerialText(c.Leaf().SerialNumber)] || !slices.Contains(users, c.User()) {
			t.Errorf("the current certificate %s is revoked or has no user (users %v)", c.User(), users)
		}
		s, err := etcdstore.New(ctx, etcdstore.Config{Endpoints: strings.Split(head.Address(), ","), Namespace: ns, TLS: c.ClientTLS(), DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatalf("open the GCS as %s: %v", c.User(), err)
		}
		_, _, err = s.Get(ctx, gcs.NodeKey("x"))
		s.Close()
		if err != nil {
			t.Errorf("the current certificate %s reads the GCS: %v", c.User(), err)
		}
	}
	eventually.True(t, 20*time.Second, "the first start's certificates are refused", func() bool {
		for _, c := range []*identity.Credentials{oldHead, oldJobs} {
			s, err := etcdstore.New(ctx, etcdstore.Config{Endpoints: strings.Split(head.Address(), ","), Namespace: ns, TLS: c.ClientTLS(), DialTimeout: 2 * time.Second})
			if err != nil {
				continue
			}
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, _, err = s.Get(pctx, gcs.NodeKey("x"))
			cancel()
			s.Close()
			if err == nil {
				t.Logf("%s still reads the GCS", c.User())
				return false
			}
		}
		return true
	})
}

// A submitted driver gets a certificate of its own (a driver's, short-lived, renewed at
// the join endpoint the head names), not the head processes' shared one of a year, and
// the head forgets it once the driver has exited: a copy taken during the job opens
// nothing after it.
func TestSubmittedDriverCertEndsWithIt(t *testing.T) {
	ctx := context.Background()
	const ns = "ns1/"
	head := startAgent(t, Config{Head: true, Namespace: ns})
	exfil := t.TempDir()
	put(t, head.Store(), gcs.SubmissionKey("sc"), &pb.Submission{SubmissionId: "sc", Argv: []string{"/bin/sh", "-c",
		`cp "$RAY_GO_GCS_CA" "$RAY_GO_GCS_CERT" "$RAY_GO_GCS_KEY" ` + exfil + `/ && echo "$RAY_GO_JOIN_ADDRESS" > ` + exfil + `/join`}}, 0)
	eventually.True(t, 20*time.Second, "the submission SUCCEEDED", func() bool {
		sub, _ := get(t, head.Store(), gcs.SubmissionKey("sc"), &pb.Submission{})
		return sub.GetState() == pb.JobInfo_SUCCEEDED
	})
	c, err := identity.Load(identity.FilesIn(exfil))
	if err != nil {
		t.Fatal(err)
	}
	if jobs, _ := identity.Load(head.procCreds); jobs.User() == c.User() {
		t.Errorf("the submitted driver got the head processes' certificate %s", c.User())
	}
	if d := c.Leaf().NotAfter.Sub(c.Leaf().NotBefore); c.Role() != identity.RoleDriver || d > identity.DriverCertValidity+10*time.Minute {
		t.Errorf("the submitted driver's certificate: role %s, valid for %v", c.Role(), d)
	}
	if b, _ := os.ReadFile(filepath.Join(exfil, "join")); strings.TrimSpace(string(b)) != head.JoinAddress() {
		t.Errorf("the driver was told the join endpoint %q, want %q", b, head.JoinAddress())
	}
	users, err := head.auth.Users(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(users, c.User()) {
		t.Errorf("the GCS user %s of the ended submission's driver is still there", c.User())
	}
	if _, ok, _ := head.Store().Get(ctx, gcs.CertKey(identity.SerialText(c.Leaf().SerialNumber))); ok {
		t.Errorf("the record of the ended submission's driver certificate is still there")
	}
	s, err := etcdstore.New(ctx, etcdstore.Config{Endpoints: strings.Split(head.Address(), ","), Namespace: ns, TLS: c.ClientTLS(), DialTimeout: 5 * time.Second})
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, _, err = s.Get(pctx, gcs.NodeKey("x"))
		cancel()
		s.Close()
		if err == nil {
			t.Errorf("a copy of the ended submission's driver certificate reads the GCS")
		}
	}
}
