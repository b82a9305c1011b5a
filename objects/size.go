package objects

import (
	"errors"
	"fmt"
)

// ErrObjectTooLarge is returned for an object larger than the whole object store of the
// node that would hold it.
var ErrObjectTooLarge = errors.New("ray: object larger than the object store")

// CheckFits is the object store's one size rule (the README's "Object sizes"): an object
// larger than the whole store of its node (its budget, storeBytes; 0 means no limit) is
// refused, whoever makes it: a Put, a task's or an actor method's result. It could only be
// held over the budget (the store spills the least recently used objects, never the one
// being put), so it fails at once, as Ray's store refuses an object larger than its
// capacity (ObjectStoreFullError); a smaller one always fits, spilling others if need be.
func CheckFits(size, storeBytes int64) error {
	if storeBytes <= 0 || size <= storeBytes {
		return nil
	}
	return fmt.Errorf("%w: %d bytes do not fit in the node's object store of %d bytes "+
		"(raise it with ray.WithObjectStoreMemory or rayctl start --object-store-memory, or split the value into smaller objects)",
		ErrObjectTooLarge, size, storeBytes)
}
