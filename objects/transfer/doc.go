// Package transfer moves an object's bytes between nodes by pull (DESIGN §4): the node
// that needs an object asks a store shard that holds it for the object in chunks, several
// chunks in flight, and assembles them into one buffer.
//
// Protocol (messages in internal/base/pb):
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
// same size and checksum as the first, and the size Options.Size when the caller knows it
// (an object changed or mixed up is ErrCorrupt; without a known size the buffer grows
// with the chunks asked for instead of being allocated at the announced size), and
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
// The receiving side is the store shard's PullObject handler (package objects/shard).
//
// # Stream: the data plane for large objects
//
// Pull copies every chunk several times (protobuf marshalling, gRPC framing, unmarshalling)
// and peaks at a few hundred MB/s between processes. For large objects a node also runs a
// Server, a plain TCP server that writes an object's bytes as they are, and Fetch reads
// them straight into the buffer it returns: the kernel's two copies are the only ones.
// Server.Get is the node's hook to its store shard (in-process, the shard hands over its
// slice without copying it).
//
// Protocol (all integers big endian). The client sends a request of 21 bytes:
//
//	magic     1 byte   0xD1: magic and version in one; a server closes a connection that
//	                   opens with anything else (a new version takes a new value); 0xD2:
//	                   the same, and the body may come through a pipe (Unix socket, Linux:
//	                   see "The body through a pipe"); 0xD3: a range request (below)
//	object ID 20 bytes
//
// A range request (0xD3) has 16 more bytes, 37 in all:
//
//	offset    8 bytes  the range's first byte in the object
//	length    8 bytes  its length, at least 1; offset+length at most the object's size
//
// It is answered as a whole-object request (the header names the whole object's size),
// with the length bytes from offset as the body and their CRC-32C as the trailer; never
// through a pipe. A range outside the object (length 0, offset or offset+length past the
// end, offset+length past 2^64) is answered with status 5 (bad range), the object's size
// and the reason as the error text: the server checks before it touches the bytes, and
// the connection goes on. A server that predates 0xD3 closes the connection at it.
//
// The server answers with a header of 11 bytes:
//
//	status    1 byte   0 ok, 1 not found (ErrNotFound), 2 unreadable (ErrUnreadable),
//	                   3 failed (Get returned another error, e.g. the store did not answer:
//	                   the object may be there; no sentinel), 4 ok through a pipe (to 0xD2),
//	                   5 bad range (to 0xD3)
//	size      8 bytes  the object's size (0 unless ok or bad range)
//	text len  2 bytes  length of the error text that follows (0 if ok)
//
// then, if ok, the size bytes of the object and a trailer of 4 bytes, the CRC-32C
// (Castagnoli) of those bytes; otherwise the error text. The connection then waits for the
// next request: requests on one connection are answered one at a time, in order.
//
// The checksum comes after the bytes, not in the header, so the server never reads the
// whole object before sending its first byte: it hashes each 1 MiB chunk right after
// writing it, while the kernel's copy has left it in the cache. Measured here (2 vCPUs,
// 200 MiB, client and server in two processes): CRC-32C runs at ~24 GB/s on data in the
// cache and ~7 GB/s from memory; hashing the whole object first (as a header would need)
// gave ~1.8 GB/s, hashing each chunk before writing it ~1.7 GB/s, after writing it
// ~2.2 GB/s (noisy; ±20%). Hashing in a goroutine of its own was slower still: both CPUs
// are already busy with the kernel's copies. The client hashes each chunk right after
// reading it, for the same reason. The server hashes on every request: ServerConfig.Get
// returns bytes only, not the checksum the shard keeps for Pull.
//
// The client checks the header (a known status, size at most MaxStreamSize and equal to
// FetchOptions.Size when the caller knows it, no error text with ok), then reads exactly
// size bytes (io.ReadFull, in 1 MiB steps, each under FetchOptions.Timeout) and compares
// the trailer with its own checksum. The buffer is allocated whole only for a size the
// caller knows (the owner's record); otherwise it starts at 8 MiB at most and doubles as
// bytes arrive, so a peer that announces 512 GiB and sends little costs little. A short body, a missing trailer or a checksum that differs is ErrCorrupt; a
// connection cut before a response is a network error.
//
// Connections are reused: Fetch keeps up to 8 idle connections per address for 30 s
// (servers close idle connections after 90 s, so a client rarely reuses one being closed;
// when it does, i.e. a reused connection fails before any byte of a response, Fetch retries
// once on a new connection: requests are idempotent). Measured here, a 1 MiB object takes
// ~0.5 ms on a kept connection and ~1 ms on a new one (connect, then TCP's windows growing
// from scratch); for 200 MiB objects it does not matter. Reuse also spares the TIME_WAIT
// sockets a connection per fetch would leave behind.
//
// Limits: connections that ask for nothing must not starve those that do (200 idle
// connections used to fill the 64 slots for their 10 s first-request timeout, and an
// 8 MiB Get behind them took 13.7 s). A Server accepts without waiting; a connection
// takes one of ServerConfig.MaxConns serving slots only once a valid request has arrived,
// and gives it back when the answer is written. The connections without a slot (new ones
// waiting 2 s at most for their first request, idle ones between requests, requests
// waiting for a slot) are bounded by ServerConfig.MaxWaiting: beyond it the oldest new
// one is closed, else the oldest idle one (its client retries on a new connection); when
// every one holds a request, the new connection is closed. A connection whose first byte
// is not the magic is closed at once.
//
// # Several streams for one object (TLS on fast links)
//
// One TLS stream is bound by one core's AES-GCM (~1.1-1.3 GB/s per stream here, issue 17):
// on a link faster than that, the stream, not the link, caps a transfer over TLS. So, as
// Ray's object manager pulls an object as chunks with several in flight, Fetch splits an
// object of more than 32 MiB (splitMin) over FetchOptions.Streams connections: ranges of
// 16 MiB (rangeBytes; the last is the rest) handed out in order to K goroutines, each with
// a connection of its own (from the pool, else dialled) on which it asks for one range
// after another (0xD3) and reads each straight into its slice of the one result buffer.
// Each connection's decryption (and the server's encryption, one goroutine per
// connection) then runs on a core of its own where there are cores to spare. Streams 0
// means min(4, GOMAXPROCS) over TLS and 1 over plain TCP, whose one stream already runs
// at memory speed; at most 8 (maxStreams, also the idle connections the pool keeps per
// address). Only for a size the caller knows (FetchOptions.Size, the owner's record):
// without it, Fetch asks for the whole object on one connection, since learning the size
// first would cost small objects (the common case) a round trip. Never over the Unix
// socket (the pipe already moves bytes at memory speed).
//
// Every range is checked as a whole object is: the header must name FetchOptions.Size (a
// server whose object has another size refuses ranges past its end, or announces its
// size: ErrCorrupt), exactly length bytes, and the CRC-32C (over plain TCP; over TLS the
// AEAD). The first range that fails ends the whole Fetch with its error: a context of the
// fetch's own is cancelled, which closes the other streams' connections at once, Fetch
// waits for its goroutines and returns no bytes. Connections whose streams ended cleanly
// go back to the pool. A stream that finds no range left opens no connection. The
// server's limits hold per connection as before: a client with K streams takes up to K
// serving slots (MaxConns) and K waiting connections (MaxWaiting).
//
// Measured here (2 vCPUs, BenchmarkStreamSplit: 256 MiB, client and server in two
// processes, unlimited loopback, interleaved, load 3.3-4.0): plain TCP 2.44 GB/s, TLS
// over 1 stream 1.39, over 2 1.57, over 4 1.67 GB/s (medians; under load 4.6-7, 2
// streams +4-19% over 1, 4 streams -3 to +12%: more goroutines than cores contend).
// With two cores, one stream already keeps both busy (one end encrypts, the other
// decrypts, the kernel copies besides), so the split cannot show its gain here; it is
// for machines with cores to spare at each end, where each stream's cipher runs on a
// core of its own; hence the default's cap at GOMAXPROCS (benchmarks/RESULTS.md,
// benchmarks/microbench/tlssplit.sh).
//
// Socket buffers are left to the kernel's autotuning: fixing SO_SNDBUF/SO_RCVBUF at 4 MiB
// (the most net.core.[rw]mem_max allows here) and chunks of 256 KiB or 4 MiB instead of
// 1 MiB made no difference above the noise. Where the CPU goes on a 200 MiB fetch (both
// ends in one process): the kernel's two copies ~55%, the two checksums ~25%, zeroing the
// new buffer ~10%. Loopback TCP alone, without checksums, moves ~2.5-3 GB/s here.
//
// The same machine: with ServerConfig.Socket the server also listens on a Unix socket
// (0600, in the node's 0700 directory) and serves the same protocol there without TLS:
// only this user can connect, and this user's session holds the cluster's keys anyway.
// Fetch takes its address as "unix:<path>" (Server.Socket). Measured here
// (BenchmarkStream/200MiB/processes, client and server in two processes, load ~7 from
// other work): Unix socket 2.0-2.6 GB/s and ~55-73 ms of CPU per fetch at each end,
// against 1.2-1.4 GB/s and 106-157 ms over mutual TLS on TCP (plain TCP 1.6-2.3 GB/s).
//
// # The body through a pipe (Linux, the Unix socket)
//
// Through the socket an object is copied twice (the server's write into the socket's
// buffers, the client's read out of them) and the two ends hand each other the CPU per
// few hundred KiB; profiled at 100 MiB, the server spent ~70% of its CPU in writev and
// ~30% in the CRC, the client ~55% in read and ~35-40% zeroing its new buffer. On Linux a
// client on the Unix socket opens its request with the magic 0xD2 instead of 0xD1 (same
// request otherwise): it accepts the body through a pipe. A server answering an object of
// 256 KiB or more (pipeMinSize) makes a pipe (pipe2, capacity raised to 1 MiB with
// F_SETPIPE_SZ where the user's quota allows), sends the header with status 4 (statusPipe)
// and the pipe's read end alongside it (SCM_RIGHTS), closes its copy of the read end, and
// hands the object's pages to the write end with vmsplice (no SPLICE_F_GIFT): the pipe
// refers to the server's pages, nothing is copied on the server, and the client's read
// out of the pipe into its buffer is the only copy. The server then closes the write end;
// no trailer follows (see below), the client acknowledges (see Lifetimes). Where vmsplice
// is refused (a seccomp filter), the server writes the bytes into the pipe instead, and
// does so from then on (a copy on the server again, the socket's cost). Everything else
// (errors, smaller objects, a server that cannot make a pipe, TCP) is answered as before
// with status 0 through the socket.
//
// Lifetimes: the pipe holds references to the server's pages until the client has read
// them, not copies (a write to those pages meanwhile would reach the client), so after
// the last vmsplice the server waits (30 s at most, holding the object's slice) for the
// client's acknowledgement: one byte 0xA5 (pipeAck) on the socket once the client has
// read the whole body, and answers it with one byte 0x5A (pipeHeld) before it lets go of
// the slice. The client takes the bytes only with that answer: a server that gave up
// waiting (its timeout, its Close) has let go of the slice, whose memory may then be a
// recycled encode buffer (objects/codec) written with another object before a stalled
// client read it; that fetch is ErrCorrupt instead of wrong bytes. Another byte, or none,
// ends the connection; a client that gives up closes its pipe and its connection, after
// which nothing reads the pages either. The
// client's buffer is an ordinary Go slice (nothing is mapped), so user code may keep it as
// long as it likes. Descriptors: every pipe end is closed on every path (the server's read
// end once sent, its write end when the answer ends or the server closes; the client's
// when the fetch ends, and any descriptor passed with an answer that is not statusPipe or
// that fails a check); both are close-on-exec. Cancelling the context closes the client's
// pipe as well as its connection; Server.Close closes a write end blocked on a client that
// stopped reading (else the write times out after 30 s, as on the socket).
//
// Checks: the client takes statusPipe only for a pipe request, with exactly one descriptor
// that is a pipe's read end (fstat, F_GETFL), else ErrCorrupt; the size is checked against
// MaxStreamSize and FetchOptions.Size as before, and the buffer grows with the bytes that
// arrive when the size is unknown (the same code reads the socket's body); a pipe that ends
// before size bytes (a server that died or failed) is ErrCorrupt. No checksum: the bytes
// never leave this machine's memory and are not copied before the client's read, so the
// CRC would only check the kernel's memcpy (it was ~30% of the server's CPU); pages the
// server let go of before the client read them are what the confirmation (Lifetimes)
// rules out.
//
// Compatibility: a server that predates 0xD2 closes the connection at it; Fetch then asks
// again with 0xD1 on a new connection, and marks that connection in its pool so that its
// reuse asks with 0xD1 too. Elsewhere than on Linux the client never asks for a pipe and
// the server never answers with one.
//
// Measured here (BenchmarkStream/{100,200}MiB/processes/unix, the server in another
// process, before and after interleaved, 4 rounds, load 4.5-4.9 from other work): 100 MiB
// 2.12 -> 3.63 GB/s median, 200 MiB 2.04 -> 3.65 GB/s; CPU per 100 MiB fetch ~22-28 ms ->
// ~3-5 ms on the server, ~26-29 ms -> ~21-27 ms on the client (its read's copy and the
// zeroing of its new buffer, which Go does not let it skip, are what remains).
//
// TLS: a cluster that is not --insecure runs the stream over mutual TLS 1.3
// (ServerConfig.TLS, FetchOptions.TLS: the cluster's certificates, identity.PeerServerTLS
// and PeerClientTLS). The server completes the handshake before it reads a request, under
// the first request's deadline and without a serving slot, so a connection that never
// finishes its handshake is one more waiting connection (bounded, evicted first); a peer
// that presents no certificate of the cluster's CA is refused and logged. Records are
// full-size from the first byte (no dynamic record sizing) and gathered into writes of
// up to 256 KiB while an answer is written (TLS writes each 16 KiB record with its own
// system call, which woke the reader per record and cost 2-3x the plain stream's time on
// 200 MiB; gathered, the two measure the same here), and a connection's Close
// closes its socket at once (no close_notify that could wait behind a blocked write).
// Over TLS the checksum is not computed (the trailer is sent as zeros and not checked;
// over the Unix socket there is no TLS, so it is, whatever FetchOptions.TLS says):
// the AEAD of every record already authenticates the same bytes over the same span, from
// the server's write of the shard's buffer to the client's read into its own, and the two
// CRC passes were ~13% of each end's CPU.
//
// Cancelling the context closes the connection at once (context.AfterFunc), which ends
// the fetch; a server answers a closed connection by ending its goroutine. Server.Close
// stops accepting, closes every connection, cancels the context passed to Get, and waits
// for the accept loop and the connections' goroutines (Get must return when its context
// ends). Every connection of a server is owned by one goroutine, ended by the connection's
// end, its idle timeout (2 s for a first request, 90 s between requests), its eviction
// (MaxWaiting), a write making no progress for 30 s (a client that stopped reading), or
// Close. Fetch starts no goroutine that outlives it; the pool has none (expired
// connections are closed when the pool is next used, or by CloseIdleConnections).
//
// This package depends only on protoactor's actor package, internal/base/ids, internal/base/pb,
// klauspost/compress and the standard library (crypto/tls for the stream).
package transfer
