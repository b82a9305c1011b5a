package shard

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime"
	"sort"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// ObjectTable records where objects live in the GCS. Implementations must not block:
// records go out through the group-commit writer.
type ObjectTable interface {
	Record(id ids.ObjectID, entry []byte)
	Drop(id ids.ObjectID)
}

// Config is what a shard needs from its node.
type Config struct {
	Node  ids.NodeID
	Table ObjectTable // may be nil (no object table records)
	// Budget is how many bytes of objects the shard keeps in memory; beyond it the least
	// recently used objects are spilled to SpillDir (0: no limit, nothing spilled). With
	// a Grant, Budget is the budget shared with other stores (the machine's), and the
	// shard keeps in memory what it holds a grant for (grant.go).
	Budget   int64
	SpillDir string
	// Grant, when set (with a Budget), is the shard's share of a budget shared with the
	// stores of the machine's other processes: see Grant.
	Grant Grant
	// SpillWorkers bounds the spill files written at once, and the spill files read back
	// at once (0: GOMAXPROCS). Each writer compresses its objects on a core of its own.
	SpillWorkers int
	Logger       *slog.Logger
	// Pressure, when set, is called when a put finds the shard's memory over
	// PressureFraction of its Budget (a put that would take it there, one that waits for
	// spilling, or one refused), and again every pressureGap while the memory stays over
	// it: objects whose last reference a program dropped without Release are freed only
	// when a garbage collection in the process that dropped it finds the reference gone,
	// and the node asks for one (core.Core.CollectForStore, which backs off by itself). It
	// runs on the shard's mailbox: it must not block.
	Pressure func()

	// write writes one spill file (writeSpill unless a test of the package sets it).
	write func(path string, id ids.ObjectID, data []byte) (int64, uint32, error)
}

type object struct {
	data     []byte // nil once spilled
	owner    *pb.PID
	size     int64
	used     uint64 // LRU clock of the last put or read
	spill    string // the spill file, once written (kept while a pulled copy is in memory)
	spilling bool   // in a spill batch being written

	// Pulls (pull.go), and the check of a spill file: a spilled object always has it.
	crc      uint32 // CRC-32C of data, once hasCRC
	hasCRC   bool
	loading  bool         // a restore or checksum for pulls is running
	waiters  []pullWaiter // pulls waiting for it
	pinUntil time.Time    // a restored copy being pulled is not evicted before this
}

// Shard is the grain's actor. Its state is owned by its mailbox; spill writes, restores
// and file removals run on goroutines and report back by message.
type Shard struct {
	cfg   Config
	objs  map[ids.ObjectID]*object
	bytes int64 // all objects
	mem   int64 // in memory
	clock uint64
	// budget is what the shard keeps in memory before it spills: cfg.Budget, or with a
	// Grant what it holds of it, taken and given back in chunks (grant.go).
	budget int64
	chunk  int64

	// inflight spill batches (at most cfg.SpillWorkers), holding inflightB bytes.
	inflight    int
	inflightB   int64
	spilled     int64 // objects on disk
	spilledB    int64
	spillErrors int64
	// attempt numbers the spill attempts: it moves on at each failure, so that of the
	// batches started together only the first to fail counts (one spill error, one
	// back-off per attempt), and a success clears the failure only if it was started after.
	attempt uint64
	// files numbers the spill files written (spillPath).
	files uint64
	// failing: spilling failed in the last attempt (a full disk, a missing directory). The
	// next attempt waits until retryAt (a back-off that doubles up to maxSpillBackoff) and
	// is one batch alone, so a full disk costs one attempt and one compression per
	// back-off, not one per put, object or worker; the failure is logged once, when it
	// starts, and once when it ends.
	failing struct {
		err error
		// need is what the failed batch needed: the bytes of its objects.
		need    int64
		retryAt time.Time
		wait    time.Duration
	}
	// admits are the producers waiting for their PutObjectAck: a put that leaves the store
	// over its budget is answered once spilling brings it back under (backpressure).
	admits []admit

	// high is the memory over which a put calls cfg.Pressure (PressureFraction of the
	// budget; no budget or no Pressure: never), and pressAgain the time before which it
	// is not called again; rechecking: a pressureCheck is due.
	high       int64
	pressAgain time.Time
	rechecking bool

	compress chan struct{} // bounds concurrent s2 compressions of pulled chunks
	restore  chan struct{} // bounds concurrent reads of spill files (Gets and pulls)
	stopped  bool          // the grain is stopping: no more spill batches
}

