package tasks

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/ray-go/ray/internal/base/pb"
)

// Func runs a remote function on encoded arguments and returns the encoded result.
// It must not panic on bad input: argument decode failures are returned as errors.
type Func func(ctx context.Context, args [][]byte) ([]byte, error)

// Function is one registered remote function.
type Function struct {
	Name     string
	ArgTypes []reflect.Type
	Return   reflect.Type
	Call     Func
	// Returns is how many values the function returns (0: one). A function of several
	// returns encodes them as a pb.Returns message, which its worker splits into the
	// task's returns (Return is then nil; Results lists their types).
	Returns int
	Results []reflect.Type
	// Streaming marks a streaming generator: its tasks yield items one by one
	// (pb.GeneratorItem) and return nothing themselves.
	Streaming bool
}

// NumReturns is how many values f returns (at least one), or pb.StreamingReturns for a
// streaming generator: what TaskSpec.num_returns of its tasks says.
func (f *Function) NumReturns() int32 {
	if f.Streaming {
		return pb.StreamingReturns
	}
	return int32(max(f.Returns, 1))
}

// registry maps names to *Function. Every task looks its function up, on every core, so
// the lookup must write nothing shared: sync.Map's Load reads atomically and takes no lock
// (a sync.RWMutex's RLock would add to one reader counter from every core).
var registry sync.Map

// Register adds f to the process-wide registry. Registering a second function under a
// name already taken is an error: names identify functions across processes.
func Register(f *Function) error {
	if f == nil || f.Name == "" {
		return fmt.Errorf("tasks: a remote function needs a non-empty name")
	}
	if f.Call == nil {
		return fmt.Errorf("tasks: remote function %q has no body", f.Name)
	}
	if _, dup := registry.LoadOrStore(f.Name, f); dup {
		return fmt.Errorf("tasks: remote function %q is registered twice; names must be unique in a program", f.Name)
	}
	return nil
}

// Lookup finds a registered function by name.
func Lookup(name string) (*Function, bool) {
	f, ok := registry.Load(name)
	if !ok {
		return nil, false
	}
	return f.(*Function), true
}

// UnknownFunctionError says that no function of that name is registered in this program,
// or, with Node set, in this worker process of the job (on node Node), although the
// process that submitted the task has it.
type UnknownFunctionError struct {
	Name string
	Node string // set on a worker process
}

func (e *UnknownFunctionError) Error() string {
	if e.Node != "" {
		return fmt.Sprintf("tasks: remote function %q is not registered in the job's worker process on node %s%s", e.Name, e.Node, LateRegistration)
	}
	return fmt.Sprintf("tasks: no remote function named %q is registered in this program "+
		"(register it at package level with ray.Task0..Task4 under that exact name)", e.Name)
}

// LateRegistration ends the error of a job's worker process that lacks a remote function,
// actor class or method that the process which submitted the task or actor has: why, and
// what to do.
const LateRegistration = ", although the process that submitted it has it: a job's worker processes run its program " +
	"only up to ray.Init, so what the driver registers after Init (inside main, say) exists in the driver alone. " +
	"Register remote functions, actor classes and methods at package level (var F = ray.Task1(\"name\", ...)) " +
	"so that every process of the job has them (or the worker process runs another build of the program)"
