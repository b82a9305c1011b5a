package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	ray "github.com/ray-go/ray"
)

// span sleeps d holding one CPU and answers when it ran (unix nanoseconds) and where.
var span = ray.Task1("e2e.Span", func(ctx context.Context, d time.Duration) ([3]int64, error) {
	start := time.Now().UnixNano()
	time.Sleep(d)
	return [3]int64{start, time.Now().UnixNano(), int64(os.Getpid())}, nil
})

// sharedCheck is one of two jobs on one machine (TestJobsShareTheMachine,
// TestJobsGetAnEvenShare): it prints "shared ready", waits for a line on stdin, runs tasks
// with one CPU each at once and reports when each ran. The line "go" runs 6 tasks of 400
// ms; "go N D" runs N tasks of duration D and prints "running" once the first is done.
func sharedCheck(ctx context.Context, out map[string]any) error {
	fmt.Println("shared ready")
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		return fmt.Errorf("stdin closed before the go line")
	}
	n, d, announce := 6, 400*time.Millisecond, false
	if f := strings.Fields(in.Text()); len(f) == 3 {
		var err error
		if n, err = strconv.Atoi(f[1]); err != nil {
			return fmt.Errorf("the go line %q: %w", in.Text(), err)
		}
		if d, err = time.ParseDuration(f[2]); err != nil {
			return fmt.Errorf("the go line %q: %w", in.Text(), err)
		}
		announce = true
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	refs := make([]ray.ObjectRef[[3]int64], n)
	for i := range refs {
		refs[i] = span.Options(ray.NumCPUs(1)).Remote(cctx, ray.V(d))
	}
	var spans [][3]int64
	if announce {
		// Once the first task is done, the job holds the machine's CPUs with the rest
		// queued behind them.
		s, err := ray.Get(cctx, refs[0])
		if err != nil {
			return err
		}
		spans, refs = append(spans, s), refs[1:]
		fmt.Println("running")
	}
	for _, r := range refs {
		s, err := ray.Get(cctx, r)
		if err != nil {
			return err
		}
		spans = append(spans, s)
	}
	out["spans"] = spans
	return nil
}