// admit is a put's acknowledgement held back until the store is under budget.
type admit struct {
	to  *actor.PID
	ack *pb.PutObjectAck
}

// releaseAdmits answers the held puts once the store is under budget, or when nothing
// more will be spilled (no candidates, or spilling failed): a producer never waits for
// ever on a store that cannot spill.
func (s *Shard) releaseAdmits(ctx actor.Context) {
	if len(s.admits) == 0 || s.mem > s.budget && s.inflight > 0 {
		return
	}
	for _, a := range s.admits {
		ctx.Send(a.to, a.ack)
	}
	s.admits = nil
}

// spillJob is one object to write; spillDone reports a batch of them.
type spillJob struct {
	id   ids.ObjectID
	o    *object // the object written: one freed meanwhile and put again is another
	data []byte
	path string
}

type spillResult struct {
	id   ids.ObjectID
	o    *object
	path string
	sum  uint32 // CRC-32C of the bytes written
	err  error
}

type spillDone struct {
	results []spillResult
	attempt uint64 // s.attempt when the batch started
	bytes   int64  // the batch's bytes (counted in inflightB)
}

// spillRetry: a back-off after a failed attempt is over.
type spillRetry struct{}

// errNotTried marks the jobs of a batch after one failed: they are not attempted (a full
// disk would fail them all, each after its compression).
var errNotTried = errors.New("not tried: an earlier spill of the batch failed")

const (
	minSpillBackoff = time.Second
	maxSpillBackoff = 30 * time.Second
)

// PressureFraction is the share of its budget over which the shard's memory is under
// pressure (Config.Pressure): Ray's raylet triggers a global garbage collection over 70%
// of the object store (high_plasma_storage_usage).
const PressureFraction = 0.7

// pressureGap is the least time between two calls of Config.Pressure: the collections it
// asks for back off further by themselves (a store full of live objects must not make
// every process collect continuously).
const pressureGap = time.Second

// Props returns the props of a shard grain of the node described by cfg.
func Props(cfg Config) *actor.Props {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SpillWorkers <= 0 {
		cfg.SpillWorkers = runtime.GOMAXPROCS(0)
	}
	if cfg.write == nil {
		cfg.write = writeSpill
	}
	high := int64(math.MaxInt64)
	if cfg.Budget > 0 && cfg.Pressure != nil {
		high = int64(float64(cfg.Budget) * PressureFraction)
	}
	budget, chunk := cfg.Budget, int64(0)
	if cfg.Grant != nil && cfg.Budget > 0 {
		budget, chunk = 0, GrantChunk(cfg.Budget)
	} else {
		cfg.Grant = nil
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &Shard{cfg: cfg, objs: make(map[ids.ObjectID]*object), high: high, budget: budget, chunk: chunk,
			compress: make(chan struct{}, runtime.GOMAXPROCS(0)),
			restore:  make(chan struct{}, cfg.SpillWorkers)}
	})
}

// Receive handles one message.
func (s *Shard) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *pb.PutObject:
		if s.mem+int64(len(m.Data)) > s.high { // one comparison a put while under it
			s.pressed(ctx)
		}
		err := s.refuse(len(m.Data))
		if need := s.mem + int64(len(m.Data)); need > s.budget && s.cfg.Grant != nil && err == nil {
			s.grow(need) // not granted: the put goes on and the shard spills
		}
		if err == nil {
			err = s.put(m)
		}
		s.maybeSpill(ctx)
		if ctx.Sender() != nil {
			ack := &pb.PutObjectAck{ObjectId: m.ObjectId}
			if err != nil {
				ack.Error = err.Error()
			}
			if err == nil && s.cfg.Budget > 0 && s.mem > s.budget && s.inflight > 0 {
				// Over budget while spills are written: the producer waits (backpressure).
				s.admits = append(s.admits, admit{to: ctx.Sender(), ack: ack})
			} else {
				ctx.Respond(ack)
			}
		}
	case *pb.GetObject:
		s.get(ctx, m)
	case *pb.PullObject:
		s.pull(ctx, m)
	case *pullLoaded:
		s.pullLoaded(ctx, m)
	case *spillDone:
		s.spillDone(ctx, m)
	case pressureCheck:
		s.rechecking = false
		if s.mem > s.high && !s.stopped {
			s.pressed(ctx)
		}
	case spillRetry:
		s.maybeSpill(ctx)
		s.releaseAdmits(ctx)
	case *actor.Stopping:
		s.stopped = true // a retry due later must not write into a node directory being removed
	case *pb.FreeObjects:
		defer func() {
			if ctx.Sender() != nil { // the owner waits for large frees (see core)
				ctx.Respond(&pb.PutObjectAck{})
			}
		}()
		for _, b := range m.ObjectIds {
			id, err := ids.ObjectIDFromBytes(b)
			if err != nil {
				continue
			}
			if o, ok := s.objs[id]; ok {
				s.drop(id, o)
			}
		}
		s.releaseAdmits(ctx)
		s.shrink()
	case *pb.StoreStats:
		ctx.Respond(s.stats(int(m.Top)))
	}
}

