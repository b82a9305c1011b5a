package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	ray "github.com/ray-go/ray"
)

var (
	// holHold holds its CPUs until the file stop exists (at most 3 minutes); it creates
	// the file started once it runs, for the test to see.
	holHold = ray.Task2("e2e.HolHold", func(ctx context.Context, started, stop string) (int64, error) {
		if err := os.WriteFile(started, nil, 0o600); err != nil {
			return 0, err
		}
		for end := time.Now().Add(3 * time.Minute); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(stop); err == nil {
				break
			}
		}
		return time.Now().UnixNano(), nil
	})
	// holQuick answers when it ran (unix nanoseconds).
	holQuick = ray.Task1("e2e.HolQuick", func(ctx context.Context, i int) (int64, error) { return time.Now().UnixNano(), nil })
)

// holCheck is one job of TestLargeAskDoesNotBlockSmallerOnes (the tester's three jobs on a
// 2-CPU machine): it prints "hol ready", then runs one command per stdin line and answers
// each with a JSON line, until EOF:
//
//   - "hold STARTED STOP": a 1-CPU task that holds its CPU until the file STOP exists;
//     answers {"held": true} once it runs (the file STARTED exists), then, without waiting
//     for it, takes the next line; its end is the answer of "wait".
//   - "big": submits one task with 2 CPUs; answers {"submitted": true} at once, and its
//     end (when it ran) is the answer of "wait".
//   - "small N": N 1-CPU tasks one after another, each Get bounded by 20 s; answers
//     {"ran": [unix ns...], "millis": [...]} or {"error": ...} on the first that fails.
//   - "mixed N": "big" then "small N" in this same job: its 1-CPU tasks must not wait
//     behind its own 2-CPU one.
//   - "wait": waits (2 minutes at most) for the tasks of "hold" and "big" and answers
//     {"ended": [unix ns...]}.
func holCheck(ctx context.Context) error {
	fmt.Println("hol ready")
	var pending []ray.ObjectRef[int64]
	answer := func(v map[string]any) {
		b, _ := json.Marshal(v)
		fmt.Println(string(b))
	}
	small := func(n int) map[string]any {
		var ran, millis []int64
		for i := range n {
			t := time.Now()
			c, cancel := context.WithTimeout(ctx, 20*time.Second)
			at, err := ray.Get(c, holQuick.Options(ray.NumCPUs(1)).Remote(ctx, ray.V(i)))
			cancel()
			if err != nil {
				return map[string]any{"error": fmt.Sprintf("small task %d after %v: %v", i, time.Since(t).Round(time.Millisecond), err)}
			}
			ran, millis = append(ran, at), append(millis, time.Since(t).Milliseconds())
		}
		return map[string]any{"ran": ran, "millis": millis}
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 0 {
			continue
		}
		n := 0
		if len(f) == 2 {
			n, _ = strconv.Atoi(f[1])
		}
		switch {
		case f[0] == "hold" && len(f) == 3:
			pending = append(pending, holHold.Options(ray.NumCPUs(1)).Remote(ctx, ray.V(f[1]), ray.V(f[2])))
			held := false
			for end := time.Now().Add(2 * time.Minute); time.Now().Before(end) && !held; time.Sleep(20 * time.Millisecond) {
				_, err := os.Stat(f[1])
				held = err == nil
			}
			answer(map[string]any{"held": held})
		case f[0] == "big":
			pending = append(pending, holQuick.Options(ray.NumCPUs(2)).Remote(ctx, ray.V(-1)))
			answer(map[string]any{"submitted": true})
		case f[0] == "small" && n > 0:
			answer(small(n))
		case f[0] == "mixed" && n > 0:
			pending = append(pending, holQuick.Options(ray.NumCPUs(2)).Remote(ctx, ray.V(-1)))
			answer(small(n))
		case f[0] == "wait":
			c, cancel := context.WithTimeout(ctx, 2*time.Minute)
			var ended []int64
			var err error
			for _, r := range pending {
				var at int64
				if at, err = ray.Get(c, r); err != nil {
					break
				}
				ended = append(ended, at)
			}
			cancel()
			pending = nil
			if err != nil {
				answer(map[string]any{"error": err.Error()})
			} else {
				answer(map[string]any{"ended": ended})
			}
		default:
			return fmt.Errorf("hol: unknown command %q", in.Text())
		}
	}
	return nil
}
