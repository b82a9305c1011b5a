package pb

// Message bounds. Every message the runtime sends between processes stays far below the
// gRPC receive limit (internal/assembly/node's maxMessageBytes), which protoactor's
// endpoint writer must respect for a whole batch of messages at once: a batch over the
// limit is dropped, silently, with every message in it. So what one message may carry is
// bounded where it is made:
//   - by-value task and actor call arguments: at most InlineArgBytes each and
//     InlineArgsTotal per call; bigger ones travel through the object store by reference
//     (internal/assembly/core, storeLargeArgs), as do results over the inline limit
//     (tasks/worker); the values of ref arguments that the owner holds in memory go
//     inline only within the same InlineArgsTotal, the others are moved to the store
//     first (internal/assembly/core, dispatch);
//   - lists of specs, calls and results go in messages of at most BatchBytes each, one
//     item more only when a single item is larger (SplitSpecs, SplitResults);
//   - lists of object IDs go in messages of at most MaxIDsPerMessage.
const (
	// InlineArgBytes is the largest by-value argument a spec carries (Ray's
	// max_direct_call_object_size, 100 KiB).
	InlineArgBytes = 100 << 10
	// InlineArgsTotal bounds the by-value bytes of one spec's arguments together: past
	// it, the largest go through the object store.
	InlineArgsTotal = 512 << 10
	// BatchBytes is what one message of several specs, calls or results carries at most
	// (beyond its first item).
	BatchBytes = 1 << 20
	// MaxIDsPerMessage bounds the object IDs of one message (32 KiB IDs: 896 KiB).
	MaxIDsPerMessage = 32 << 10
)

// specOverhead is what a spec's fields other than its argument values take on the wire,
// generously: IDs, function name, PIDs and resources are a few hundred bytes.
const specOverhead = 1 << 10

// SpecBytes is an upper estimate of s's encoded size, cheap enough for every spec: its
// argument values dominate, the rest is counted as specOverhead (plus the function name,
// which the caller chose).
func SpecBytes(s *TaskSpec) int {
	if s == nil {
		return 0
	}
	n := specOverhead + len(s.Function)
	for _, a := range s.Args {
		n += len(a.Data) + len(a.ObjectId) + len(a.NodeId) + 16
	}
	return n
}

// ResultBytes is an upper estimate of r's encoded size.
func ResultBytes(r *TaskResult) int {
	if r == nil {
		return 0
	}
	n := 256 + len(r.Data) + len(r.Meta) + len(r.NodeId) + len(r.TaskId) + len(r.LeaseId)
	for _, b := range r.Nested {
		n += len(b) + 4
	}
	for _, v := range r.Returns {
		n += 32 + len(v.Data) + len(v.NodeId)
		for _, b := range v.Nested {
			n += len(b) + 4
		}
	}
	if r.Error != nil {
		e := r.Error
		n += 64 + len(e.Message) + len(e.Function) + len(e.Stack) + len(e.NodeId) + len(e.TaskId) + len(e.Causes) +
			len(e.ErrorType) + len(e.ErrorData)
	}
	return n
}

// Split cuts items into consecutive runs of at most max bytes each (by size), every run
// holding at least one item, and calls send with each run in order. The common case, all
// items within max, is one call with items itself and no allocation.
func Split[T any](items []T, size func(T) int, max int, send func([]T)) {
	start, bytes := 0, 0
	for i, it := range items {
		n := size(it)
		if i > start && bytes+n > max {
			send(items[start:i])
			start, bytes = i, 0
		}
		bytes += n
	}
	if start < len(items) {
		send(items[start:])
	}
}

// SplitCount is Split by count: runs of at most max items.
func SplitCount[T any](items []T, max int, send func([]T)) {
	for len(items) > max {
		send(items[:max])
		items = items[max:]
	}
	if len(items) > 0 {
		send(items)
	}
}
