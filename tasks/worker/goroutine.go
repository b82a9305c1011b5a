package worker

import (
	"reflect"
	"runtime"
)

// runName is the name of (*Worker).run, the function at the bottom of every goroutine that
// runs a lease's tasks.
var runName = runtime.FuncForPC(reflect.ValueOf((*Worker).run).Pointer()).Name()

// OnTaskGoroutine reports whether the caller runs on the goroutine a worker runs a task on
// (inside a task's function; a goroutine the task started is not one). It walks the
// caller's stack, so it is for slow paths only: the runtime asks it before a wait through
// a driver's context, which inside a task would hold the task's CPU (core.ErrDriverContext).
func OnTaskGoroutine() bool {
	var pcs [64]uintptr
	for skip := 2; ; skip += len(pcs) {
		n := runtime.Callers(skip, pcs[:])
		frames := runtime.CallersFrames(pcs[:n])
		for {
			f, more := frames.Next()
			if f.Function == runName {
				return true
			}
			if !more {
				break
			}
		}
		if n < len(pcs) {
			return false
		}
	}
}
