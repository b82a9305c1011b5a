package machine

import (
	"encoding/binary"
	"fmt"
	"io"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/pb"
)

// MaxFrame bounds a frame's message: a few resource names and amounts, never near it.
const MaxFrame = 64 << 10

// WriteFrame writes m as one frame.
func WriteFrame(w io.Writer, m *pb.MachineMsg) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	if len(b) > MaxFrame {
		return fmt.Errorf("machine: a frame of %d bytes (max %d)", len(b), MaxFrame)
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err = w.Write(buf)
	return err
}

// ReadFrame reads one frame. A length over MaxFrame or bytes that do not decode are an
// error (the connection is then closed); it never allocates more than MaxFrame.
func ReadFrame(r io.Reader) (*pb.MachineMsg, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrame {
		return nil, fmt.Errorf("machine: a frame of %d bytes announced (max %d): not a machine-ledger peer", n, MaxFrame)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("machine: a frame cut short: %w", err)
	}
	m := &pb.MachineMsg{}
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("machine: a frame that does not decode: %w", err)
	}
	return m, nil
}