// pressureCheck: pressureGap after a call of Config.Pressure, the shard looks again.
type pressureCheck struct{}

// pressed tells the node that the shard's memory is under pressure (Config.Pressure), at
// most once per pressureGap, and looks again pressureGap later: a collection that ran at
// once may not have found refs dropped just before (the root package's nursery gives a
// ref its finalizer 50-100 ms after its making), and no put may come to ask again.
func (s *Shard) pressed(ctx actor.Context) {
	now := time.Now()
	if now.Before(s.pressAgain) {
		return
	}
	s.pressAgain = now.Add(pressureGap)
	s.cfg.Pressure()
	if !s.rechecking {
		s.rechecking = true
		self, root := ctx.Self(), ctx.ActorSystem().Root
		time.AfterFunc(pressureGap, func() { root.Send(self, pressureCheck{}) })
	}
}

// drop forgets an object (in memory, or its spill file).
func (s *Shard) drop(id ids.ObjectID, o *object) {
	s.bytes -= o.size
	if o.data != nil {
		s.mem -= o.size
	} else if o.spill != "" {
		s.spilled--
		s.spilledB -= o.size
	}
	if o.spill != "" {
		path := o.spill
		go os.Remove(path)
	}
	delete(s.objs, id)
	if s.cfg.Table != nil {
		s.cfg.Table.Drop(id)
	}
}

func (s *Shard) get(ctx actor.Context, m *pb.GetObject) {
	id, err := ids.ObjectIDFromBytes(m.ObjectId)
	reply := &pb.GetObjectReply{ObjectId: m.ObjectId}
	o, ok := s.objs[id]
	if err != nil || !ok {
		ctx.Respond(reply)
		return
	}
	s.clock++
	o.used = s.clock
	if o.data != nil {
		reply.Data, reply.Found = o.data, true
		ctx.Respond(reply)
		return
	}
	// Spilled: read it back off the mailbox; the reader answers the asker directly.
	sender, root, rec, sem := ctx.Sender(), ctx.ActorSystem().Root, o.record(id), s.restore
	if sender == nil {
		return
	}
	go func() {
		// At most SpillWorkers files are read and decompressed at once; the others wait
		// here (their askers wait for the reply: backpressure, not memory).
		sem <- struct{}{}
		data, err := readSpill(rec)
		<-sem
		if err != nil {
			reply.Error = fmt.Sprintf("object %s: %v", id, err)
		} else {
			reply.Data, reply.Found = data, true
		}
		root.Send(sender, reply)
	}()
}

// record is what the shard knows of o's spill file, to check it against.
func (o *object) record(id ids.ObjectID) spillRecord {
	return spillRecord{path: o.spill, id: id, size: o.size, sum: o.crc}
}

// minSpillBatch: a spill batch takes objects until it holds this many bytes (or the
// store is back under target), so that small objects do not cost a goroutine each.
const minSpillBatch = 4 << 20

