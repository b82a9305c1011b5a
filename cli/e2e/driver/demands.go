package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	ray "github.com/ray-go/ray"
)

// demandsCheck is work that waits for resources, for TestStatusDemands (E2E_DEMANDS_DIR: a
// directory of this machine for its files):
//   - two tasks of 2 CPUs each (the whole of a cluster of two 2-CPU nodes) that wait for
//     the file "release", each first writing "started-I";
//   - once both run, a task of 1.5 CPUs (it waits for room) and a placement group of two
//     bundles of 8 CPUs, PACK (no node has that many: it stays pending); it prints
//     "demands ready PG";
//   - on a stdin line, it writes "release", gets the three tasks, removes the group, makes
//     a group of one bundle of 1 CPU, waits for it to be placed and prints "released PG2";
//   - at the end of stdin, it removes that group.
func demandsCheck(ctx context.Context) error {
	dir := os.Getenv("E2E_DEMANDS_DIR")
	if dir == "" {
		return errors.New("demands: E2E_DEMANDS_DIR is not set")
	}
	cctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	var holds []ray.ObjectRef[int]
	for i := range 2 {
		holds = append(holds, holdCPUs.Options(ray.NumCPUs(2)).Remote(cctx, ray.V(dir), ray.V(i)))
	}
	for i := range 2 {
		if err := waitFile(cctx, filepath.Join(dir, "started-"+strconv.Itoa(i))); err != nil {
			return fmt.Errorf("demands: hold task %d did not start: %w", i, err)
		}
	}
	waiting := holdCPUs.Options(ray.NumCPUs(1.5)).Remote(cctx, ray.V(dir), ray.V(2))
	pg, err := ray.PlacementGroup(cctx, []ray.Bundle{{"CPU": 8}, {"CPU": 8}}, ray.StrategyPack)
	if err != nil {
		return err
	}
	fmt.Println("demands ready", pg.ID())
	in := bufio.NewScanner(os.Stdin)
	in.Scan()
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o644); err != nil {
		return err
	}
	for _, r := range append(holds, waiting) {
		if _, err := ray.Get(cctx, r); err != nil {
			return err
		}
	}
	if err := pg.Remove(cctx); err != nil {
		return err
	}
	pg2, err := ray.PlacementGroup(cctx, []ray.Bundle{{"CPU": 1}}, ray.StrategyPack)
	if err != nil {
		return err
	}
	if err := pg2.Ready(cctx); err != nil {
		return err
	}
	fmt.Println("released", pg2.ID())
	for in.Scan() {
	}
	return pg2.Remove(cctx)
}

// holdCPUs writes dir/started-i, then waits for dir/release (at most 3 minutes).
var holdCPUs = ray.Task2("e2e.HoldCPUs", func(ctx context.Context, dir string, i int) (int, error) {
	if err := os.WriteFile(filepath.Join(dir, "started-"+strconv.Itoa(i)), nil, 0o644); err != nil {
		return 0, err
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	return i, waitFile(wctx, filepath.Join(dir, "release"))
})

// waitFile waits for path to exist.
func waitFile(ctx context.Context, path string) error {
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no %s: %w", path, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
