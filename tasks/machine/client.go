package machine

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
)

// Client is a worker process's connection to its machine's ledger.
type Client struct {
	c    net.Conn
	wmu  sync.Mutex
	done chan struct{}
	free atomic.Pointer[sched.Resources]

	storeTotal int64 // the machine's object store budget, from the first FREE (0: none shared)
	smu        sync.Mutex
	storeSeq   uint64
	storeWait  map[uint64]chan int64 // STORE_ASKs waiting for their STORE_GRANT
}

// Dial connects to the ledger served at path, introducing itself as name (its node ID),
// and waits for the machine's first FREE (which says its object store budget: StoreTotal).
// on is called, in order, with every GRANT, DENY and FREE the machine sends (after Free is
// updated; the first FREE before Dial returns, the others from the client's reader
// goroutine); Done is closed when the connection is lost.
func Dial(path, name string, on func(*pb.MachineMsg)) (*Client, error) {
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("machine: cannot reach the machine's ledger at %s (is the node agent that started this process running?): %w", path, err)
	}
	cl := &Client{c: c, done: make(chan struct{}), storeWait: map[uint64]chan int64{}}
	if err := cl.write(&pb.MachineMsg{Op: pb.MachineMsg_HELLO, Client: name}); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("machine: the ledger at %s: %w", path, err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	first, err := ReadFrame(c)
	if err == nil && first.Op != pb.MachineMsg_FREE {
		err = fmt.Errorf("machine: the first frame is %v, not FREE", first.Op)
	}
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("machine: the ledger at %s did not answer: %w", path, err)
	}
	_ = c.SetReadDeadline(time.Time{})
	cl.storeTotal = max(first.Bytes, 0)
	handle := func(m *pb.MachineMsg) {
		switch m.Op {
		case pb.MachineMsg_GRANT, pb.MachineMsg_DENY, pb.MachineMsg_FREE:
			free := tasks.ResourcesFromPB(m.Free)
			cl.free.Store(&free)
			on(m)
		case pb.MachineMsg_RECLAIM:
			on(m)
		case pb.MachineMsg_STORE_GRANT:
			cl.smu.Lock()
			ch := cl.storeWait[m.Id]
			delete(cl.storeWait, m.Id)
			cl.smu.Unlock()
			if ch != nil {
				ch <- max(m.Bytes, 0)
			}
		}
	}
	handle(first)
	go func() {
		defer close(cl.done)
		for {
			m, err := ReadFrame(c)
			if err != nil {
				return
			}
			handle(m)
		}
	}()
	return cl, nil
}

// StoreTotal is the machine's object store budget that the stores of the agent's
// processes share (StoreAsk, StoreGive), as the agent said when this client connected;
// 0: the agent shares none (an agent older than the store ledger), and the process keeps
// a store budget of its own.
func (c *Client) StoreTotal() int64 { return c.storeTotal }

// StoreAsk asks the machine for want more bytes of its store budget and waits, at most
// timeout, for the answer: the bytes granted (all of want, a part, or 0 when none is
// free). An error (the agent went, no answer in time) grants nothing; a grant that
// arrives after the timeout is given back.
func (c *Client) StoreAsk(want int64, timeout time.Duration) (int64, error) {
	if c.storeTotal <= 0 {
		return 0, fmt.Errorf("machine: the agent shares no object store budget")
	}
	ch := make(chan int64, 1)
	c.smu.Lock()
	c.storeSeq++
	id := c.storeSeq
	c.storeWait[id] = ch
	c.smu.Unlock()
	forget := func() bool {
		c.smu.Lock()
		defer c.smu.Unlock()
		_, waiting := c.storeWait[id]
		delete(c.storeWait, id)
		return waiting
	}
	if err := c.write(&pb.MachineMsg{Op: pb.MachineMsg_STORE_ASK, Id: id, Bytes: want}); err != nil {
		forget()
		return 0, fmt.Errorf("machine: asking for object store memory: %w", err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case g := <-ch:
		return g, nil
	case <-c.done:
		forget()
		return 0, fmt.Errorf("machine: the connection to the agent closed")
	case <-t.C:
		if !forget() {
			// The answer came meanwhile: give it back (this ask is over).
			if g := <-ch; g > 0 {
				_ = c.StoreGive(g)
			}
		}
		return 0, fmt.Errorf("machine: no answer from the agent in %v to an ask for object store memory", timeout)
	}
}

// StoreGive gives n bytes of the store grant back to the machine.
func (c *Client) StoreGive(n int64) error {
	if n <= 0 || c.storeTotal <= 0 {
		return nil
	}
	return c.write(&pb.MachineMsg{Op: pb.MachineMsg_STORE_GIVE, Bytes: n})
}

func (c *Client) write(m *pb.MachineMsg) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return WriteFrame(c.c, m)
}

// Ask asks for res (now: granted at once or denied); the answer comes through on with id.
func (c *Client) Ask(id uint64, res sched.Resources, now bool) error {
	return c.write(&pb.MachineMsg{Op: pb.MachineMsg_ASK, Id: id, Resources: tasks.ResourcesToPB(res), Now: now})
}

// Give gives res back.
func (c *Client) Give(res sched.Resources) error {
	return c.write(&pb.MachineMsg{Op: pb.MachineMsg_GIVE, Resources: tasks.ResourcesToPB(res)})
}

// Free is the machine's free resources as last heard (zero before the first FREE).
func (c *Client) Free() sched.Resources {
	if f := c.free.Load(); f != nil {
		return *f
	}
	return sched.Resources{}
}

// Done is closed when the connection is lost (the agent stopped) or closed.
func (c *Client) Done() <-chan struct{} { return c.done }

// Close closes the connection: the machine takes back what this client held.
func (c *Client) Close() error {
	err := c.c.Close()
	<-c.done
	return err
}
