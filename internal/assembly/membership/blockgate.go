package membership

import (
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
)

// blockGate orders protoactor's BlockList writes and reads. MemberList.UpdateClusterTopology
// (called by the monitor) writes the list for a departed member under a mutex, but the
// remote's endpoint reader reads it without one when a peer's connect request arrives
// (remote.BlockList.IsBlocked, remote/endpoint_reader.go of the pinned version): a data
// race the race detector reports when a member leaves while another connects. The monitor
// takes the gate's write side around the topology update; BlockListInterceptor holds the
// read side from a stream's first message until the handler answers it, which is where
// the read happens. Both are rare (topology changes, new connections): nothing per message.
var blockGate sync.RWMutex

// BlockListInterceptor is a gRPC stream server interceptor for protoactor's remote (pass it
// with remote.WithServerOptions(grpc.StreamInterceptor(...)) or chain it) that orders the
// remote's unsynchronised BlockList read after a new connection's first message with the
// monitor's topology updates (see blockGate).
func BlockListInterceptor(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	g := &gatedStream{ServerStream: ss}
	defer g.done()
	return handler(srv, g)
}

// gatedStream holds blockGate's read side from the return of its first RecvMsg to its
// first SendMsg, its next RecvMsg or the handler's end, whichever comes first. The gate is
// never held while the stream waits for the peer, so a silent peer cannot stall topology
// updates.
type gatedStream struct {
	grpc.ServerStream
	state atomic.Int32 // 0: first message not read; 1: gate held; 2: done
}

func (g *gatedStream) RecvMsg(m any) error {
	g.release()
	err := g.ServerStream.RecvMsg(m)
	if err == nil && g.state.Load() == 0 {
		blockGate.RLock()
		if !g.state.CompareAndSwap(0, 1) {
			blockGate.RUnlock()
		}
	}
	return err
}

func (g *gatedStream) SendMsg(m any) error {
	g.release()
	return g.ServerStream.SendMsg(m)
}

// release gives the gate back if this stream holds it; the stream takes it no more.
func (g *gatedStream) release() {
	if g.state.CompareAndSwap(1, 2) {
		blockGate.RUnlock()
	}
}

// done is release at the handler's end, also when the first message never came.
func (g *gatedStream) done() {
	if g.state.Swap(2) == 1 {
		blockGate.RUnlock()
	}
}
