package transfer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/klauspost/compress/s2"

	"github.com/ray-go/ray/internal/base/fuzzing"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// response encodes what a server sends for an object found.
func response(data []byte) []byte {
	return append(append(header(statusOK, uint64(len(data)), ""), data...), crcTrailer(data)...)
}

func streamResponseSeeds() [][]any {
	small, big := []byte("object bytes"), randomBytes(3000, 9)
	var seeds [][]any
	add := func(resp []byte, size uint32, known bool) { seeds = append(seeds, []any{resp, size, known}) }
	add(response(small), uint32(len(small)), true)
	add(response(small), 0, false)
	add(response(big), uint32(len(big)), true)
	add(response(nil), 0, false)
	add(header(statusNotFound, 0, "object x: not found"), 12, true)
	add(header(statusUnreadable, 0, "spill file corrupt"), 0, false)
	add(header(statusFailed, 0, "store did not answer"), 0, false)
	add(header(9, 0, ""), 0, false)                                          // unknown status
	add(header(statusOK, 0, "text"), 0, false)                               // text with ok
	add(header(statusOK, 1<<39, ""), 0, false)                               // announces 512 GiB, sends nothing
	add(append(header(statusOK, 1<<39, ""), big...), uint32(len(big)), true) // announces 512 GiB to a client that knows better
	add(header(statusOK, MaxStreamSize+1, ""), 0, false)
	add(header(statusOK, 1<<64-1, ""), 0, false)
	add(response(small)[:headerLen+3], uint32(len(small)), true) // truncated body
	add(response(small)[:len(response(small))-1], 0, false)      // half a trailer
	bad := response(small)
	bad[headerLen] ^= 1
	add(bad, uint32(len(small)), true) // checksum mismatch
	add(header(statusOK, 0, "")[:5], 0, false)
	add(nil, 0, false)
	return seeds
}

func TestFuzzStreamResponseCorpus(t *testing.T) {
	fuzzing.Corpus(t, "FuzzStreamResponse", streamResponseSeeds())
}

// fuzzTuning reads in small steps from a small first buffer: the fuzzer announces large
// sizes, and allocating 8 MiB for each costs it most of its speed.
var fuzzTuning = tuning{writeChunk: 64 << 10, readChunk: 64 << 10, initialBody: 64 << 10}

// FuzzStreamResponse feeds arbitrary bytes to a Fetch as the server's response, with or
// without the object's size known. Fetch must return an error or bytes whose encoding is
// what the server sent; never panic; and allocate in proportion to what arrived (and the
// known size), not to the size announced.
func FuzzStreamResponse(f *testing.F) {
	f.Fuzz(func(t *testing.T, resp []byte, size32 uint32, known bool) {
		var opt FetchOptions
		opt.Timeout = 2 * time.Second
		if known {
			opt.Size = int64(size32 % (256 << 10)) // trusted; kept small for speed
		}
		id := ids.PutID(ids.NewRootTaskID(), 1)
		var (
			data []byte
			err  error
		)
		limit := uint64(fuzzTuning.initialBody) + 3*uint64(len(resp)) + 2*uint64(fuzzTuning.readChunk) + uint64(opt.Size) + 1<<20
		// Each run serves the response anew, so that CheckAlloc may repeat it when another
		// goroutine of the process (a test before this one winding down) allocated meanwhile.
		fuzzing.CheckAlloc(t, limit, "fetchOn", func() {
			client, server := net.Pipe()
			defer client.Close()
			go func() {
				defer server.Close()
				var req [requestLen]byte
				if _, err := io.ReadFull(server, req[:]); err == nil {
					_, _ = server.Write(resp) // fails once the client closes
				}
			}()
			data, _, _, err = fetchOn(context.Background(), client, "pipe", id, opt, fuzzTuning, false)
		})
		if err != nil {
			if !strings.Contains(err.Error(), id.String()) {
				t.Fatalf("error without the object: %v", err)
			}
			return
		}
		if opt.Size > 0 && int64(len(data)) != opt.Size {
			t.Fatalf("accepted %d bytes of an object of %d", len(data), opt.Size)
		}
		if enc := response(data); !bytes.HasPrefix(resp, enc) {
			t.Fatalf("accepted %d bytes that do not encode to the response", len(data))
		}
	})
}

