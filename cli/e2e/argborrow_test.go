package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestArgBorrowsEnd: refs passed inside a task's argument are borrowed by the worker
// process that decodes them; once the task returned, that process gives them back
// within seconds (the idle collector, internal/assembly/core/idlegc.go), as Ray gives a
// task's arguments back when it returns. They were held until Go's forced collection of
// the idle process, two minutes later, and the driver's objects with them.
func TestArgBorrowsEnd(t *testing.T) {
	t.Parallel()
	port, addr, sess := newSession(t)
	env := startTwoNodes(t, port, addr, sess)
	out, errOut, code := run(t, 3*time.Minute, env, driver, "-check", "argborrow")
	if code != 0 {
		t.Fatalf("driver -check argborrow: exit %d\n%s\n%s", code, out, tail(errOut))
	}
	if !strings.Contains(out, "argborrow released after") {
		t.Fatalf("driver -check argborrow: %s\nwant the worker process's borrows of a finished task's arguments given back within 60 s", out)
	}
}
