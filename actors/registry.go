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

	mu      sync.RWMutex
	methods map[string]*Method
}

// Method is one method of a class. Call runs it on an instance with encoded arguments and
// returns the encoded result.
type Method struct {
	Name string // "<class>.<method>", the name calls carry
	Call func(ctx context.Context, inst any, args [][]byte) ([]byte, error)
}

var registry = struct {
	sync.RWMutex
	m map[string]*Class
}{m: map[string]*Class{}}

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
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.m[c.Name]; dup {
		return fmt.Errorf("actors: actor class %q is registered twice; names must be unique in a program", c.Name)
	}
	c.methods = map[string]*Method{}
	registry.m[c.Name] = c
	return nil
}

// LookupClass finds a registered class by name.
func LookupClass(name string) (*Class, bool) {
	registry.RLock()
	c, ok := registry.m[name]
	registry.RUnlock()
	return c, ok
}

// MethodName is the name a call of method on class carries.
func MethodName(class, method string) string { return class + "." + method }

// AddMethod adds a method named method to c.
func (c *Class) AddMethod(method string, call func(ctx context.Context, inst any, args [][]byte) ([]byte, error)) (*Method, error) {
	if method == "" || call == nil {
		return nil, fmt.Errorf("actors: class %q: a method needs a name and a body", c.Name)
	}
	m := &Method{Name: MethodName(c.Name, method), Call: call}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.methods[m.Name]; dup {
		return nil, fmt.Errorf("actors: class %q: method %q is registered twice", c.Name, method)
	}
	c.methods[m.Name] = m
	return m, nil
}

// Method finds a method by its full name ("<class>.<method>").
func (c *Class) Method(name string) (*Method, bool) {
	c.mu.RLock()
	m, ok := c.methods[name]
	c.mu.RUnlock()
	return m, ok
}

// CanCheckpoint reports whether instances of c can save and restore their state.
func (c *Class) CanCheckpoint() bool { return c.Save != nil }

func idString(b []byte) string { return hex.EncodeToString(b) }

func idBytes(s string) ([]byte, error) { return hex.DecodeString(s) }
