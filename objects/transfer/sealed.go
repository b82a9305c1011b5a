package transfer

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// The stream over TLS: crypto/tls authenticates the peers and agrees on a secret; the
// requests, headers and bodies then travel in frames sealed with AES-256-GCM under keys
// exported from that TLS 1.3 session (RFC 8446 §7.5), so that a body is sealed straight
// from the store's slice into the send buffer and opened in place in the buffer Fetch
// returns. crypto/tls copies every 16 KiB record into its own buffer before sealing it,
// and out of its buffer after opening it, which at 200 MiB cost more than the AEAD itself
// (see the package documentation and benchmarks/RESULTS.md).
//
// Each direction has its own keys, and numbers its frames from 0: frame i is sealed under
// the direction's key of epoch i/epochFrames with the nonce i (96 bits, big endian), so
// no nonce is ever used twice under one key, frames cannot be dropped, repeated or
// reordered without failing to open, and no key seals more than epochFrames*sealFrame
// bytes (4 GiB, well inside AES-GCM's limits). Keys are exported with the label
// exporterLabel and the context (direction, epoch): both ends derive the same ones, and
// nobody without the TLS session's secrets can.
const (
	exporterLabel = "EXPORTER-ray-go object stream v1"
	// sealFrame is the most plaintext bytes in one frame; a body of n bytes is sent as
	// ceil(n/sealFrame) frames of sealFrame bytes but the last, each followed by its tag
	// (both ends know the frames' sizes from the header's size: no length prefix). The
	// AES-GCM call on a frame cannot be preempted; at 64 KiB it lasts ~10 µs here, so a
	// GC that must stop the goroutine never waits long (a 200 MiB copy in one call made
	// it spin for seconds: see benchmarks/RESULTS.md).
	sealFrame = 64 << 10
	// epochFrames frames are sealed under one key.
	epochFrames = 1 << 16
	// maxSmallFrame bounds a length-prefixed frame (request, header with error text).
	maxSmallFrame = headerLen + maxErrorText + tagLen
	tagLen        = 16
	lenPrefix     = 4
)

const (
	dirToServer byte = 'c'
	dirToClient byte = 's'
)

// sealer seals or opens one direction's frames in order.
type sealer struct {
	export func(label string, context []byte, length int) ([]byte, error)
	dir    byte
	seq    uint64
	aead   cipher.AEAD
	nonce  [12]byte
}

// next returns the AEAD and nonce of the direction's next frame.
func (s *sealer) next() (cipher.AEAD, []byte, error) {
	if s.aead == nil || s.seq%epochFrames == 0 {
		var ctx [9]byte
		ctx[0] = s.dir
		binary.BigEndian.PutUint64(ctx[1:], s.seq/epochFrames)
		key, err := s.export(exporterLabel, ctx[:], 32)
		if err != nil {
			return nil, nil, fmt.Errorf("derive the stream's key: %w", err)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, nil, err
		}
		if s.aead, err = cipher.NewGCM(block); err != nil {
			return nil, nil, err
		}
	}
	binary.BigEndian.PutUint64(s.nonce[4:], s.seq)
	s.seq++
	return s.aead, s.nonce[:], nil
}

// seal appends frame p, sealed, to dst.
func (s *sealer) seal(dst, p []byte) ([]byte, error) {
	aead, nonce, err := s.next()
	if err != nil {
		return nil, err
	}
	return aead.Seal(dst, nonce, p, nil), nil
}

// open opens frame ct (ciphertext and tag) in place and returns its plaintext.
func (s *sealer) open(ct []byte) ([]byte, error) {
	aead, nonce, err := s.next()
	if err != nil {
		return nil, err
	}
	p, err := aead.Open(ct[:0], nonce, ct, nil)
	if err != nil {
		return nil, errSealBroken
	}
	return p, nil
}

// errSealBroken: a frame failed to open (tampered with, or not from the peer).
var errSealBroken = errors.New("a frame failed its authentication")

