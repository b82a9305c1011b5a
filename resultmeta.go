package ray

import (
	"context"
	"errors"
	"fmt"
)

// MaxResultMetadata bounds what SetResultMetadata takes.
const MaxResultMetadata = 64 << 10

// SetResultMetadata attaches meta to the result of the running task or actor method: a small
// description of the result (row counts, sizes, timings) its owner reads with RefInfo without
// fetching the result. The last call before the task returns wins; a task that fails attaches
// nothing. A re-executed task (retry, lineage reconstruction) attaches its own. At most
// MaxResultMetadata bytes; outside a task it returns an error.
func SetResultMetadata(ctx context.Context, meta []byte) error {
	tc, err := taskContext(ctx)
	if err != nil {
		return err
	}
	if tc.Spec == nil {
		return errors.New("ray: SetResultMetadata is called inside a task or actor method; a driver has no result to describe")
	}
	if len(meta) > MaxResultMetadata {
		return fmt.Errorf("ray: result metadata of %d bytes is over the %d byte limit; keep bulky data in the result itself", len(meta), MaxResultMetadata)
	}
	tc.Meta = append([]byte(nil), meta...)
	return nil
}

// ObjectInfo is what RefInfo tells of an object.
type ObjectInfo struct {
	// Ready is true once the object exists (or its task failed: then Err is set).
	Ready bool
	// Size is the encoded size in bytes (0 until ready).
	Size int64
	// NodeID is the node whose object store holds it; "" for a small object kept inline
	// by its owner.
	NodeID string
	// Metadata is what the producing task attached with SetResultMetadata.
	Metadata []byte
	// Err is the failure of the producing task, if it failed.
	Err error
}

// RefInfo tells, without blocking or fetching the value, whether r's object is ready, its
// size, the node that holds it and the metadata its task attached (SetResultMetadata).
// Only the process that owns the object (it submitted the task or called Put) keeps this;
// elsewhere RefInfo returns an error.
func RefInfo(ctx context.Context, r Ref) (ObjectInfo, error) {
	tc, err := taskContext(ctx)
	if err != nil {
		return ObjectInfo{}, err
	}
	h := r.ref()
	if h == nil {
		return ObjectInfo{}, errors.New("ray: RefInfo of a zero ObjectRef")
	}
	if h.err != nil {
		return ObjectInfo{}, h.err
	}
	if h.owner != nil && h.owner.Id != tc.Core.OwnerID() {
		return ObjectInfo{}, fmt.Errorf("ray: RefInfo: object %s is owned by another process (%s); only its owner keeps its size and metadata", h.id, h.owner.Address)
	}
	v, ready, known := tc.Core.Objects().Get(h.id)
	if !known {
		return ObjectInfo{}, fmt.Errorf("ray: RefInfo: object %s is not known here (released, or owned by another process)", h.id)
	}
	if !ready {
		return ObjectInfo{}, nil
	}
	info := ObjectInfo{Ready: true, Size: v.Size, NodeID: string(v.Node), Metadata: v.Meta}
	if v.Err != nil {
		info.Err = fromInfo(v.Err)
	}
	return info, nil
}
