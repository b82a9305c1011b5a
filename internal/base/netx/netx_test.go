package netx

import (
	"net"
	"strconv"
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

func TestFreePorts(t *testing.T) {
	seen := map[int]bool{}
	for range 20 {
		p, err := FreePorts("127.0.0.1", 2)
		if err != nil {
			t.Fatal(err)
		}
		if p < freePortLow || p+2 > freePortHigh {
			t.Fatalf("port %d outside %d-%d", p, freePortLow, freePortHigh)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice in a row of 20", p)
		}
		seen[p] = true
		// Both ports can be listened on now.
		for i := range 2 {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+i))
			if err != nil {
				t.Fatalf("port %d: %v", p+i, err)
			}
			l.Close()
		}
	}
}
