package actors

import (
	"context"
	"encoding/hex"
	"fmt"
	"sync"
)

// Class is one registered actor class: how to construct an instance from encoded
// constructor arguments, its methods, and (when the type implements the root package's
// Checkpointer) how to save and restore its state.
type Class struct {
	Name string
	// New constructs an instance. It must not panic on bad input.
	New func(ctx context.Context, args [][]byte) (any, error)
	// Save and Restore are nil when the class cannot checkpoint.
	Save    func(ctx context.Context, inst any) ([]byte, error)
	Restore func(ctx context.Context, inst any, state []byte) error
	// Auto: Save and Restore encode the instance itself (its type round-trips through the
	// codec) rather than calling the user's Checkpointer. The grain then takes periodic
	// checkpoints only for logged actors, whose method log they bound; an at-most-once
	// actor restarts from its constructor, as Ray's do, unless asked to checkpoint.
	Auto bool

	methods sync.Map // full method name -> *Method; read on every call, see registry
}

// Method is one method of a class. Call runs it on an instance with encoded arguments and
// returns the encoded result.
type Method struct {
	Name string // "<class>.<method>", the name calls carry
	Call func(ctx context.Context, inst any, args [][]byte) ([]byte, error)
}

// registry maps class names to *Class. Classes and methods are looked up on every actor
// call, from every core, so lookups must write nothing shared: sync.Map's Load reads
// atomically and takes no lock (a sync.RWMutex's RLock adds to one reader counter).
var registry sync.Map

// RegisterClass adds c to the process-wide registry. Names identify classes across
// processes, so registering a name twice is an error.
func RegisterClass(c *Class) error {
	if c == nil || c.Name == "" {
		return fmt.Errorf("actors: an actor class needs a non-empty name")
	}
	if c.New == nil {
		return fmt.Errorf("actors: actor class %q has no constructor", c.Name)
	}
	if (c.Save == nil) != (c.Restore == nil) {
		return fmt.Errorf("actors: actor class %q: Save and Restore go together", c.Name)
	}
	if _, dup := registry.LoadOrStore(c.Name, c); dup {
		return fmt.Errorf("actors: actor class %q is registered twice; names must be unique in a program", c.Name)
	}
	return nil
}

// LookupClass finds a registered class by name.
func LookupClass(name string) (*Class, bool) {
	c, ok := registry.Load(name)
	if !ok {
		return nil, false
	}
	return c.(*Class), true
}

// MethodName is the name a call of method on class carries.
func MethodName(class, method string) string { return class + "." + method }

// AddMethod adds a method named method to c.
func (c *Class) AddMethod(method string, call func(ctx context.Context, inst any, args [][]byte) ([]byte, error)) (*Method, error) {
	if method == "" || call == nil {
		return nil, fmt.Errorf("actors: class %q: a method needs a name and a body", c.Name)
	}
	m := &Method{Name: MethodName(c.Name, method), Call: call}
	if _, dup := c.methods.LoadOrStore(m.Name, m); dup {
		return nil, fmt.Errorf("actors: class %q: method %q is registered twice", c.Name, method)
	}
	return m, nil
}

// Method finds a method by its full name ("<class>.<method>").
func (c *Class) Method(name string) (*Method, bool) {
	m, ok := c.methods.Load(name)
	if !ok {
		return nil, false
	}
	return m.(*Method), true
}

// CanCheckpoint reports whether instances of c can save and restore their state.
func (c *Class) CanCheckpoint() bool { return c.Save != nil }

func idString(b []byte) string { return hex.EncodeToString(b) }

func idBytes(s string) ([]byte, error) { return hex.DecodeString(s) }
