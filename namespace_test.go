package ray

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ray-go/ray/internal/base/workerenv"
)

var nsOfTask = Task0("test.nsOfTask", func(ctx context.Context) (string, error) {
	rc, err := GetRuntimeContext(ctx)
	return rc.Namespace, err
})

// TestJobNamespace: a job given no namespace gets an anonymous one of its own (this
// package's runtime), reported by GetRuntimeContext to the driver and its tasks alike; an
// actor given a Name and no Namespace is named there, so GetActor finds it by name alone,
// with "" and with the job's namespace, and not in another namespace. Before, it was named
// in the one namespace "" every job shared.
func TestJobNamespace(t *testing.T) {
	ctx := timeout(t)
	rc, err := GetRuntimeContext(ctx)
	if err != nil || rc.Namespace == "" {
		t.Fatalf("the driver's namespace %q, %v: want an anonymous one", rc.Namespace, err)
	}
	if got := mustGet(t, ctx, nsOfTask.Remote(ctx)); got != rc.Namespace {
		t.Fatalf("a task's namespace %q, want its driver's %q", got, rc.Namespace)
	}
	name := uniqueName(t)
	h := accountClass.Remote(ctx, V("ns"), Name(name))
	if h.Err() != nil {
		t.Fatal(h.Err())
	}
	for _, ns := range [][]string{nil, {""}, {rc.Namespace}} {
		got, err := GetActor(ctx, accountClass, name, ns...)
		if err != nil || got.ID() != h.ID() {
			t.Fatalf("GetActor(%q, namespace %q) = %v, %v; want %s", name, ns, got, err, h.ID())
		}
	}
	// Not found by name alone: the error names the job's namespace and how to reach another.
	if _, err := GetActor(ctx, accountClass, name+"-none"); !errors.Is(err, ErrNoSuchActor) ||
		!strings.Contains(err.Error(), rc.Namespace) || !strings.Contains(err.Error(), "WithNamespace") {
		t.Fatalf("GetActor of a name no actor has: %v, want ErrNoSuchActor naming the job's namespace and WithNamespace", err)
	}
	if _, err := GetActor(ctx, accountClass, name, "elsewhere"); !errors.Is(err, ErrNoSuchActor) {
		t.Fatalf("GetActor in another namespace: %v, want ErrNoSuchActor", err)
	}
	// The same name in another namespace is another actor.
	other := accountClass.Remote(ctx, V("ns2"), Name(name), Namespace("elsewhere"))
	if other.Err() != nil || other.ID() == h.ID() {
		t.Fatalf("the name in another namespace: %v", other.Err())
	}
	for _, a := range []ActorHandle[account]{h, other} {
		if err := Kill(ctx, a, true); err != nil {
			t.Fatal(err)
		}
	}
}

// TestInitNamespace: WithNamespace sets a job's namespace, RAY_GO_JOB_NAMESPACE does when
// the program gives none, and each job given neither gets a new anonymous one.
func TestInitNamespace(t *testing.T) {
	nsOf := func(opts ...InitOption) string {
		t.Helper()
		ctx, err := Init(context.Background(), append([]InitOption{WithNumCPUs(1), WithObjectStoreMemory(64 << 20)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := Shutdown(ctx); err != nil {
				t.Error(err)
			}
		}()
		rc, err := GetRuntimeContext(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return rc.Namespace
	}
	shared, err := GetRuntimeContext(timeout(t))
	if err != nil {
		t.Fatal(err)
	}
	if ns := nsOf(); ns == "" || ns == shared.Namespace {
		t.Fatalf("a second job given no namespace is in %q (the first is in %q): want an anonymous one of its own", ns, shared.Namespace)
	}
	if ns := nsOf(WithNamespace("opt")); ns != "opt" {
		t.Fatalf("WithNamespace(opt): namespace %q", ns)
	}
	t.Setenv(workerenv.JobNamespace, "from-env")
	if ns := nsOf(); ns != "from-env" {
		t.Fatalf("%s=from-env: namespace %q", workerenv.JobNamespace, ns)
	}
	if ns := nsOf(WithNamespace("opt")); ns != "opt" {
		t.Fatalf("WithNamespace(opt) with %s=from-env: namespace %q, want the option's", workerenv.JobNamespace, ns)
	}
}
