package machine

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/pb"
)

// The machine's store budget is shared: an ask is granted what is free (all, a part or
// nothing, never queued), a give-back frees it for the others, and a client dropped gives
// back its whole grant.
func TestLedgerStoreBudget(t *testing.T) {
	l := NewLedger(res(t, map[string]float64{"CPU": 1}))
	if g := l.StoreAsk("a", 64); g != 0 {
		t.Fatalf("no store budget set: granted %d, want 0", g)
	}
	l.SetStore(1000)
	if g := l.StoreAsk("a", 600); g != 600 {
		t.Fatalf("a asked 600 of 1000: granted %d", g)
	}
	if g := l.StoreAsk("b", 600); g != 400 {
		t.Fatalf("b asked 600 with 400 free: granted %d, want 400", g)
	}
	if g := l.StoreAsk("c", 1); g != 0 {
		t.Fatalf("c asked with nothing free: granted %d", g)
	}
	if total, free := l.Store(); total != 1000 || free != 0 {
		t.Fatalf("store %d free %d", total, free)
	}
	l.StoreGive("a", 5000) // at most what it holds
	if h := l.StoreHeld("a"); h != 0 {
		t.Fatalf("a holds %d after giving back all", h)
	}
	if _, free := l.Store(); free != 600 {
		t.Fatalf("free %d after a gave back 600", free)
	}
	if g := l.StoreAsk("c", -5); g != 0 {
		t.Fatalf("a negative ask granted %d", g)
	}
	l.Drop("b")
	if _, free := l.Store(); free != 1000 || l.StoreHeld("b") != 0 {
		t.Fatalf("after b went: free %d, b holds %d", free, l.StoreHeld("b"))
	}
}

// Over the real socket: the agent says its store budget when a client connects, grants
// the clients' asks out of one budget, and takes back the grant of a client whose
// connection closes.
func TestServerSharesTheStoreBudget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.sock")
	l := NewLedger(res(t, map[string]float64{"CPU": 1}))
	l.SetStore(100 << 20)
	s, err := Serve(path, l, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dial := func(name string) *Client {
		c, err := Dial(path, name, func(*pb.MachineMsg) {})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := dial("a"), dial("b")
	defer b.Close()
	if a.StoreTotal() != 100<<20 {
		t.Fatalf("StoreTotal %d, want 100 MiB", a.StoreTotal())
	}
	if g, err := a.StoreAsk(64<<20, 10*time.Second); err != nil || g != 64<<20 {
		t.Fatalf("a's ask: %d, %v", g, err)
	}
	if g, err := b.StoreAsk(64<<20, 10*time.Second); err != nil || g != 36<<20 {
		t.Fatalf("b's ask with 36 MiB free: %d, %v", g, err)
	}
	if err := b.StoreGive(4 << 20); err != nil {
		t.Fatal(err)
	}
	_ = a.Close()
	deadline := time.Now().Add(10 * time.Second)
	for _, free := l.Store(); free != 68<<20; _, free = l.Store() {
		if time.Now().After(deadline) {
			t.Fatalf("free %d after b gave back 4 MiB and a went, want 68 MiB", free)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A ledger with no store budget (an agent that shares none): the client says so and
	// asks nothing.
	path2 := filepath.Join(t.TempDir(), "m2.sock")
	s2, err := Serve(path2, NewLedger(res(t, map[string]float64{"CPU": 1})), quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	c, err := Dial(path2, "c", func(*pb.MachineMsg) {})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.StoreTotal() != 0 {
		t.Fatalf("StoreTotal %d from a ledger with none", c.StoreTotal())
	}
	if _, err := c.StoreAsk(1, time.Second); err == nil {
		t.Fatal("a store ask to a ledger with no store budget did not fail")
	}
}
