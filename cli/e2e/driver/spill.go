package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	ray "github.com/ray-go/ray"
)

// spillCheck (spill, TestSpillDir): eight task results of 4 MiB and more, made by
// makeBlob in the job's worker process and held by the driver, more than that process's
// store takes (the test starts the agent with a 16 MiB store), so some are spilled.
// It prints "spill ready" once all are made; on a stdin line it reads them all back,
// compares them with what makeBlob makes, and prints "spill ok" (or "spill failed: ...");
// it returns when its stdin ends.
func spillCheck(ctx context.Context) error {
	var refs []ray.ObjectRef[[]byte]
	for i := range 8 {
		refs = append(refs, makeBlob.Remote(ctx, ray.V(4<<20+i)))
	}
	if _, _, err := ray.Wait(ctx, refs, ray.NumReady(len(refs))); err != nil {
		return err
	}
	fmt.Println("spill ready")
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		return nil
	}
	msg := "spill ok"
	for i, r := range refs {
		got, err := ray.Get(ctx, r)
		if err != nil {
			msg = fmt.Sprintf("spill failed: object %d: %v", i, err)
			break
		}
		if !bytes.Equal(got, blobOf(4<<20+i)) {
			msg = fmt.Sprintf("spill failed: object %d: other bytes read back", i)
			break
		}
	}
	fmt.Println(msg)
	for in.Scan() {
	}
	return nil
}

// blobOf is what makeBlob makes of n.
func blobOf(n int) []byte {
	b := make([]byte, n)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// driverSpillCheck (driverspill, TestSubmittedDriverSpillDir): eight objects of 4 MiB and
// more put by the driver, whose store takes 16 MiB (main gives Init that for this check),
// so the driver's own store spills some. It counts the spill files under E2E_SPILL_ROOT
// (the directory the test gave `rayctl start --spill-dir`) while it holds them, reads
// them all back and compares them, then reports "spill_files" and "spill_ok".
func driverSpillCheck(ctx context.Context, out map[string]any) error {
	var refs []ray.ObjectRef[[]byte]
	for i := range 8 {
		r, err := ray.Put(ctx, blobOf(4<<20+i))
		if err != nil {
			return err
		}
		refs = append(refs, r)
	}
	n := 0
	root := os.Getenv("E2E_SPILL_ROOT")
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && root != "" && strings.HasSuffix(path, ".zst") {
			n++
		}
		return nil
	})
	out["spill_files"] = n
	for i, r := range refs {
		got, err := ray.Get(ctx, r)
		if err != nil {
			return fmt.Errorf("object %d: %w", i, err)
		}
		if !bytes.Equal(got, blobOf(4<<20+i)) {
			return fmt.Errorf("object %d: other bytes read back", i)
		}
	}
	out["spill_ok"] = true
	return nil
}
