package etcdstore

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/eventually"
)

// TestFrontDoor: the relay carries bytes both ways, a client's close ends its relay, and cut
// closes every connection open (the client reads EOF) while new ones are still accepted.
func TestFrontDoor(t *testing.T) {
	back, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	go func() { // an echo server
		for {
			c, err := back.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := newFrontDoor(ln, back.Addr().String())
	defer f.close()
	dial := func() (net.Conn, *bufio.Reader) {
		t.Helper()
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		r := bufio.NewReader(c)
		if _, err := c.Write([]byte("ping\n")); err != nil {
			t.Fatal(err)
		}
		if line, err := r.ReadString('\n'); line != "ping\n" || err != nil {
			t.Fatalf("echo through the relay: %q %v", line, err)
		}
		return c, r
	}
	conns := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.conns)
	}
	c1, _ := dial()
	c1.Close()
	eventually.True(t, 10*time.Second, "a closed client's relay to close", func() bool { return conns() == 0 })
	c2, r2 := dial()
	defer c2.Close()
	c3, r3 := dial()
	defer c3.Close()
	if n := f.cut(); n != 2 {
		t.Fatalf("cut closed %d connections, want 2", n)
	}
	for _, r := range []*bufio.Reader{r2, r3} {
		if _, err := r.ReadByte(); err != io.EOF {
			t.Fatalf("a cut connection read %v, want EOF", err)
		}
	}
	c4, _ := dial() // still accepting
	c4.Close()
}
