package codec

import (
	"reflect"
	"sync"
	"testing"
)

// TestInfoSlotsColliding looks up more types than the direct-mapped slots hold, from
// several goroutines at once (slots shared and overwritten), and checks every answer is
// its own type's, and the same each time.
func TestInfoSlotsColliding(t *testing.T) {
	types := make([]reflect.Type, 3*len(infoSlots))
	for i := range types {
		types[i] = reflect.ArrayOf(i, reflect.TypeFor[int8]())
	}
	first := make([]*typeInfo, len(types))
	for i, ty := range types {
		first[i] = info(ty)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 20; round++ {
				for i := range types {
					j := (i*7 + g*131 + round) % len(types)
					if ti := info(types[j]); ti != first[j] || ti.t != types[j] {
						select {
						case errs <- types[j].String():
						default:
						}
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatalf("info(%s) gave another type's entry", e)
	}
}
