package node

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// http2Hello is what an HTTP/2 client sends first: the connection preface (cmux, which
// etcd puts in front of its gRPC servers, needs it to route the connection to gRPC) and an
// empty SETTINGS frame. Without the SETTINGS frame the server's transport stays half
// built in a goroutine that its shutdown does not wait for, and logs when the probe
// closes: the race this file exists to avoid, one step later.
const http2Hello = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + "\x00\x00\x00\x04\x00\x00\x00\x00\x00"

// syncGRPCServer works around a data race between protoactor and any gRPC server already
// running in the process (here: the embedded etcd's). protoactor's remote.Start calls
// grpclog.SetLoggerV2, a plain global write, while earlier gRPC servers read that global
// when they start serving. The race detector orders socket I/O (every fd write happens
// before every later fd read in the process), so reading the first bytes a server writes
// on a new connection (its HTTP/2 SETTINGS frame) orders its earlier reads of the global
// before our next remote.Start. In a build without the race detector it costs one local
// connection per server.
//
// The connection then behaves as a well-mannered client until the server stops: it closes
// when the server says GOAWAY (graceful stop), so the server's transport ends, and logs,
// inside the server's GracefulStop, which etcd's Close waits for. Closing it earlier would
// make the server log from a goroutine nobody waits for, racing with the next node's
// remote.Start in the same process (tests start many nodes one after another).
//
// An https endpoint is reached with tlsCfg (HTTP/2 by ALPN, as a gRPC client would).
func syncGRPCServer(endpoint string, tlsCfg *tls.Config) (net.Conn, error) {
	addr := strings.TrimPrefix(strings.TrimPrefix(endpoint, "http://"), "https://")
	var conn net.Conn
	var err error
	d := &net.Dialer{Timeout: 2 * time.Second}
	if strings.HasPrefix(endpoint, "https://") {
		if tlsCfg == nil {
			return nil, fmt.Errorf("node: gRPC server %s speaks TLS and no credentials were given", addr)
		}
		cfg := tlsCfg.Clone()
		cfg.NextProtos = []string{"h2"}
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		conn, err = tls.DialWithDialer(d, "tcp", addr, cfg)
	} else {
		conn, err = d.Dial("tcp", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("node: reach gRPC server %s: %w", addr, err)
	}
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte(http2Hello)); err != nil {
		conn.Close()
		return nil, fmt.Errorf("node: write to gRPC server %s: %w", addr, err)
	}
	if _, err := readFrame(conn); err != nil { // the server's SETTINGS
		conn.Close()
		return nil, fmt.Errorf("node: read from gRPC server %s: %w", addr, err)
	}
	_ = conn.SetDeadline(time.Time{})
	go closeOnGoAway(conn)
	return conn, nil
}

// closeOnGoAway reads HTTP/2 frames until the server sends GOAWAY (or the connection
// fails), then closes the connection.
func closeOnGoAway(conn net.Conn) {
	defer conn.Close()
	for {
		typ, err := readFrame(conn)
		if err != nil || typ == frameGoAway {
			return
		}
	}
}

const frameGoAway = 0x7

// readFrame reads one whole HTTP/2 frame and returns its type.
func readFrame(conn net.Conn) (byte, error) {
	var hdr [9]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		return 0, err
	}
	length := int64(hdr[0])<<16 | int64(hdr[1])<<8 | int64(hdr[2])
	if _, err := io.CopyN(io.Discard, conn, length); err != nil {
		return 0, err
	}
	return hdr[3], nil
}