// maybeSpill starts writing the least recently used objects to disk when memory is over
// budget, until it would be back under 90% of it. Up to cfg.SpillWorkers batches are
// written at once, each on a goroutine of its own (off the mailbox), and each that ends
// makes room for the next: compression, the costly part, runs on every core. Objects stay
// readable from memory until their file is complete. After a failure, the attempt after
// the back-off is one batch alone.
func (s *Shard) maybeSpill(ctx actor.Context) {
	if s.cfg.Budget <= 0 || s.cfg.SpillDir == "" || s.stopped {
		return
	}
	// Start when memory goes over budget; once started, go on down to 90% of it.
	if s.inflight == 0 && s.mem <= s.budget {
		return
	}
	workers := s.cfg.SpillWorkers
	if s.failing.err != nil {
		if time.Now().Before(s.failing.retryAt) {
			return // backing off: spillRetry comes when it is over
		}
		workers = 1
	}
	if s.inflight >= workers {
		return
	}
	target := s.mem - s.inflightB - s.budget*9/10
	if target <= 0 {
		return
	}
	type cand struct {
		id ids.ObjectID
		o  *object
	}
	var cands []cand
	now := time.Now()
	for id, o := range s.objs {
		if o.data != nil && !o.spilling && !o.pinUntil.After(now) {
			cands = append(cands, cand{id, o})
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].o.used < cands[j].o.used })
	// The bytes still to free are shared among the free workers, each batch at least
	// minSpillBatch.
	share := max(target/int64(workers-s.inflight), minSpillBatch)
	var batch []spillJob
	var batchB int64
	for _, c := range cands {
		if target <= 0 || s.inflight >= workers {
			break
		}
		if c.o.spill != "" {
			// A copy restored for a pull: its file is still there, so evicting it is free.
			c.o.data = nil
			s.mem -= c.o.size
			s.spilled++
			s.spilledB += c.o.size
			target -= c.o.size
			continue
		}
		c.o.spilling = true
		s.files++
		batch = append(batch, spillJob{id: c.id, o: c.o, data: c.o.data, path: spillPath(s.cfg.SpillDir, c.id, s.files)})
		batchB += c.o.size
		target -= c.o.size
		if batchB >= share {
			s.startSpill(ctx, batch, batchB)
			batch, batchB = nil, 0
		}
	}
	if len(batch) > 0 {
		s.startSpill(ctx, batch, batchB)
	}
}

// startSpill writes a batch of objects on a goroutine, in order, and stops at the first
// failure; spillDone reports it.
func (s *Shard) startSpill(ctx actor.Context, jobs []spillJob, bytes int64) {
	s.inflight++
	s.inflightB += bytes
	self, root, attempt, write := ctx.Self(), ctx.ActorSystem().Root, s.attempt, s.cfg.write
	go func() {
		res := make([]spillResult, len(jobs))
		var failed error
		for i, j := range jobs {
			err := failed
			var sum uint32
			if err == nil {
				_, sum, err = write(j.path, j.id, j.data)
				failed = err
			} else {
				err = errNotTried
			}
			res[i] = spillResult{id: j.id, o: j.o, path: j.path, sum: sum, err: err}
		}
		root.Send(self, &spillDone{results: res, attempt: attempt, bytes: bytes})
	}()
}

func (s *Shard) spillDone(ctx actor.Context, m *spillDone) {
	s.inflight--
	s.inflightB -= m.bytes
	var failed error
	for _, r := range m.results {
		o, ok := s.objs[r.id]
		if !ok || o != r.o {
			// Freed while it was written (and perhaps put again since: the new copy is
			// not the one written, and its own spill, if any, writes a file of its own):
			// the file is nobody's.
			if r.err == nil {
				go os.Remove(r.path)
			}
			continue
		}
		o.spilling = false
		if r.err != nil {
			if r.err != errNotTried {
				failed = r.err
			}
			continue
		}
		o.data, o.spill = nil, r.path
		o.crc, o.hasCRC = r.sum, true // what the file must give back
		s.mem -= o.size
		s.spilled++
		s.spilledB += o.size
	}
	switch {
	case failed != nil && m.attempt == s.attempt:
		// The first failure of this attempt: counted, and a back-off. (The other batches
		// started with it fail too, or not; either way, they do not count again.)
		s.attempt++
		s.spillErrors++
		s.spillFailed(ctx, failed, m.bytes)
	case failed == nil && m.attempt == s.attempt && s.failing.err != nil:
		s.cfg.Logger.Info("shard: spilling to disk works again", "dir", s.cfg.SpillDir, "spill_errors", s.spillErrors)
		s.failing.err, s.failing.wait = nil, 0
	}
	s.maybeSpill(ctx)
	s.releaseAdmits(ctx)
	s.shrink()
}

