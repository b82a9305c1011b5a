package tasks

import "context"

// ownedKey is the context key of WithOwnedArgs.
type ownedKey struct{}

// OwnedArgMin is the size from which a task's decoding asks ArgOwned: below it a copy
// costs less than the question.
const OwnedArgMin = 64 << 10

// WithOwnedArgs returns ctx marking the arguments a task's function may keep without
// copying them: bit i of mask set means args[i] is the task's alone (its bytes were read
// from another node into a buffer nothing else holds), so its decoding may alias them
// (codec.UnmarshalOwned). Arguments from index 64 on are never marked.
func WithOwnedArgs(ctx context.Context, mask uint64) context.Context {
	if mask == 0 {
		return ctx
	}
	return context.WithValue(ctx, ownedKey{}, mask)
}

// ArgOwned reports whether WithOwnedArgs marked argument i of the task running with ctx.
func ArgOwned(ctx context.Context, i int) bool {
	if i < 0 || i >= 64 {
		return false
	}
	mask, _ := ctx.Value(ownedKey{}).(uint64)
	return mask&(1<<uint(i)) != 0
}
