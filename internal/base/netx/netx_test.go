package netx

import (
	"net"
	"testing"
	"time"
)

func TestRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if Refused(addr, time.Second) {
		t.Fatal("a listening address reads as refused")
	}
	l.Close()
	if !Refused(addr, time.Second) {
		t.Fatal("a closed port does not read as refused")
	}
}