// spillFailed starts or extends the back-off after a failed attempt, and logs the condition
// when it starts: the directory, the error and the free space there.
func (s *Shard) spillFailed(ctx actor.Context, err error, need int64) {
	if s.failing.err == nil {
		s.cfg.Logger.Warn("shard: cannot spill objects to disk; they stay in memory, over the store's budget, and spilling is retried with a back-off (make room in the spill directory, or check its permissions)",
			"dir", s.cfg.SpillDir, "err", err, "spill_bytes", need, "free_space", spillFree(err, s.cfg.SpillDir),
			"memory", s.mem, "budget", s.cfg.Budget)
	}
	s.failing.err, s.failing.need = err, need
	s.failing.wait = min(max(2*s.failing.wait, minSpillBackoff), maxSpillBackoff)
	s.failing.retryAt = time.Now().Add(s.failing.wait)
	self, root := ctx.Self(), ctx.ActorSystem().Root
	time.AfterFunc(s.failing.wait, func() { root.Send(self, spillRetry{}) })
}

// hardLimitFactor: while spilling fails, a put that would take the store's memory over
// this many times its budget is refused (with what to do) instead of growing the process
// without bound.
const hardLimitFactor = 2

// refuse says why a put of size bytes cannot be taken now, or nil.
func (s *Shard) refuse(size int) error {
	if s.failing.err == nil || s.cfg.Budget <= 0 || s.mem+int64(size) <= hardLimitFactor*s.cfg.Budget {
		return nil
	}
	return fmt.Errorf("the object store of node %s holds %d bytes in memory, over %dx its budget of %d, and cannot spill to %s (a spill of %d bytes failed: %v; free space there when it failed: %s): release objects you no longer need, or make room in the spill directory (or give the node a larger one)",
		s.cfg.Node, s.mem, hardLimitFactor, s.cfg.Budget, s.cfg.SpillDir, s.failing.need, s.failing.err, spillFree(s.failing.err, s.cfg.SpillDir))
}

// spillFree is the free space in dir when the spill write err failed, if it was measured
// then (before the partial file was removed), else now.
func spillFree(err error, dir string) string {
	if we, ok := errors.AsType[*spillWriteError](err); ok && we.free != "" {
		return we.free
	}
	return freeSpace(dir)
}

func (s *Shard) put(m *pb.PutObject) error {
	id, err := ids.ObjectIDFromBytes(m.ObjectId)
	if err != nil {
		return err
	}
	if _, dup := s.objs[id]; dup {
		return nil
	}
	s.clock++
	size := int64(len(m.Data))
	data := m.Data
	if data == nil {
		data = []byte{} // nil data means spilled; an empty object is in memory
	}
	s.objs[id] = &object{data: data, owner: m.Owner, size: size, used: s.clock}
	s.bytes += size
	s.mem += size
	if s.cfg.Table != nil {
		entry, err := proto.Marshal(&pb.ObjectEntry{ObjectId: m.ObjectId, NodeId: string(s.cfg.Node), Size: int64(len(m.Data)), Owner: m.Owner})
		if err == nil {
			s.cfg.Table.Record(id, entry)
		}
	}
	return nil
}

// stats reports the shard's usage and, with top > 0, its largest objects.
func (s *Shard) stats(top int) *pb.StoreStatsReply {
	r := &pb.StoreStatsReply{Objects: int64(len(s.objs)), Bytes: s.bytes, MemoryBytes: s.mem,
		SpilledObjects: s.spilled, SpilledBytes: s.spilledB, SpillErrors: s.spillErrors}
	if top <= 0 {
		return r
	}
	type entry struct {
		id ids.ObjectID
		o  *object
	}
	list := make([]entry, 0, len(s.objs))
	for id, o := range s.objs {
		list = append(list, entry{id, o})
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].o.size != list[j].o.size {
			return list[i].o.size > list[j].o.size
		}
		return string(list[i].id[:]) < string(list[j].id[:])
	})
	for _, e := range list[:min(top, len(list))] {
		id := e.id
		r.Largest = append(r.Largest, &pb.StoredObject{ObjectId: id[:], Size: e.o.size, Owner: e.o.owner, Spilled: e.o.data == nil})
	}
	return r
}