func streamRangeResponseSeeds() [][]any {
	obj := randomBytes(3000, 10)
	var seeds [][]any
	// add: resp answers the range of n bytes at off of an object of size bytes.
	add := func(resp []byte, size, off uint32, n uint16) { seeds = append(seeds, []any{resp, size, off, n}) }
	answer := func(size int, body []byte) []byte {
		return append(append(header(statusOK, uint64(size), ""), body...), crcTrailer(body)...)
	}
	add(answer(len(obj), obj[100:200]), uint32(len(obj)), 100, 100)
	add(answer(len(obj), obj[2999:]), uint32(len(obj)), 2999, 1)
	add(answer(len(obj)+1, obj[100:200]), uint32(len(obj)), 100, 100) // another size
	add(answer(len(obj), obj[100:199]), uint32(len(obj)), 100, 100)   // short
	bad := answer(len(obj), obj[0:50])
	bad[headerLen+7] ^= 1
	add(bad, uint32(len(obj)), 0, 50)
	add(header(statusBadRange, uint64(len(obj)), "range of 1 bytes at 3000 ends past the object's 3000 bytes"), uint32(len(obj)), 3000, 1)
	add(header(statusBadRange, 10, "range past the end"), uint32(len(obj)), 2000, 100) // refused, another size
	add(header(statusBadRange, 0, ""), 0, 0, 0)
	add(header(statusNotFound, 0, "missing"), 100, 0, 10)
	add(header(statusPipe, 100, ""), 100, 0, 10)
	add(header(statusOK, 1<<39, ""), 100, 0, 10)
	add(nil, 100, 0, 10)
	return seeds
}

func TestFuzzStreamRangeResponseCorpus(t *testing.T) {
	fuzzing.Corpus(t, "FuzzStreamRangeResponse", streamRangeResponseSeeds())
}

// FuzzStreamRangeResponse feeds arbitrary bytes to a range request's exchange as the
// server's answer. It must return an error, or fill the range's slice with a body whose
// answer (the object's size in the header, the body, its CRC-32C) is what the server
// sent; never panic; never write outside the range's slice; allocate in proportion to
// what arrived, not to a size announced.
func FuzzStreamRangeResponse(f *testing.F) {
	f.Fuzz(func(t *testing.T, resp []byte, size, off32 uint32, n16 uint16) {
		opt := FetchOptions{Timeout: 2 * time.Second, Size: int64(size%(1<<20)) + 1}
		n := int64(n16%4096) + 1
		off := int64(off32) % opt.Size
		n = min(n, opt.Size-off)
		id := ids.PutID(ids.NewRootTaskID(), 1)
		// The range's slice, between guards that must stay untouched.
		mem := make([]byte, n+64)
		for i := range mem {
			mem[i] = 0xEE
		}
		dst := mem[32 : 32+n : 32+n]
		var (
			data []byte
			err  error
		)
		fuzzing.CheckAlloc(t, 3*uint64(len(resp))+1<<20, "exchange", func() {
			client, server := net.Pipe()
			defer client.Close()
			go func() {
				defer server.Close()
				var req [rangeRequestLen]byte
				if _, err := io.ReadFull(server, req[:]); err == nil {
					_, _ = server.Write(resp) // fails once the client closes
				}
			}()
			data, _, _, err = exchange(context.Background(), client, "pipe", id, opt, fuzzTuning, false, &span{off: off, dst: dst})
		})
		for i := range 32 {
			if mem[i] != 0xEE || mem[len(mem)-1-i] != 0xEE {
				t.Fatal("wrote outside the range's slice")
			}
		}
		if err != nil {
			if data != nil || !strings.Contains(err.Error(), id.String()) {
				t.Fatalf("%d bytes with an error without the object: %v", len(data), err)
			}
			return
		}
		want := append(append(header(statusOK, uint64(opt.Size), ""), dst...), crcTrailer(dst)...)
		if int64(len(data)) != n || !bytes.HasPrefix(resp, want) {
			t.Fatalf("accepted %d bytes of a range of %d that do not encode to the response", len(data), n)
		}
	})
}

