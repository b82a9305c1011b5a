package lineage

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// AppendSpec appends the protobuf encoding of s to dst: the same bytes as
// proto.Marshal(s), so readers decode records with proto.Unmarshal. It exists because the
// lineage record is encoded on every submission, and protobuf-go's generic marshaller cost
// 13% of the CPU of a task submission loop (benchmarks/microbench single_client_tasks_async);
// this is several times cheaper. TestAppendSpecMatchesProto fills every field of
// pb.TaskSpec through reflection, so a field added to ray.proto and not handled here fails
// it.
func AppendSpec(dst []byte, s *pb.TaskSpec) []byte {
	dst = appendBytes(dst, 1, s.TaskId)
	dst = appendString(dst, 2, s.JobId)
	dst = appendString(dst, 3, s.Function)
	for _, a := range s.Args {
		dst = protowire.AppendTag(dst, 4, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(argSize(a)))
		dst = appendBytes(dst, 1, a.Data)
		dst = appendBytes(dst, 2, a.ObjectId)
		dst = appendBool(dst, 3, a.IsRef)
		dst = appendString(dst, 4, a.NodeId)
		dst = appendInt(dst, 5, a.Size)
	}
	for _, r := range s.Resources {
		dst = protowire.AppendTag(dst, 5, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(stringSize(1, r.Name)+intSize(2, r.Amount)))
		dst = appendString(dst, 1, r.Name)
		dst = appendInt(dst, 2, r.Amount)
	}
	dst = appendInt(dst, 6, int64(s.MaxRetries))
	dst = appendBool(dst, 7, s.RetryExceptions)
	dst = appendBytes(dst, 8, s.ParentTaskId)
	dst = appendPID(dst, 9, s.Owner)
	dst = appendInt(dst, 10, int64(s.NumReturns))
	dst = appendInt(dst, 11, int64(s.Attempt))
	dst = appendString(dst, 12, s.Strategy)
	dst = appendString(dst, 13, s.AffinityNode)
	dst = appendBool(dst, 14, s.AffinitySoft)
	dst = appendPID(dst, 15, s.ReplyTo)
	dst = appendString(dst, 16, s.PlacementGroup)
	dst = appendInt(dst, 17, int64(s.BundleIndex))
	return dst
}

func appendPID(dst []byte, num protowire.Number, p *pb.PID) []byte {
	if p == nil {
		return dst
	}
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(stringSize(1, p.Address)+stringSize(2, p.Id)))
	dst = appendString(dst, 1, p.Address)
	return appendString(dst, 2, p.Id)
}

func argSize(a *pb.Arg) int {
	n := stringSize(1, string(a.Data)) + stringSize(2, string(a.ObjectId)) + stringSize(4, a.NodeId) + intSize(5, a.Size)
	if a.IsRef {
		n += protowire.SizeTag(3) + 1
	}
	return n
}

func stringSize(num protowire.Number, s string) int {
	if len(s) == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(len(s))
}

func intSize(num protowire.Number, v int64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeVarint(uint64(v))
}

func appendBytes(dst []byte, num protowire.Number, b []byte) []byte {
	if len(b) == 0 {
		return dst
	}
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	return protowire.AppendBytes(dst, b)
}

func appendString(dst []byte, num protowire.Number, s string) []byte {
	if len(s) == 0 {
		return dst
	}
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	return protowire.AppendString(dst, s)
}

func appendInt(dst []byte, num protowire.Number, v int64) []byte {
	if v == 0 {
		return dst
	}
	dst = protowire.AppendTag(dst, num, protowire.VarintType)
	return protowire.AppendVarint(dst, uint64(v))
}

func appendBool(dst []byte, num protowire.Number, v bool) []byte {
	if !v {
		return dst
	}
	dst = protowire.AppendTag(dst, num, protowire.VarintType)
	return append(dst, 1)
}

// DecodeSpec decodes the lineage record of task id (read back from the GCS) and returns
// the spec with the IDs of the objects its arguments refer to. Besides the protobuf
// decoding, it checks what reconstruction relies on: the record is the task's own (a
// record under another task's key would re-create the wrong objects) and every reference
// argument names a valid object ID.
func DecodeSpec(id ids.TaskID, rec []byte) (*pb.TaskSpec, []ids.ObjectID, error) {
	spec := &pb.TaskSpec{}
	if err := proto.Unmarshal(rec, spec); err != nil {
		return nil, nil, fmt.Errorf("lineage: record of task %s is corrupt: %w", id, err)
	}
	if string(spec.TaskId) != string(id[:]) {
		return nil, nil, fmt.Errorf("lineage: record of task %s is corrupt: it describes task %x", id, spec.TaskId)
	}
	var refs []ids.ObjectID
	for i, a := range spec.Args {
		if !a.IsRef {
			continue
		}
		oid, err := ids.ObjectIDFromBytes(a.ObjectId)
		if err != nil {
			return nil, nil, fmt.Errorf("lineage: record of task %s is corrupt: argument %d: %w", id, i+1, err)
		}
		refs = append(refs, oid)
	}
	return spec, refs, nil
}
