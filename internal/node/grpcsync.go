package node

import (
	"fmt"
	"net"
	"strings"
	"time"
)

// http2Preface is what an HTTP/2 client sends first; cmux (which etcd puts in front of
// its gRPC servers) needs it to route the connection to gRPC.
const http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// syncGRPCServer works around a data race between protoactor and any gRPC server already
// running in the process (here: the embedded etcd's). protoactor's remote.Start calls
// grpclog.SetLoggerV2, a plain global write, while earlier gRPC servers read that global
// when they start serving. The race detector orders socket I/O (every fd write happens
// before every later fd read in the process), so reading the first bytes a server writes
// on a new connection (its HTTP/2 SETTINGS frame) orders its earlier reads of the global
// before our next remote.Start. In a build without the race detector it costs one local
// connection per server, kept open until the node stops (a closed connection makes the
// server log again, which would race with a later remote.Start).
func syncGRPCServer(endpoint string) (net.Conn, error) {
	addr := strings.TrimPrefix(strings.TrimPrefix(endpoint, "http://"), "https://")
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("node: reach gRPC server %s: %w", addr, err)
	}
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte(http2Preface)); err != nil {
		conn.Close()
		return nil, fmt.Errorf("node: write to gRPC server %s: %w", addr, err)
	}
	if _, err := conn.Read(make([]byte, 1)); err != nil {
		conn.Close()
		return nil, fmt.Errorf("node: read from gRPC server %s: %w", addr, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, nil
}
