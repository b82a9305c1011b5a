package machine

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks"
	"github.com/ray-go/ray/tasks/sched"
)

// FreeEvery is the shortest time between two FREE broadcasts.
const FreeEvery = 20 * time.Millisecond

// Server serves a Ledger on a Unix socket.
type Server struct {
	ledger *Ledger
	ln     net.Listener
	path   string
	logger *slog.Logger

	mu     sync.Mutex
	conns  map[string]*serverConn
	seq    int
	closed bool

	// rmu serializes reclaim, from reading the ledger's wants to writing them: two
	// connections' goroutines computing them at once could otherwise send a client an
	// older figure after a newer one, and the client would keep it until the ledger next
	// changed (a raylet that owes nothing by it keeps its CPU while another job waits).
	rmu sync.Mutex

	changed chan struct{}
	stop    chan struct{}
	wg      sync.WaitGroup
}

type serverConn struct {
	key  string
	name string
	c    net.Conn
	wmu  sync.Mutex
	want sched.Resources // the last RECLAIM sent (guarded by Server.mu)
}

func (c *serverConn) write(m *pb.MachineMsg) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := WriteFrame(c.c, m); err != nil {
		_ = c.c.Close() // its reader sees the close and drops the client
	}
}

// Serve listens on the Unix socket path (a stale file there is removed; the socket is
// made 0600) and serves ledger until Close.
func Serve(path string, ledger *Ledger, logger *slog.Logger) (*Server, error) {
	if logger == nil {
		logger = slog.Default()
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("machine: removing the stale socket %s: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("machine: listening on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("machine: %w", err)
	}
	s := &Server{ledger: ledger, ln: ln, path: path, logger: logger, conns: map[string]*serverConn{},
		changed: make(chan struct{}, 1), stop: make(chan struct{})}
	s.wg.Add(2)
	go s.accept()
	go s.broadcast()
	return s, nil
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

// Ledger is the ledger served.
func (s *Server) Ledger() *Ledger { return s.ledger }

// Close stops serving: the listener and every connection close (the clients' holdings
// are dropped), and Close waits for the server's goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	conns := make([]*serverConn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	close(s.stop)
	err := s.ln.Close()
	for _, c := range conns {
		_ = c.c.Close()
	}
	s.wg.Wait()
	_ = os.Remove(s.path)
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = c.Close()
			return
		}
		s.seq++
		sc := &serverConn{key: "c" + strconv.Itoa(s.seq), c: c}
		s.conns[sc.key] = sc
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(sc)
	}
}

func (s *Server) serve(c *serverConn) {
	defer s.wg.Done()
	defer func() {
		_ = c.c.Close()
		s.mu.Lock()
		delete(s.conns, c.key)
		s.mu.Unlock()
		s.deliver(s.ledger.Drop(c.key))
		s.logger.Debug("machine: a worker process left the ledger", "client", c.name)
	}()
	_ = c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	hello, err := ReadFrame(c.c)
	if err != nil || hello.Op != pb.MachineMsg_HELLO {
		s.logger.Warn("machine: refusing a connection that did not say HELLO", "err", err)
		return
	}
	_ = c.c.SetReadDeadline(time.Time{})
	c.name = hello.Client
	// FREE also says the machine's object store budget (bytes; 0: none shared): a client
	// whose agent says nothing (an older one) keeps a store budget of its own.
	storeTotal, _ := s.ledger.Store()
	c.write(&pb.MachineMsg{Op: pb.MachineMsg_FREE, Free: tasks.ResourcesToPB(s.ledger.Free()), Bytes: storeTotal})
	for {
		m, err := ReadFrame(c.c)
		if err != nil {
			return
		}
		switch m.Op {
		case pb.MachineMsg_ASK:
			s.deliver(s.ledger.Ask(c.key, m.Id, tasks.ResourcesFromPB(m.Resources), m.Now))
		case pb.MachineMsg_GIVE:
			s.deliver(s.ledger.Give(c.key, tasks.ResourcesFromPB(m.Resources)))
		case pb.MachineMsg_STORE_ASK:
			c.write(&pb.MachineMsg{Op: pb.MachineMsg_STORE_GRANT, Id: m.Id, Bytes: s.ledger.StoreAsk(c.key, m.Bytes)})
		case pb.MachineMsg_STORE_GIVE:
			s.ledger.StoreGive(c.key, m.Bytes)
		default:
			s.logger.Warn("machine: dropping a connection that sent an unknown frame", "client", c.name, "op", m.Op)
			return
		}
	}
}

// deliver sends the decisions to their clients and has FREE broadcast.
func (s *Server) deliver(ds []Decision) {
	if len(ds) > 0 {
		free := tasks.ResourcesToPB(s.ledger.Free())
		for _, d := range ds {
			s.mu.Lock()
			c := s.conns[d.Client]
			s.mu.Unlock()
			if c == nil {
				continue // gone: Drop gives back what it was granted
			}
			if d.Denied != "" {
				c.write(&pb.MachineMsg{Op: pb.MachineMsg_DENY, Id: d.ID, Message: d.Denied, Free: free})
			} else {
				c.write(&pb.MachineMsg{Op: pb.MachineMsg_GRANT, Id: d.ID, Resources: tasks.ResourcesToPB(d.Granted), Free: free})
			}
		}
	}
	s.reclaim()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// reclaim sends RECLAIM to the clients whose share of what the waiting asks need changed
// (Ledger.Wants; nothing: a RECLAIM of nothing, which ends the last one).
func (s *Server) reclaim() {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	wants := s.ledger.Wants()
	type send struct {
		c *serverConn
		w sched.Resources
	}
	var sends []send
	s.mu.Lock()
	for _, c := range s.conns {
		w := wants[c.key]
		if !w.Equal(c.want) {
			c.want = w
			sends = append(sends, send{c, w})
		}
	}
	s.mu.Unlock()
	for _, x := range sends {
		x.c.write(&pb.MachineMsg{Op: pb.MachineMsg_RECLAIM, Resources: tasks.ResourcesToPB(x.w)})
	}
}

// broadcast sends FREE to every client after changes, at most every FreeEvery.
func (s *Server) broadcast() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case <-s.changed:
		}
		// Every FREE says the store budget: a client that connects just now may hear this
		// one before its own first FREE.
		storeTotal, _ := s.ledger.Store()
		free := &pb.MachineMsg{Op: pb.MachineMsg_FREE, Free: tasks.ResourcesToPB(s.ledger.Free()), Bytes: storeTotal}
		s.mu.Lock()
		conns := make([]*serverConn, 0, len(s.conns))
		for _, c := range s.conns {
			conns = append(conns, c)
		}
		s.mu.Unlock()
		for _, c := range conns {
			c.write(free)
		}
		select {
		case <-s.stop:
			return
		case <-time.After(FreeEvery):
		}
	}
}
