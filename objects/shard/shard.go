package shard

import (
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/ids"
	"github.com/ray-go/ray/internal/pb"
)

// ObjectTable records where objects live in the GCS. Implementations must not block:
// records go out through the group-commit writer.
type ObjectTable interface {
	Record(id ids.ObjectID, entry []byte)
	Drop(id ids.ObjectID)
}

// Config is what a shard needs from its node.
type Config struct {
	Node   ids.NodeID
	Table  ObjectTable // may be nil (no object table records)
	Logger *slog.Logger
}

type object struct {
	data  []byte
	owner *pb.PID
}

// Shard is the grain's actor. Its state is owned by its mailbox.
type Shard struct {
	cfg   Config
	objs  map[ids.ObjectID]object
	bytes int64
}

// Props returns the props of a shard grain of the node described by cfg.
func Props(cfg Config) *actor.Props {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &Shard{cfg: cfg, objs: make(map[ids.ObjectID]object)}
	})
}

// Receive handles one message.
func (s *Shard) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *pb.PutObject:
		err := s.put(m)
		if ctx.Sender() != nil {
			ack := &pb.PutObjectAck{ObjectId: m.ObjectId}
			if err != nil {
				ack.Error = err.Error()
			}
			ctx.Respond(ack)
		}
	case *pb.GetObject:
		id, err := ids.ObjectIDFromBytes(m.ObjectId)
		reply := &pb.GetObjectReply{ObjectId: m.ObjectId}
		if err == nil {
			if o, ok := s.objs[id]; ok {
				reply.Data, reply.Found = o.data, true
			}
		}
		ctx.Respond(reply)
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
				s.bytes -= int64(len(o.data))
				delete(s.objs, id)
				if s.cfg.Table != nil {
					s.cfg.Table.Drop(id)
				}
			}
		}
	case *pb.StoreStats:
		ctx.Respond(&pb.StoreStatsReply{Objects: int64(len(s.objs)), Bytes: s.bytes})
	}
}

func (s *Shard) put(m *pb.PutObject) error {
	id, err := ids.ObjectIDFromBytes(m.ObjectId)
	if err != nil {
		return err
	}
	if _, dup := s.objs[id]; dup {
		return nil
	}
	s.objs[id] = object{data: m.Data, owner: m.Owner}
	s.bytes += int64(len(m.Data))
	if s.cfg.Table != nil {
		entry, err := proto.Marshal(&pb.ObjectEntry{ObjectId: m.ObjectId, NodeId: string(s.cfg.Node), Size: int64(len(m.Data)), Owner: m.Owner})
		if err == nil {
			s.cfg.Table.Record(id, entry)
		}
	}
	return nil
}
