package transfer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/fuzzing"
	"github.com/ray-go/ray/internal/base/identity"
	"github.com/ray-go/ray/internal/base/ids"
)

// testExport stands for a TLS session's exporter: fixed keys, so that tests and the fuzzer
// can seal what a server would send.
func testExport(label string, context []byte, length int) ([]byte, error) {
	k := sha256.Sum256(append([]byte(label), context...))
	return k[:length], nil
}

// sealedResponse is what a server sends, sealed, on a fresh connection for an object
// found (data) or an error (status, text).
func sealedResponse(t testing.TB, status byte, data []byte, text string) []byte {
	var wire bytes.Buffer
	srv := newSealedConn(&writeConn{w: &wire}, nil, testExport, true)
	hdr := header(status, uint64(len(data)), text)
	if status != statusOK {
		hdr = header(status, 0, text)
	}
	if err := srv.writeSmall(hdr); err != nil {
		t.Fatal(err)
	}
	if status == statusOK {
		if err := srv.writeBody(data, 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	return wire.Bytes()
}

// writeConn is a net.Conn that writes into w (reads fail).
type writeConn struct {
	net.Conn
	w io.Writer
}

func (c *writeConn) Write(p []byte) (int, error)      { return c.w.Write(p) }
func (c *writeConn) SetWriteDeadline(time.Time) error { return nil }

// TestSealedStream: over TLS, objects of every shape arrive whole (empty, one byte,
// exactly one frame, frames and a remainder, with the size known or not) on one
// connection, and so do errors with their text.
func TestSealedStream(t *testing.T) {
	ca, srvCreds := clusterCreds(t, identity.RoleNode)
	var objs objectMap
	srv := newStreamServer(t, ServerConfig{Get: objs.get, TLS: srvCreds.PeerServerTLS()})
	pool := testPool(t)
	tlsCfg := issueFor(t, ca, "client", identity.RoleNode).PeerClientTLS()
	for i, size := range []int{0, 1, sealFrame - 1, sealFrame, sealFrame + 1, 5*sealFrame + 77, 9 << 20} {
		id := ids.PutID(ids.NewRootTaskID(), 1)
		data := randomBytes(size, byte(i))
		objs.set(id, data)
		for _, known := range []bool{true, false} {
			opt := FetchOptions{TLS: tlsCfg}
			if known {
				opt.Size = int64(size)
			}
			got, err := fetch(context.Background(), pool, srv.Addr(), id, opt, fuzzTuning)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%d bytes (size known %v): %v, %d bytes back", size, known, err, len(got))
			}
		}
	}
	_, err := fetch(context.Background(), pool, srv.Addr(), ids.PutID(ids.NewRootTaskID(), 1), FetchOptions{TLS: tlsCfg}, defaultTuning)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("a missing object: %v, want ErrNotFound with the server's text", err)
	}
	if n := srv.accepted.Load(); n != 1 {
		t.Errorf("%d connections for the fetches, want 1", n)
	}
}

// fetchSealed runs fetchOn on a client sealedConn (the test keys) whose server sends
// resp after reading the request.
func fetchSealed(resp []byte, id ids.ObjectID, opt FetchOptions, tune tuning) ([]byte, error) {
	client, server := net.Pipe()
	defer client.Close()
	go func() {
		defer server.Close()
		var req [lenPrefix + requestLen + tagLen]byte
		if _, err := io.ReadFull(server, req[:]); err == nil {
			_, _ = server.Write(resp) // fails once the client closes
		}
	}()
	c := newSealedConn(client, nil, testExport, false)
	data, _, _, err := fetchOn(context.Background(), c, "pipe", id, opt, tune)
	return data, err
}

