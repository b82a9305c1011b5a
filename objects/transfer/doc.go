// Package transfer moves an object's bytes between nodes by pull (DESIGN §4): the node
// that needs an object asks a store shard that holds it for the object in chunks, several
// chunks in flight, and assembles them into one buffer.
//
// Protocol (messages in internal/pb):
//
//   - The puller sends PullObject{object_id, offset, length, allow_s2} to the shard's PID
//     and gets one PullObjectReply per request. length is at most 1 MiB (MaxChunk): every
//     message stays far below the 4 MiB gRPC limit of the remote transport (DESIGN §2).
//   - Every reply carries the whole object's size and CRC-32C (Castagnoli); the shard
//     computes the checksum once per object. The first request (offset 0) tells the puller
//     the size, then it keeps up to Options.InFlight requests outstanding until the object
//     is complete.
//   - With allow_s2, the shard s2-compresses chunks of at least 4 KiB and sends the
//     compressed form only when it saves at least an eighth (compressed is set).
//   - found=false: the shard does not hold the object (ErrNotFound). error set: the shard
//     holds it but cannot read it, e.g. a spill file failed its checksum (ErrUnreadable).
//     A shard answers an invalid request (length outside 1..1 MiB, offset past the end)
//     with an error too.
//
// The puller checks every chunk's length (after s2 decoding), that every reply names the
// same size and checksum as the first (an object changed or mixed up is ErrCorrupt), and
// the CRC-32C of the assembled bytes (ErrCorrupt). It never returns bytes that failed a
// check.
//
// Each chunk is one RequestFuture with its own timeout (Options.Timeout, bounded by the
// context's deadline). Cancelling the context ends Pull at once: the futures of the
// outstanding chunks are completed locally, so the goroutines waiting on them end too;
// replies that still arrive go to dead letters. A store cannot be told to stop work it
// has started (at most one chunk per outstanding request).
//
// Between processes, protoactor's endpoint writer packs up to EndpointWriterBatchSize
// messages to one address into one gRPC message, so batch size times MaxChunk must stay
// below the receiving server's MaxRecvMsgSize: otherwise, with many chunks outstanding
// toward one puller process, a batch is refused and every message in it is lost without
// an error (the pulls time out). Options.S2 costs CPU on both ends (s2 encodes int64
// columns at ~0.5 GB/s per core here); it pays on networks slower than that, not on
// loopback.
//
// The receiving side is the store shard's PullObject handler (package objects/shard). This
// package depends only on protoactor's actor package, internal/ids, internal/pb,
// klauspost/compress and the standard library.
package transfer
