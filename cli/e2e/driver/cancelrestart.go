package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	ray "github.com/ray-go/ray"
)

type cancelRec struct{}

var (
	cancelRecClass = ray.Actor("e2e.CancelRec", func() *cancelRec { return &cancelRec{} })
	// cancelRecHold marks its start (a file dir/key.start.PID), then sleeps d or until its
	// ctx ends.
	cancelRecHold = ray.Method3(cancelRecClass, "Hold", func(_ *cancelRec, ctx context.Context, dir, key string, d time.Duration) (string, error) {
		if err := os.WriteFile(filepath.Join(dir, key+".start."+strconv.Itoa(os.Getpid())), nil, 0o644); err != nil {
			return "", err
		}
		select {
		case <-time.After(d):
			return key, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	// cancelRecNote marks that it ran (a file dir/key.ran.PID).
	cancelRecNote = ray.Method2(cancelRecClass, "Note", func(_ *cancelRec, _ context.Context, dir, key string) (string, error) {
		return key, os.WriteFile(filepath.Join(dir, key+".ran."+strconv.Itoa(os.Getpid())), nil, 0o644)
	})
)

// cancelRestartCheck (TestCancelQueuedActorCallWorkerKilled) runs on a head and agents
// with {"spare":1}: an AtMostOnce actor with MaxRestarts(2) and MaxTaskRetries(-1),
// placed on a spare agent's worker process (soft affinity), runs Hold (15 s) with two
// Notes queued behind it. Round "before": the first Note is cancelled, its Get must
// say ErrCancelled while Hold still runs; then the actor's worker process is SIGKILLed
// and Hold (sent again) runs again elsewhere. Round "during": the same with new calls,
// but the Cancel comes right after the SIGKILL, while the actor restarts. Each round
// reports whether the cancelled Note ran anywhere (its marker file), what Get of it and
// of the Note after it said, and whether Hold was still running when the cancelled
// Get returned.
func cancelRestartCheck(ctx context.Context, out map[string]any) error {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "cancelrestart")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	nodes, err := ray.Nodes(cctx)
	if err != nil {
		return err
	}
	var spare *ray.Node
	for _, n := range nodes.Alive() {
		if n.Resources["spare"] > 0 {
			spare = &n
			break
		}
	}
	if spare == nil {
		return fmt.Errorf("no node with the resource spare among %v", nodes.Alive())
	}
	h := cancelRecClass.Remote(cctx, ray.AtMostOnce(), ray.MaxRestarts(2), ray.MaxTaskRetries(-1), ray.NodeAffinity(spare.ID, true))
	started := func(key string, n int) error {
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			m, _ := filepath.Glob(filepath.Join(dir, key+".start.*"))
			if len(m) >= n {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s did not start %d times within a minute (%d)", key, n, len(m))
			}
		}
	}
	pidOf := func() (int, error) {
		st, err := ray.GetActorState(cctx, h)
		if err != nil {
			return 0, err
		}
		all, err := ray.Nodes(cctx)
		if err != nil {
			return 0, err
		}
		for _, n := range all.Alive() {
			if n.ID == st.Node {
				if n.PID == os.Getpid() {
					return 0, fmt.Errorf("the actor is in the driver's process (node %s)", n.ID)
				}
				return n.PID, nil
			}
		}
		return 0, fmt.Errorf("the actor's node %q is not among the live nodes", st.Node)
	}
	rounds := map[string]any{}
	out["cancelrestart"] = rounds
	for _, when := range []string{"before", "during"} {
		r := map[string]any{}
		rounds[when] = r
		hold := cancelRecHold.Remote(cctx, h, ray.V(dir), ray.V(when+"-hold"), ray.V(15*time.Second))
		if err := started(when+"-hold", 1); err != nil {
			return err
		}
		queued := cancelRecNote.Remote(cctx, h, ray.V(dir), ray.V(when+"-queued"))
		after := cancelRecNote.Remote(cctx, h, ray.V(dir), ray.V(when+"-after"))
		pid, err := pidOf()
		if err != nil {
			return err
		}
		r["pid"] = pid
		if when == "before" {
			if err := ray.Cancel(cctx, queued); err != nil {
				return fmt.Errorf("ray.Cancel: %w", err)
			}
			// Bounded below Hold's 15 s: answered when Hold ends is a failure.
			gctx, gcancel := context.WithTimeout(cctx, 10*time.Second)
			_, qerr := ray.Get(gctx, queued)
			gcancel()
			r["queued_error"] = fmt.Sprint(qerr)
			r["queued_cancelled"] = errors.Is(qerr, ray.ErrCancelled)
			ready, _, _ := ray.Wait(cctx, []ray.ObjectRef[string]{hold}, ray.Timeout(0))
			r["hold_running"] = len(ready) == 0
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			return fmt.Errorf("kill worker process %d: %w", pid, err)
		}
		if when == "during" {
			if err := ray.Cancel(cctx, queued); err != nil {
				return fmt.Errorf("ray.Cancel while the actor restarts: %w", err)
			}
		}
		if err := started(when+"-hold", 2); err != nil {
			return err
		}
		gctx, gcancel := context.WithTimeout(cctx, 20*time.Second)
		_, qerr := ray.Get(gctx, queued)
		gcancel()
		if when == "during" {
			r["queued_error"] = fmt.Sprint(qerr)
			r["queued_cancelled"] = errors.Is(qerr, ray.ErrCancelled)
		}
		if v, err := ray.Get(cctx, hold); err != nil || v != when+"-hold" {
			r["hold_error"] = fmt.Sprint(v, err)
		}
		v, err := ray.Get(cctx, after)
		r["after"] = v
		if err != nil {
			r["after"] = err.Error()
		}
		ran, _ := filepath.Glob(filepath.Join(dir, when+"-queued.ran.*"))
		r["queued_ran"] = len(ran)
	}
	return nil
}
