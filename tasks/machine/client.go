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
}

// Dial connects to the ledger served at path, introducing itself as name (its node ID).
// on is called, from the client's reader goroutine and in order, with every GRANT, DENY
// and FREE the machine sends (after Free is updated); Done is closed when the connection is lost.
func Dial(path, name string, on func(*pb.MachineMsg)) (*Client, error) {
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("machine: cannot reach the machine's ledger at %s (is the node agent that started this process running?): %w", path, err)
	}
	cl := &Client{c: c, done: make(chan struct{})}
	if err := cl.write(&pb.MachineMsg{Op: pb.MachineMsg_HELLO, Client: name}); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("machine: the ledger at %s: %w", path, err)
	}
	go func() {
		defer close(cl.done)
		for {
			m, err := ReadFrame(c)
			if err != nil {
				return
			}
			switch m.Op {
			case pb.MachineMsg_GRANT, pb.MachineMsg_DENY, pb.MachineMsg_FREE:
				free := tasks.ResourcesFromPB(m.Free)
				cl.free.Store(&free)
				on(m)
			case pb.MachineMsg_RECLAIM:
				on(m)
			}
		}
	}()
	return cl, nil
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
