package ray

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

var (
	withMeta = Task2("test.withMeta", func(ctx context.Context, n int, tag string) ([]byte, error) {
		if err := SetResultMetadata(ctx, []byte(tag)); err != nil {
			return nil, err
		}
		return bytes.Repeat([]byte{7}, n), nil
	})
	tooMuchMeta = Task0("test.tooMuchMeta", func(ctx context.Context) (int, error) {
		return 0, SetResultMetadata(ctx, make([]byte, MaxResultMetadata+1))
	})
)

func TestResultMetadata(t *testing.T) {
	ctx := timeout(t)
	for _, n := range []int{10, 4 << 20} { // inline, then through the object store
		r := withMeta.Remote(ctx, V(n), V("rows=42"))
		if _, err := Get(ctx, r); err != nil {
			t.Fatal(err)
		}
		info, err := RefInfo(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if !info.Ready || string(info.Metadata) != "rows=42" || info.Size < int64(n) || info.Err != nil {
			t.Fatalf("size %d: info %+v", n, info)
		}
		if n > 1<<20 && info.NodeID == "" {
			t.Fatalf("a 4 MiB result has no node: %+v", info)
		}
	}
	put, err := Put(ctx, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if info, err := RefInfo(ctx, put); err != nil || !info.Ready || info.Metadata != nil {
		t.Fatalf("Put object: %+v %v", info, err)
	}
	if err := SetResultMetadata(ctx, []byte("x")); err == nil {
		t.Fatal("a driver set result metadata")
	}
	failed := tooMuchMeta.Remote(ctx)
	_, _ = Get(ctx, failed)
	if info, err := RefInfo(ctx, failed); err != nil || !info.Ready || info.Err == nil || !strings.Contains(info.Err.Error(), "limit") {
		t.Fatalf("oversized metadata: %+v %v", info, err)
	}
}

func TestRefInfoBeforeReady(t *testing.T) {
	ctx := timeout(t)
	gate := uniqueName(t)
	r := blockUntil.Options(NumCPUs(0)).Remote(ctx, V(gate))
	info, err := RefInfo(ctx, r)
	if err != nil || info.Ready {
		t.Fatalf("before the task ran: %+v %v", info, err)
	}
	close(gateOf(gate))
	mustGet(t, ctx, r)
	if info, err := RefInfo(ctx, r); err != nil || !info.Ready {
		t.Fatalf("after: %+v %v", info, err)
	}
}