// sealedConn is a stream connection after its TLS handshake: frames sealed under the
// session's exported keys on the TCP connection. It has no Read or Write of its own
// (net.Conn's would bypass the sealing): the stream's code calls its frame methods.
type sealedConn struct {
	raw     net.Conn
	pending []byte // bytes read past the handshake, before any raw read
	in, out sealer
	sbuf    []byte // the server's send buffer (frames gathered into one write)
	// tc and hc are the handshake's TLS connection: a TLS record where the first frame
	// should be is the peer's TLS layer ending the session (an alert: it refused this
	// end's certificate), which tc decodes into its error.
	tc *tls.Conn
	hc *handshakeConn
}

var _ net.Conn = (*sealedConn)(nil)

func newSealedConn(raw net.Conn, pending []byte, export func(string, []byte, int) ([]byte, error), server bool) *sealedConn {
	c := &sealedConn{raw: raw, pending: pending,
		in: sealer{export: export, dir: dirToClient}, out: sealer{export: export, dir: dirToServer}}
	if server {
		c.in.dir, c.out.dir = dirToServer, dirToClient
	}
	return c
}

func (c *sealedConn) Read([]byte) (int, error) {
	return 0, errors.New("transfer: sealedConn: raw read")
}
func (c *sealedConn) Write([]byte) (int, error) {
	return 0, errors.New("transfer: sealedConn: raw write")
}
func (c *sealedConn) Close() error         { return c.raw.Close() }
func (c *sealedConn) LocalAddr() net.Addr  { return c.raw.LocalAddr() }
func (c *sealedConn) RemoteAddr() net.Addr { return c.raw.RemoteAddr() }
func (c *sealedConn) SetDeadline(t time.Time) error {
	return c.raw.SetDeadline(t)
}
func (c *sealedConn) SetReadDeadline(t time.Time) error  { return c.raw.SetReadDeadline(t) }
func (c *sealedConn) SetWriteDeadline(t time.Time) error { return c.raw.SetWriteDeadline(t) }

// readFull fills p from the bytes left over from the handshake, then the connection.
func (c *sealedConn) readFull(p []byte) (int, error) {
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	if n == len(p) {
		return n, nil
	}
	m, err := io.ReadFull(c.raw, p[n:])
	if err == io.EOF && n > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n + m, err
}

// writeSmall sends p as one length-prefixed frame.
func (c *sealedConn) writeSmall(p []byte) error {
	buf := make([]byte, lenPrefix, lenPrefix+len(p)+tagLen)
	binary.BigEndian.PutUint32(buf, uint32(len(p)+tagLen))
	buf, err := c.out.seal(buf, p)
	if err != nil {
		return err
	}
	_, err = c.raw.Write(buf)
	return err
}

// readSmall reads one length-prefixed frame of minLen to maxLen plaintext bytes and
// returns its plaintext. A length out of bounds fails at once (errBadFrame), before
// anything is allocated or read.
func (c *sealedConn) readSmall(minLen, maxLen int) ([]byte, error) {
	var pre [lenPrefix]byte
	if n, err := c.readFull(pre[:]); err != nil {
		if n > 0 && errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(pre[:]))
	if c.in.seq == 0 && c.tc != nil && pre[0] >= 20 && pre[0] <= 24 && pre[1] == 3 {
		return nil, c.tlsError(pre[:])
	}
	if n < minLen+tagLen || n > maxLen+tagLen {
		return nil, fmt.Errorf("%w: a frame of %d bytes, want %d to %d", errBadFrame, n, minLen+tagLen, maxLen+tagLen)
	}
	ct := make([]byte, n)
	if _, err := c.readFull(ct); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return c.in.open(ct)
}

// tlsError lets the handshake's TLS connection read the record that starts with pre and
// returns its error (a legitimate first frame is never that long: its length's first
// byte is 0).
func (c *sealedConn) tlsError(pre []byte) error {
	rest := append(append([]byte(nil), pre...), c.pending...)
	c.pending = nil
	c.hc.r = bufio.NewReader(io.MultiReader(bytes.NewReader(rest), c.raw))
	c.hc.left = 0
	if _, err := c.tc.Read(make([]byte, 1)); err != nil {
		return fmt.Errorf("the peer ended the TLS session: %w", err)
	}
	return fmt.Errorf("%w: TLS data where the first frame should be", errBadFrame)
}

// errBadFrame: a frame's length prefix is out of bounds (not the protocol, or tampered).
var errBadFrame = errors.New("a frame of the wrong length")

