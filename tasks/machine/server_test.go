package machine

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/fuzzing"
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func recv(t *testing.T, ch <-chan *pb.MachineMsg, op pb.MachineMsg_Op) *pb.MachineMsg {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-ch:
			if m.Op == op {
				return m
			}
		case <-deadline:
			t.Fatalf("no %v from the machine in 10 s", op)
		}
	}
}

// Two clients over the real socket: the second's ask waits until the first gives back,
// and a client whose connection closes gives back all it held.
func TestServerSharesTheMachine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.sock")
	s, err := Serve(path, NewLedger(res(t, map[string]float64{"CPU": 2})), quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dial := func(name string) (*Client, chan *pb.MachineMsg) {
		ch := make(chan *pb.MachineMsg, 64)
		c, err := Dial(path, name, func(m *pb.MachineMsg) { ch <- m })
		if err != nil {
			t.Fatal(err)
		}
		return c, ch
	}
	a, ach := dial("a")
	defer a.Close()
	b, bch := dial("b")
	defer b.Close()
	if err := a.Ask(7, res(t, map[string]float64{"CPU": 2}), false); err != nil {
		t.Fatal(err)
	}
	if g := recv(t, ach, pb.MachineMsg_GRANT); g.Id != 7 || !tasks.ResourcesFromPB(g.Resources).Equal(res(t, map[string]float64{"CPU": 2})) {
		t.Fatalf("a's grant: %v", g)
	}
	if err := b.Ask(1, res(t, map[string]float64{"CPU": 1}), true); err != nil {
		t.Fatal(err)
	}
	if d := recv(t, bch, pb.MachineMsg_DENY); d.Id != 1 || d.Message == "" {
		t.Fatalf("b's now-ask: %v", d)
	}
	if err := b.Ask(2, res(t, map[string]float64{"CPU": 1}), false); err != nil {
		t.Fatal(err)
	}
	if err := a.Give(res(t, map[string]float64{"CPU": 1})); err != nil {
		t.Fatal(err)
	}
	if g := recv(t, bch, pb.MachineMsg_GRANT); g.Id != 2 {
		t.Fatalf("b's grant: %v", g)
	}
	// a's process goes: what it held (1 CPU) is free again, and b hears it.
	_ = a.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !b.Free().Equal(res(t, map[string]float64{"CPU": 1})) {
		if time.Now().After(deadline) {
			t.Fatalf("b hears free %v, want 1 CPU after a left (ledger: %v)", b.Free(), s.Ledger().Free())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestServerRefusesGarbage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.sock")
	s, err := Serve(path, NewLedger(res(t, map[string]float64{"CPU": 1})), quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A frame that announces 1 GiB: the server closes the connection without reading it.
	if _, err := c.Write([]byte{0x40, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("the server answered a connection that sent garbage")
	}
}

func TestFuzzReadFrameCorpus(t *testing.T) {
	fuzzing.Corpus(t, "FuzzReadFrame", frameSeeds(t))
}

func frameSeeds(t testing.TB) [][]any {
	var ok bytes.Buffer
	if err := WriteFrame(&ok, &pb.MachineMsg{Op: pb.MachineMsg_ASK, Id: 3, Resources: []*pb.ResourceQty{{Name: "CPU", Amount: 10000}}}); err != nil {
		t.Fatal(err)
	}
	return [][]any{{ok.Bytes()}, {[]byte{0, 0, 0, 1, 0xff}}, {[]byte{0xff, 0xff, 0xff, 0xff}}, {[]byte{0, 0}}}
}

// FuzzReadFrame: bytes from a peer never panic ReadFrame, never make it allocate more
// than a frame's bound, and what it decodes encodes back to a frame it reads the same.
func FuzzReadFrame(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		var m *pb.MachineMsg
		var err error
		fuzzing.CheckAlloc(t, 4*MaxFrame+64<<10, "ReadFrame", func() { m, err = ReadFrame(bytes.NewReader(b)) })
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := WriteFrame(&buf, m); err != nil {
			t.Fatal(err)
		}
		back, err := ReadFrame(&buf)
		if err != nil || back.Op != m.Op || back.Id != m.Id {
			t.Fatalf("round trip: %v, %v (was %v)", back, err, m)
		}
	})
}
