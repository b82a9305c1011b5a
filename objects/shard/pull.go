package shard

import (
	"fmt"
	"hash/crc32"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/klauspost/compress/s2"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// Serving chunks to pullers (package objects/transfer is the other side).
const (
	// MaxPullChunk is the most bytes one PullObject may ask for: a chunk stays far below
	// the 4 MiB gRPC message limit (DESIGN §2).
	MaxPullChunk = 1 << 20
	// minCompress is the smallest chunk worth trying s2 on.
	minCompress = 4 << 10
	// inlineCRC is the largest object whose checksum is computed in the mailbox (~0.2 ms
	// at CRC-32C speeds); larger ones are summed on a goroutine.
	inlineCRC = 4 << 20
	// pinLease is how long a copy restored for a pull stays in memory after its last
	// chunk request, unless its final chunk was served.
	pinLease = 10 * time.Second
)

// pullWaiter is a pull that waits for its object's checksum or restore.
type pullWaiter struct {
	to *actor.PID
	m  *pb.PullObject
}

// pullLoaded reports a checksum or a restore run for pulls of o. data is the object
// (read back from its spill file, or the in-memory bytes that were summed).
type pullLoaded struct {
	id   ids.ObjectID
	o    *object
	data []byte
	crc  uint32
	err  error
}

// pull answers a PullObject: a chunk of an object with the whole object's size and
// CRC-32C. An object's checksum is computed once and kept; a spilled object is read back
// on a goroutine and kept in memory while it is being pulled.
func (s *Shard) pull(ctx actor.Context, m *pb.PullObject) {
	to := ctx.Sender()
	if to == nil {
		return
	}
	reply := &pb.PullObjectReply{ObjectId: m.ObjectId, Offset: m.Offset}
	if m.Length <= 0 || m.Length > MaxPullChunk {
		reply.Error = fmt.Sprintf("shard: pull length %d is outside 1..%d", m.Length, MaxPullChunk)
		ctx.Respond(reply)
		return
	}
	id, err := ids.ObjectIDFromBytes(m.ObjectId)
	if err != nil {
		reply.Error = fmt.Sprintf("shard: pull: %v", err)
		ctx.Respond(reply)
		return
	}
	o, ok := s.objs[id]
	if !ok {
		ctx.Respond(reply)
		return
	}
	if m.Offset < 0 || m.Offset > o.size {
		reply.Error = fmt.Sprintf("shard: pull of object %s at offset %d, outside its %d bytes", id, m.Offset, o.size)
		ctx.Respond(reply)
		return
	}
	s.clock++
	o.used = s.clock
	if o.data != nil && o.hasCRC {
		s.serve(ctx, to, m, o, o.data)
		return
	}
	o.waiters = append(o.waiters, pullWaiter{to: to, m: m})
	if o.loading {
		return
	}
	if o.data != nil && o.size <= inlineCRC {
		o.crc, o.hasCRC = crc32.Checksum(o.data, castagnoli), true
		s.serveWaiters(ctx, o, o.data)
		return
	}
	o.loading = true
	self, root := ctx.Self(), ctx.ActorSystem().Root
	data, rec, sem := o.data, o.record(id), s.restore
	go func() {
		msg := &pullLoaded{id: id, o: o, data: data}
		if data != nil {
			msg.crc = crc32.Checksum(data, castagnoli)
		} else {
			sem <- struct{}{} // as a Get: at most SpillWorkers files read at once
			msg.data, msg.crc, msg.err = readSpillSum(rec)
			<-sem
		}
		root.Send(self, msg)
	}()
}

// pullLoaded takes a checksum or restored copy and answers the pulls that waited for it.
func (s *Shard) pullLoaded(ctx actor.Context, m *pullLoaded) {
	o := m.o
	o.loading = false
	if cur, ok := s.objs[m.id]; !ok || cur != o {
		// Freed meanwhile.
		for _, w := range o.waiters {
			ctx.Send(w.to, &pb.PullObjectReply{ObjectId: w.m.ObjectId, Offset: w.m.Offset})
		}
		o.waiters = nil
		return
	}
	if m.err != nil {
		// As GetObject: an error naming the object, never wrong bytes. Nothing is kept, so
		// the next pull tries the file again.
		msg := fmt.Sprintf("object %s: %v", m.id, m.err)
		for _, w := range o.waiters {
			ctx.Send(w.to, &pb.PullObjectReply{ObjectId: w.m.ObjectId, Offset: w.m.Offset, Error: msg})
		}
		o.waiters = nil
		return
	}
	o.crc, o.hasCRC = m.crc, true
	restored := false
	if o.data == nil {
		// Spilled (before or while it was summed): keep the copy in memory while it is
		// pulled. Its file stays, so evicting it again costs no write.
		o.data = m.data
		o.pinUntil = time.Now().Add(pinLease)
		s.mem += o.size
		s.spilled--
		s.spilledB -= o.size
		restored = true
	}
	s.serveWaiters(ctx, o, o.data)
	if restored {
		s.maybeSpill(ctx)
	}
}

func (s *Shard) serveWaiters(ctx actor.Context, o *object, data []byte) {
	ws := o.waiters
	o.waiters = nil
	for _, w := range ws {
		s.serve(ctx, w.to, w.m, o, data)
	}
}

// serve sends one chunk of o (whose bytes are data and whose checksum is known). The
// offset has been checked against the object's size.
func (s *Shard) serve(ctx actor.Context, to *actor.PID, m *pb.PullObject, o *object, data []byte) {
	size := int64(len(data))
	end := min(m.Offset+int64(m.Length), size)
	reply := &pb.PullObjectReply{ObjectId: m.ObjectId, Offset: m.Offset, Size: size, Crc32C: o.crc, Found: true}
	chunk := data[m.Offset:end]
	if o.spill != "" {
		// A restored copy: pinned while its pull goes on, evictable once its end is sent.
		if end == size {
			o.pinUntil = time.Time{}
			defer s.maybeSpill(ctx)
		} else {
			o.pinUntil = time.Now().Add(pinLease)
		}
	}
	if !m.AllowS2 || len(chunk) < minCompress {
		reply.Data = chunk
		ctx.Send(to, reply)
		return
	}
	// s2 runs at ~0.5-4 GB/s: off the mailbox, at most GOMAXPROCS chunks at a time.
	root, sem := ctx.ActorSystem().Root, s.compress
	go func() {
		sem <- struct{}{}
		enc := s2.Encode(nil, chunk)
		<-sem
		if len(enc) <= len(chunk)-len(chunk)/8 {
			reply.Data, reply.Compressed = enc, true
		} else {
			reply.Data = chunk
		}
		root.Send(to, reply)
	}()
}
