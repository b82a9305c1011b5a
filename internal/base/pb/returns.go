package pb

// StreamingReturns is TaskSpec.num_returns of a streaming generator task.
const StreamingReturns = -1

// NumReturns is how many returns a task of num_returns n has: 0 (a spec that did not say)
// is one; StreamingReturns stays as is.
func NumReturns(n int32) int32 {
	if n == 0 {
		return 1
	}
	return n
}