// streamRequestObjects answers by the object ID's first byte: a third are found (their
// bytes are the ID), a third are missing, a third fail.
func streamRequestObjects(_ context.Context, id ids.ObjectID) ([]byte, error) {
	switch id[0] % 3 {
	case 0:
		return id[:], nil
	case 1:
		return nil, fmt.Errorf("object %s: %w", id, ErrNotFound)
	}
	return nil, errors.New("store did not answer")
}

// rangeReq turns a whole request into a range request.
func rangeReq(whole []byte, off, n uint64) []byte {
	r := append([]byte{streamMagicRange}, whole[1:requestLen]...)
	r = binary.BigEndian.AppendUint64(r, off)
	return binary.BigEndian.AppendUint64(r, n)
}

func streamRequestSeeds() [][]any {
	req := func(b byte) []byte {
		var id ids.ObjectID
		for i := range id {
			id[i] = b + byte(i)
		}
		return append([]byte{streamMagic}, id[:]...)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	return [][]any{
		{req(0)}, {req(1)}, {req(2)},
		{cat(req(0), req(1), req(2), req(3))}, // pipelined
		{cat(req(0), []byte("GET / HTTP/1.1\r\n"))},
		{req(0)[:7]}, // truncated
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{[]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")},
		{[]byte{}},
		{cat(append([]byte{streamMagicPipe}, req(3)[1:]...), req(4))}, // a pipe accepted: over TCP, through the socket
		// Ranges: valid, past the end, empty, overflowing, truncated, then a whole request.
		{cat(rangeReq(req(0), 2, 10), rangeReq(req(3), 0, 20), rangeReq(req(6), 19, 1))},
		{cat(rangeReq(req(0), 20, 1), rangeReq(req(0), 5, 0), rangeReq(req(0), 1<<64-1, 2), req(3))},
		{cat(rangeReq(req(1), 0, 1), rangeReq(req(2), 0, 1), rangeReq(req(0), 0, 1<<63))},
		{cat(rangeReq(req(0), 1, 1), rangeReq(req(0), 1, 1)[:30])},
	}
}

func TestFuzzStreamRequestCorpus(t *testing.T) {
	fuzzing.Corpus(t, "FuzzStreamRequest", streamRequestSeeds())
}

// FuzzStreamRequest sends arbitrary bytes to a live Server over TCP. It must answer each
// complete request up to the first byte that is not a request's magic (0xD1, 0xD2 or a
// range's 0xD3: a range outside the object is refused), one response per request
// and nothing else, then close the connection; never panic; and serve the next
// connection.
func FuzzStreamRequest(f *testing.F) {
	srv, err := NewServer(ServerConfig{Logger: quiet, Get: streamRequestObjects})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = srv.Close() })
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		go func() {
			_, _ = c.Write(in) // fails if the server closed first
			_ = c.(*net.TCPConn).CloseWrite()
		}()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := io.ReadAll(c)
		// A server that closes with bytes of ours unread resets the connection, which may
		// lose the end of what it sent: then what arrived need only be a prefix.
		reset := err != nil && strings.Contains(err.Error(), "reset")
		if err != nil && !reset {
			t.Fatalf("reading the responses: %v", err)
		}
		var want []byte
		// 0xD2 (a body through a pipe accepted) is answered through the socket over TCP.
		for rest := in; ; {
			n := requestLen
			switch {
			case len(rest) > 0 && rest[0] == streamMagicRange:
				n = rangeRequestLen
			case len(rest) > 0 && (rest[0] == streamMagic || rest[0] == streamMagicPipe):
			default:
				n = len(rest) + 1
			}
			if len(rest) < n {
				break
			}
			id := ids.ObjectID(rest[1:requestLen])
			data, err := streamRequestObjects(context.Background(), id)
			if rest[0] == streamMagicRange && err == nil {
				off, n := binary.BigEndian.Uint64(rest[requestLen:]), binary.BigEndian.Uint64(rest[requestLen+8:])
				if text := rangeError(off, n, len(data)); text != "" {
					want = append(want, header(statusBadRange, uint64(len(data)), text)...)
				} else {
					body := data[off : off+n]
					want = append(append(append(want, header(statusOK, uint64(len(data)), "")...), body...), crcTrailer(body)...)
				}
				rest = rest[rangeRequestLen:]
				continue
			}
			rest = rest[n:]
			switch {
			case err == nil:
				want = append(want, response(data)...)
			case errors.Is(err, ErrNotFound):
				want = append(want, header(statusNotFound, 0, err.Error())...)
			default:
				want = append(want, header(statusFailed, 0, err.Error())...)
			}
		}
		if !bytes.Equal(resp, want) && !(reset && bytes.HasPrefix(want, resp)) {
			t.Fatalf("%d bytes of responses, want %d", len(resp), len(want))
		}
	})
}

