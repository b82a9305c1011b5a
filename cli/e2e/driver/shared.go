package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"time"

	ray "github.com/ray-go/ray"
)

// span sleeps d holding one CPU and answers when it ran (unix nanoseconds) and where.
var span = ray.Task1("e2e.Span", func(ctx context.Context, d time.Duration) ([3]int64, error) {
	start := time.Now().UnixNano()
	time.Sleep(d)
	return [3]int64{start, time.Now().UnixNano(), int64(os.Getpid())}, nil
})

// sharedCheck is one of two jobs on one machine (TestJobsShareTheMachine): it prints
// "shared ready", waits for a line on stdin, runs 6 tasks of 400 ms with one CPU each at
// once and reports when each ran.
func sharedCheck(ctx context.Context, out map[string]any) error {
	fmt.Println("shared ready")
	if !bufio.NewScanner(os.Stdin).Scan() {
		return fmt.Errorf("stdin closed before the go line")
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	refs := make([]ray.ObjectRef[[3]int64], 6)
	for i := range refs {
		refs[i] = span.Options(ray.NumCPUs(1)).Remote(cctx, ray.V(400*time.Millisecond))
	}
	var spans [][3]int64
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
