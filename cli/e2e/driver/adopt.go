package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"time"

	ray "github.com/ray-go/ray"
)

// vault is a detached actor that keeps refs other jobs hand it and reads them later.
type vault struct{ Held []ray.ObjectRef[[]byte] }

var (
	vaultClass = ray.Actor("e2e.Vault", func() *vault { return &vault{} })
	vaultKeep  = ray.Method1(vaultClass, "Keep", func(v *vault, _ context.Context, refs []ray.ObjectRef[[]byte]) (int, error) {
		v.Held = append(v.Held, refs...)
		return len(v.Held), nil
	})
	vaultRead = ray.Method0(vaultClass, "Read", func(v *vault, ctx context.Context) ([]string, error) {
		out := make([]string, len(v.Held))
		for i, r := range v.Held {
			b, err := ray.Get(ctx, r)
			if err != nil {
				return nil, fmt.Errorf("ref %d: %w", i, err)
			}
			out[i] = sumOf(b)
		}
		return out, nil
	})
)

func sumOf(b []byte) string {
	s := sha256.Sum256(b)
	return fmt.Sprintf("%d:%s", len(b), hex.EncodeToString(s[:8]))
}

// adoptCheck is one job of the cross-job adoption scenario (TestAdoptionAcrossJobs):
//
//   - adopt-keeper (job B) creates the detached actor "vault", prints "vault ready", and
//     on a stdin line has the vault read every ref it keeps, reports what it read, and
//     kills it.
//   - adopt-owner (job A) hands the vault a 512 KiB task result and the end of a chain of
//     three tasks (objects job A owns, made on its worker processes), prints "owner ready",
//     its job ID and their sums, and waits to be killed.
func adoptCheck(ctx context.Context, check string, out map[string]any) error {
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	switch check {
	case "adopt-keeper":
		h := vaultClass.Remote(ctx, ray.Name("vault"), ray.Namespace("e2e"), ray.Detached(), ray.AtMostOnce())
		if _, err := ray.Get(cctx, vaultKeep.Remote(cctx, h, ray.V([]ray.ObjectRef[[]byte]{}))); err != nil {
			return err
		}
		fmt.Println("vault ready")
		if !bufio.NewScanner(os.Stdin).Scan() {
			return fmt.Errorf("stdin closed before the read line")
		}
		sums, err := ray.Get(cctx, vaultRead.Remote(cctx, h))
		if err != nil {
			return fmt.Errorf("the vault's read: %w", err)
		}
		out["sums"] = sums
		return ray.Kill(cctx, h, true)
	case "adopt-owner":
		h, err := ray.GetActor(cctx, vaultClass, "vault", "e2e")
		if err != nil {
			return err
		}
		big := makeBlob.Remote(cctx, ray.V(512<<10))
		chain := xorBlob.Remote(cctx, xorBlob.Remote(cctx, makeBlob.Remote(cctx, ray.V(300<<10))))
		refs := []ray.ObjectRef[[]byte]{big, chain}
		var sums []string
		for _, r := range refs {
			b, err := ray.Get(cctx, r)
			if err != nil {
				return err
			}
			sums = append(sums, sumOf(b))
		}
		if _, err := ray.Get(cctx, vaultKeep.Remote(cctx, h, ray.V(refs))); err != nil {
			return err
		}
		// Lineage records reach the GCS ~0.1 s after their tasks are submitted (written in
		// batches): an owner killed sooner leaves those tasks without a record.
		time.Sleep(time.Second)
		rc, err := ray.GetRuntimeContext(ctx)
		if err != nil {
			return err
		}
		b, _ := json.Marshal(sums)
		fmt.Println("owner ready " + rc.JobID + " " + string(b))
		time.Sleep(10 * time.Minute)
	}
	return fmt.Errorf("unknown check %q", check)
}