func pullChunkSeeds() [][]any {
	data := bytes.Repeat([]byte("chunk "), 2000)
	comp := s2.Encode(nil, data)
	return [][]any{
		{data, false, uint32(0), uint32(len(data)), uint16(0)},
		{comp, true, uint32(0), uint32(len(data)), uint16(0)},
		{comp, true, uint32(1), uint32(3 * len(data)), uint16(len(data))},
		{data[:100], false, uint32(0), uint32(len(data)), uint16(0)}, // short
		{comp[:len(comp)/2], true, uint32(0), uint32(len(data)), uint16(0)},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, true, uint32(0), uint32(1 << 20), uint16(0)}, // s2 claims 4 GiB
		{[]byte{}, false, uint32(0), uint32(0), uint16(0)},
	}
}

func TestFuzzPullChunkCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzPullChunk", pullChunkSeeds()) }

// FuzzPullChunk feeds arbitrary chunk replies to the puller's check-and-place step (the
// s2 decoder included). It must copy or decode exactly the chunk's bytes into their place,
// or fail with ErrCorrupt; never panic; and decode into the buffer it has, not one sized
// by the reply.
func FuzzPullChunk(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, compressed bool, chunkNo, size32 uint32, chunk16 uint16) {
		p := &puller{id: ids.PutID(ids.NewRootTaskID(), 1), store: actor.NewPID("peer", "store"),
			opt: Options{ChunkBytes: int(chunk16)}.withDefaults()}
		size := int64(size32 % (4 << 20))
		chunks := (size + int64(p.opt.ChunkBytes) - 1) / int64(p.opt.ChunkBytes)
		off := int64(0)
		if chunks > 0 {
			off = int64(chunkNo) % chunks * int64(p.opt.ChunkBytes) // next() checks offsets are ones asked for
		}
		buf := make([]byte, size)
		m := &pb.PullObjectReply{Found: true, Offset: off, Size: size, Crc32C: 7, Data: data, Compressed: compressed}
		var err error
		fuzzing.CheckAlloc(t, uint64(len(data))+1<<20, "place", func() { err = p.place(buf, m, size, 7) })
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("not ErrCorrupt: %v", err)
			}
			return
		}
		want := data
		if compressed {
			if want, err = s2.Decode(nil, data); err != nil {
				t.Fatalf("accepted a chunk s2 cannot decode: %v", err)
			}
		}
		if got := buf[off : off+int64(len(want))]; !bytes.Equal(got, want) || int64(len(want)) != min(int64(p.opt.ChunkBytes), size-off) {
			t.Fatalf("placed %d bytes at %d, want the chunk's %d", len(got), off, len(want))
		}
	})
}
