package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/etcdstore"
	"github.com/ray-go/ray/internal/base/identity"
)

// headStore opens the GCS of the cluster in sess with the head agent's own credentials
// (the only agent of the session).
func headStore(t *testing.T, sess, addr string) gcs.Store {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(sess, "agent-*", "tls"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("the head agent's credentials: %v, %v", dirs, err)
	}
	creds, err := identity.Load(identity.FilesIn(dirs[0]))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := etcdstore.New(ctx, etcdstore.Config{Endpoints: []string{addr}, TLS: creds.ClientTLS(), DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestGoneRecordsSwept: jobs that end (three return holding task results and a put, a
// fourth driver is killed holding them) leave no lineage pages and no object table entries
// in the GCS once the head's grace for gone processes (here 5 s) has passed: the lineage
// of a process stays after it went only as long as its borrowers may need it to adopt its
// objects.
func TestGoneRecordsSwept(t *testing.T) {
	t.Parallel() // mostly idle: it waits for the grace
	port, addr, sess := newSession(t)
	out, errOut, code := run(t, 90*time.Second, nil, rayctl, "start", "--head", "--port", strconv.Itoa(port), "--session-dir", sess,
		"--num-cpus", "2", "--object-store-memory", "256MiB", "--sweep-every", "300ms", "--sweep-grace", "5s")
	if code != 0 {
		t.Fatalf("rayctl start --head: exit %d\n%s\n%s", code, out, errOut)
	}
	env := append(os.Environ(), "RAY_ADDRESS="+addr, "RAY_GO_TOKEN="+printedToken(t, out))
	store := headStore(t, sess, addr)
	count := func() (lin, objs int64) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		if lin, err = store.Count(ctx, gcs.LineagePrefix); err != nil {
			t.Fatal(err)
		}
		if objs, err = store.Count(ctx, gcs.ObjectsPrefix); err != nil {
			t.Fatal(err)
		}
		return lin, objs
	}
	for i := range 3 {
		stdout, stderr, code := run(t, 2*time.Minute, env, driver, "-check", "gcsrecords")
		if code != 0 || !strings.HasPrefix(stdout, "records ready") {
			t.Fatalf("job %d: exit %d\n%s\n%s", i, code, stdout, tail(stderr))
		}
		lin, objs := count()
		t.Logf("after job %d ended: %d lineage pages, %d object table entries", i+1, lin, objs)
	}
	held := startReady(t, driver, "gcsrecords", append(env, "E2E_HOLD=1"), "records ready")
	// Lineage goes to the GCS once a task has lived some tens of milliseconds, in pages
	// sealed a little later: wait for it.
	var lin, objs int64
	deadline := time.Now().Add(time.Minute)
	for lin, objs = count(); (lin == 0 || objs == 0) && time.Now().Before(deadline); lin, objs = count() {
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("while a fourth job holds its objects: %d lineage pages, %d object table entries", lin, objs)
	if lin == 0 || objs == 0 {
		held.Process.Kill()
		held.Wait()
		t.Fatalf("a job that holds task results and a put has %d lineage pages and %d object table entries in the GCS after a minute, want some of each", lin, objs)
	}
	if err := held.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = held.Wait()
	eventually.True(t, 2*time.Minute, "the lineage pages and object table entries of the ended jobs to be deleted", func() bool {
		lin, objs = count()
		return lin == 0 && objs == 0
	})
	t.Logf("after the grace: %d lineage pages, %d object table entries", lin, objs)
}
