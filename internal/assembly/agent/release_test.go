package agent

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/identity"
	"github.com/ray-go/ray/internal/base/pb"
)

// A driver's certificate records (certs/, every renewal's) and its GCS user go when the
// driver ends, not at the certificate's expiry plus retention: at once when the driver
// gives the certificate up (identity.Release, what ray.Shutdown does), and when the head
// fails the job of a driver that is gone (its job record names the user). A live driver's
// certificate is kept, and the certificate the head's own processes share is never
// released.
func TestDriverCertReleasedAtItsEnd(t *testing.T) {
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
	// records returns the serials recorded for user; exists whether the GCS has the user.
	records := func(user string) []string {
		t.Helper()
		kvs, _, err := head.Store().List(ctx, gcs.CertsPrefix)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, kv := range kvs {
			if rec, err := gcs.DecodeCertRecord(kv.Value); err == nil && userOf(rec) == user {
				out = append(out, rec.Serial)
			}
		}
		return out
	}
	exists := func(user string) bool {
		t.Helper()
		ok, err := head.auth.HasUser(ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	ended, live, dead := join("driver-ended"), join("driver-live"), join("driver-dead")
	if err := identity.Renew(ctx, head.JoinAddress(), ended, 0); err != nil { // two records, one user
		t.Fatal(err)
	}
	if n := len(records(ended.User())); n != 2 || !exists(ended.User()) {
		t.Fatalf("the renewed driver: %d records, user %v", n, exists(ended.User()))
	}

	// A driver that ended gives its certificate up.
	if err := identity.Release(ctx, head.JoinAddress(), ended, 0); err != nil {
		t.Fatalf("release: %v", err)
	}
	if got := records(ended.User()); len(got) != 0 || exists(ended.User()) {
		t.Errorf("after the release: records %v, user %v; want none", got, exists(ended.User()))
	}

	// The head's processes' certificate is shared: never released.
	jobs, err := identity.Load(identity.FilesIn(filepath.Join(head.cfg.SessionDir, procTLSDirName)))
	if err != nil {
		t.Fatal(err)
	}
	if err := identity.Release(ctx, head.JoinAddress(), jobs, 0); err == nil {
		t.Error("the head's processes' certificate was released")
	}
	if len(records(jobs.User())) == 0 || !exists(jobs.User()) {
		t.Error("the head's processes' certificate lost its records or user")
	}

	// A driver that is gone: its job, which names its certificate's user, has no alive
	// key; the head fails it (after orphanGrace) and forgets the certificate.
	info := &pb.JobInfo{JobId: "jdead", State: pb.JobInfo_RUNNING, DriverNode: "n-dead", DriverHost: "h", DriverPid: 7,
		StartUnixMs: time.Now().UnixMilli(), DriverUser: dead.User()}
	b, _ := proto.Marshal(info)
	if _, err := head.Store().Put(ctx, gcs.JobKey("jdead"), b, 0); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, orphanGrace+30*time.Second, "the dead driver's certificate records and user to go", func() bool {
		return len(records(dead.User())) == 0 && !exists(dead.User())
	})
	kv, _, err := head.Store().Get(ctx, gcs.JobKey("jdead"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeJob("jdead", kv.Value); err != nil || got.GetState() != pb.JobInfo_FAILED {
		t.Errorf("the dead driver's job: %v %v", got.GetState(), err)
	}

	// The live driver kept its certificate throughout.
	if len(records(live.User())) != 1 || !exists(live.User()) {
		t.Errorf("the live driver's certificate: records %v, user %v", records(live.User()), exists(live.User()))
	}
	if err := identity.Renew(ctx, head.JoinAddress(), live, 0); err != nil {
		t.Errorf("the live driver renews: %v", err)
	}
}
