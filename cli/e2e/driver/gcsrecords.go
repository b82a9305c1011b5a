package main

import (
	"context"
	"fmt"
	"os"
	"runtime"

	ray "github.com/ray-go/ray"
)

// gcsRecordsCheck (gcsrecords, TestGoneRecordsSwept): eight task results of 200 KiB (in the
// job's worker process's store: object table entries) and a driver Put of 200 KiB, all held
// (lineage records), then "records ready"; with -hold (E2E_HOLD set) it waits to be killed,
// else it returns holding them (Shutdown with live records).
func gcsRecordsCheck(ctx context.Context) error {
	var refs []ray.ObjectRef[[]byte]
	for i := range 8 {
		refs = append(refs, makeBlob.Remote(ctx, ray.V(200<<10+i)))
	}
	if _, _, err := ray.Wait(ctx, refs, ray.NumReady(len(refs))); err != nil {
		return err
	}
	p, err := ray.Put(ctx, make([]byte, 200<<10))
	if err != nil {
		return err
	}
	fmt.Println("records ready")
	if os.Getenv("E2E_HOLD") != "" {
		select {}
	}
	runtime.KeepAlive(refs)
	runtime.KeepAlive(p)
	return nil
}
