package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"

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