// writeBody seals data as body frames, gathered into writes of up to chunk bytes, each
// under its own write deadline.
func (c *sealedConn) writeBody(data []byte, chunk int) error {
	per := max(1, chunk/sealFrame) // frames per write
	if need := per * (sealFrame + tagLen); cap(c.sbuf) < need {
		c.sbuf = make([]byte, 0, need)
	}
	for off := 0; off < len(data); {
		buf := c.sbuf[:0]
		for i := 0; i < per && off < len(data); i++ {
			end := min(off+sealFrame, len(data))
			var err error
			if buf, err = c.out.seal(buf, data[off:end]); err != nil {
				return err
			}
			off = end
		}
		_ = c.raw.SetWriteDeadline(time.Now().Add(serverWriteTimeout))
		if _, err := c.raw.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// readFrame reads the body frame of n plaintext bytes into buf[:n+tagLen] and opens it in
// place (buf's capacity must hold the tag).
func (c *sealedConn) readFrame(buf []byte, n int) error {
	ct := buf[:n+tagLen]
	if _, err := c.readFull(ct); err != nil {
		return err
	}
	_, err := c.in.open(ct)
	return err
}

// readBody reads a body of size bytes in sealed frames, each opened in place in the
// buffer it returns. With the size known (opt.Size) the buffer is allocated whole; else
// it grows as frames arrive, so a peer that announces much and sends little costs little.
// Each 1 MiB (tune.readChunk) has opt.Timeout to arrive.
func (c *sealedConn) readBody(size int, opt FetchOptions, tune tuning) ([]byte, error) {
	// The capacity holds the last frame's tag past the end: every frame is read and
	// opened where its plaintext belongs.
	n := size
	if opt.Size <= 0 {
		n = min(size, max(tune.initialBody, tune.readChunk))
	}
	buf := make([]byte, n, n+tagLen)
	next := 0 // offset of the next read deadline
	for off := 0; off < size; {
		end := min(off+sealFrame, size)
		if end > len(buf) {
			grown := min(size, 2*len(buf)+sealFrame)
			nb := make([]byte, grown, grown+tagLen)
			copy(nb, buf[:off])
			buf = nb
		}
		if off >= next {
			_ = c.raw.SetReadDeadline(time.Now().Add(opt.Timeout))
			next = off + tune.readChunk
		}
		if err := c.readFrame(buf[off:], end-off); err != nil {
			return nil, fmt.Errorf("read body at %d of %d bytes: %w", off, size, err)
		}
		off = end
	}
	return buf[:size:size], nil
}

// handshakeConn is the TCP connection as crypto/tls sees it during the handshake: its
// reads never go past the end of the TLS record being read, so the sealed frames that
// follow the handshake stay in r for the sealedConn.
type handshakeConn struct {
	net.Conn
	r    *bufio.Reader
	left int // bytes of the current record not yet read
}

func newHandshakeConn(c net.Conn) *handshakeConn {
	return &handshakeConn{Conn: c, r: bufio.NewReaderSize(c, 4096)}
}

func (h *handshakeConn) Read(p []byte) (int, error) {
	if h.left == 0 {
		hdr, err := h.r.Peek(5) // type, version, length
		if err != nil {
			if len(hdr) > 0 {
				return h.r.Read(p[:min(len(p), len(hdr))]) // tls reports the short record
			}
			return 0, err
		}
		h.left = 5 + int(binary.BigEndian.Uint16(hdr[3:]))
	}
	n, err := h.r.Read(p[:min(len(p), h.left)])
	h.left -= n
	return n, err
}

// rest returns the bytes read past the handshake (a copy).
func (h *handshakeConn) rest() []byte {
	b, _ := h.r.Peek(h.r.Buffered())
	return append([]byte(nil), b...)
}

// sealed returns the sealed connection that follows tc's completed handshake (made
// over hc) on raw.
func sealed(raw net.Conn, hc *handshakeConn, tc *tls.Conn, server bool) (*sealedConn, error) {
	st := tc.ConnectionState()
	if st.Version != tls.VersionTLS13 {
		return nil, fmt.Errorf("TLS version %x, want 1.3", st.Version)
	}
	c := newSealedConn(raw, hc.rest(), st.ExportKeyingMaterial, server)
	c.tc, c.hc = tc, hc
	return c, nil
}
