package node

import (
	"io"
	"net"
	"testing"
	"time"
)

func frame(typ byte, payload int) []byte {
	b := []byte{byte(payload >> 16), byte(payload >> 8), byte(payload), typ, 0, 0, 0, 0, 0}
	return append(b, make([]byte, payload)...)
}

// TestProbeClosesOnGoAway plays an HTTP/2 server: the probe must read the server's
// SETTINGS whole, skip other frames, and close its side when GOAWAY arrives.
func TestProbeClosesOnGoAway(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		hello := make([]byte, len(http2Hello))
		if _, err := io.ReadFull(c, hello); err != nil || string(hello) != http2Hello {
			served <- err
			return
		}
		c.Write(frame(0x4, 18))        // SETTINGS with 3 settings
		c.Write(frame(0x8, 4))         // WINDOW_UPDATE
		c.Write(frame(0x6, 8))         // PING
		c.Write(frame(frameGoAway, 8)) // GOAWAY
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 1)) // the probe closes: EOF
		served <- err
	}()
	conn, err := syncGRPCServer("http://"+ln.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := <-served; err != io.EOF {
		t.Fatalf("server side: %v, want EOF (the probe closing after GOAWAY)", err)
	}
}