// TestSealedTampering: a bit flipped anywhere in a sealed response (a length, the
// header's frame, a body frame, the last tag), or the response cut short, fails the
// fetch; nothing tampered with is returned.
func TestSealedTampering(t *testing.T) {
	id := ids.PutID(ids.NewRootTaskID(), 1)
	data := randomBytes(3*sealFrame+100, 5)
	resp := sealedResponse(t, statusOK, data, "")
	opt := FetchOptions{Timeout: 5 * time.Second}
	if got, err := fetchSealed(resp, id, opt, defaultTuning); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the response as sealed: %v", err)
	}
	for _, at := range []int{0, 3, lenPrefix, lenPrefix + 5, lenPrefix + headerLen + tagLen - 1, 40, sealFrame, 2*sealFrame + 50, len(resp) - 1} {
		bad := bytes.Clone(resp)
		bad[at] ^= 0x10
		got, err := fetchSealed(bad, id, opt, defaultTuning)
		if err == nil || got != nil {
			t.Fatalf("a bit flipped at byte %d of %d: accepted %d bytes", at, len(resp), len(got))
		}
	}
	for _, cut := range []int{lenPrefix + 2, lenPrefix + headerLen + tagLen, len(resp) - sealFrame, len(resp) - 1} {
		got, err := fetchSealed(resp[:cut], id, opt, defaultTuning)
		if err == nil || got != nil {
			t.Fatalf("the response cut at %d of %d: accepted %d bytes", cut, len(resp), len(got))
		}
	}
	// A response sealed for another request (the frames' numbers differ) fails too.
	again := sealedResponse(t, statusOK, data, "")
	if got, err := fetchSealed(append(bytes.Clone(resp[:lenPrefix+headerLen+tagLen]), again[lenPrefix+headerLen+tagLen:]...), id, opt, defaultTuning); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the same frames (deterministic test keys): %v", err)
	}
	swapped := bytes.Clone(resp)
	f1, f2 := lenPrefix+headerLen+tagLen, lenPrefix+headerLen+tagLen+sealFrame+tagLen
	copy(swapped[f1:], resp[f2:f2+sealFrame+tagLen])
	copy(swapped[f2:], resp[f1:f1+sealFrame+tagLen])
	if got, err := fetchSealed(swapped, id, opt, defaultTuning); err == nil || got != nil {
		t.Fatalf("two body frames swapped: accepted %d bytes", len(got))
	}
}

func sealedResponseSeeds(t testing.TB) [][]any {
	small, big := []byte("object bytes"), randomBytes(3000, 9)
	var seeds [][]any
	add := func(resp []byte, size uint32, known bool) { seeds = append(seeds, []any{resp, size, known}) }
	add(sealedResponse(t, statusOK, small, ""), uint32(len(small)), true)
	add(sealedResponse(t, statusOK, small, ""), 0, false)
	add(sealedResponse(t, statusOK, big, ""), uint32(len(big)), true)
	add(sealedResponse(t, statusOK, nil, ""), 0, false)
	add(sealedResponse(t, statusNotFound, nil, "object x: not found"), 12, true)
	add(sealedResponse(t, statusUnreadable, nil, "spill file corrupt"), 0, false)
	add(sealedResponse(t, statusFailed, nil, "store did not answer"), 0, false)
	add(sealedResponse(t, 9, nil, ""), 0, false)
	add(sealedResponse(t, statusOK, make([]byte, 70<<10), "")[:900], 0, false) // announces 70 KiB, sends less
	add([]byte{0xff, 0xff, 0xff, 0xff}, 0, false)                              // a 4 GiB frame
	add([]byte{0x17, 0x03, 0x03, 0x00, 0x13}, 0, false)                        // a TLS record
	add(nil, 0, false)
	return seeds
}

func TestFuzzSealedResponseCorpus(t *testing.T) {
	fuzzing.Corpus(t, "FuzzSealedResponse", sealedResponseSeeds(t))
}

// FuzzSealedResponse feeds arbitrary bytes to a Fetch over TLS as the server's sealed
// response (keys fixed for the test, so the seeds are valid responses the fuzzer mutates).
// Fetch must fail or return bytes that seal to what the server sent; never panic; and
// allocate in proportion to what arrived and the known size, not to a length or size
// announced.
func FuzzSealedResponse(f *testing.F) {
	f.Fuzz(func(t *testing.T, resp []byte, size32 uint32, known bool) {
		var opt FetchOptions
		opt.Timeout = 2 * time.Second
		if known {
			opt.Size = int64(size32 % (256 << 10))
		}
		id := ids.PutID(ids.NewRootTaskID(), 1)
		var (
			data []byte
			err  error
		)
		limit := uint64(fuzzTuning.initialBody) + 3*uint64(len(resp)) + 2*sealFrame + uint64(opt.Size) + 1<<20
		fuzzing.CheckAllocOnce(t, limit, "fetchOn (sealed)", func() { data, err = fetchSealed(resp, id, opt, fuzzTuning) })
		if err != nil {
			if !strings.Contains(err.Error(), id.String()) {
				t.Fatalf("error without the object: %v", err)
			}
			return
		}
		if opt.Size > 0 && int64(len(data)) != opt.Size {
			t.Fatalf("accepted %d bytes of an object of %d", len(data), opt.Size)
		}
		if enc := sealedResponse(t, statusOK, data, ""); !bytes.HasPrefix(resp, enc) {
			t.Fatalf("accepted %d bytes that do not seal to the response", len(data))
		}
	})
}
