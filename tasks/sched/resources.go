package sched

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
)

// Well-known resource names, spelled as Ray spells them.
const (
	CPU               = "CPU"
	GPU               = "GPU"
	Memory            = "memory"              // bytes
	ObjectStoreMemory = "object_store_memory" // bytes
)

// Quantity is an amount of one resource in fixed point: Unit is one whole unit, so the
// resolution is 1/10000 (as in Ray) and 0.5 CPU is exact. Byte-valued resources (Memory,
// ObjectStoreMemory) count bytes, so the largest representable amount is about 9.2e14 bytes.
type Quantity int64

// Unit is the Quantity of one whole unit of a resource.
const Unit Quantity = 10000

// MaxQuantity is the largest magnitude a Quantity takes. Add and Sub saturate at ±MaxQuantity
// instead of overflowing.
const MaxQuantity Quantity = math.MaxInt64

// ErrInvalidQuantity is wrapped by the errors of QuantityOf and FromMap.
var ErrInvalidQuantity = errors.New("sched: invalid resource quantity")

// QuantityOf converts a float amount, rounding to the nearest 1/10000. It rejects NaN,
// infinities, negative amounts, positive amounts below the resolution (they would silently
// become zero) and amounts too large to represent.
func QuantityOf(v float64) (Quantity, error) {
	q, why := quantityOf(v)
	if why != "" {
		return 0, fmt.Errorf("%w: %v %s", ErrInvalidQuantity, v, why)
	}
	return q, nil
}

// quantityOf converts v or says why it cannot.
func quantityOf(v float64) (Quantity, string) {
	switch {
	case math.IsNaN(v):
		return 0, "is not a number"
	case math.IsInf(v, 0):
		return 0, "is not finite"
	case v < 0:
		return 0, "must not be negative"
	case v*float64(Unit) >= float64(MaxQuantity):
		return 0, fmt.Sprintf("exceeds the maximum %v", MaxQuantity)
	}
	q := Quantity(math.Round(v * float64(Unit)))
	if q == 0 && v > 0 {
		return 0, "is below the resolution 0.0001"
	}
	return q, ""
}

// Float returns q in whole units.
func (q Quantity) Float() float64 { return float64(q) / float64(Unit) }

// String formats q in whole units with up to four decimals and no trailing zeros:
// "1", "0.5", "-0.25", "1073741824".
func (q Quantity) String() string { return string(q.appendTo(nil)) }

func (q Quantity) appendTo(b []byte) []byte {
	u := uint64(q)
	if q < 0 {
		b = append(b, '-')
		u = uint64(-q) // q is never MinInt64: arithmetic saturates at -MaxQuantity
	}
	b = strconv.AppendUint(b, u/uint64(Unit), 10)
	frac := u % uint64(Unit)
	if frac == 0 {
		return b
	}
	digits := [4]byte{}
	for i := 3; i >= 0; i-- {
		digits[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := 4
	for digits[n-1] == '0' {
		n--
	}
	b = append(b, '.')
	return append(b, digits[:n]...)
}

// addSat returns a+b clamped to [-MaxQuantity, MaxQuantity].
func addSat(a, b Quantity) Quantity {
	s := a + b
	if (s > a) != (b > 0) { // overflowed
		if b > 0 {
			return MaxQuantity
		}
		return -MaxQuantity
	}
	if s < -MaxQuantity {
		return -MaxQuantity
	}
	return s
}

// subSat returns a-b clamped to [-MaxQuantity, MaxQuantity]. b is never MinInt64.
func subSat(a, b Quantity) Quantity { return addSat(a, -b) }

// Resources maps resource names to quantities. It is an immutable value: every method returns
// a new value and never modifies its receiver or argument, so copies may be shared freely.
//
// CPU and GPU are held in fields and every other resource in a small slice sorted by name, so a
// CPU/GPU-only value is three words with no heap allocation, and Fits, Add and Sub on such
// values allocate nothing. Zero amounts are not stored: a resource that is absent has
// quantity 0.
//
// Quantities are non-negative when built by FromMap or With, but Sub does not clamp: a node's
// available resources may go negative for a while. Ray does this on purpose — a task that
// blocks in Get gives its CPU back so others can run, and when it unblocks it takes the CPU
// again even if that oversubscribes the node. A negative amount fits no positive demand, so
// nothing new is dispatched until the surplus is returned.
type Resources struct {
	cpu, gpu Quantity
	other    []entry // sorted by name, no CPU/GPU, no zero quantities; never mutated
}

type entry struct {
	name string
	q    Quantity
}

// FromMap builds Resources from amounts in whole units, e.g. {"CPU": 0.5, "GPU": 1}.
// Zero amounts are dropped. Names must be non-empty; amounts must satisfy QuantityOf. When
// several entries are invalid the error names the first in sorted order.
func FromMap(m map[string]float64) (Resources, error) {
	var r Resources
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := m[name]
		if name == "" {
			return Resources{}, fmt.Errorf("%w: resource name is empty", ErrInvalidQuantity)
		}
		q, why := quantityOf(v)
		if why != "" {
			return Resources{}, fmt.Errorf("%w: %s=%v %s", ErrInvalidQuantity, name, v, why)
		}
		switch name {
		case CPU:
			r.cpu = q
		case GPU:
			r.gpu = q
		default:
			if q != 0 {
				r.other = append(r.other, entry{name, q}) // names are sorted already
			}
		}
	}
	return r, nil
}

// Get returns the quantity of name (0 if absent).
func (r Resources) Get(name string) Quantity {
	switch name {
	case CPU:
		return r.cpu
	case GPU:
		return r.gpu
	}
	for _, e := range r.other {
		if e.name == name {
			return e.q
		}
		if e.name > name {
			break
		}
	}
	return 0
}

// With returns a copy of r with name set to q (removed when q is 0). Setting CPU or GPU never
// allocates. q is not validated: With is for code that already holds a Quantity.
func (r Resources) With(name string, q Quantity) Resources {
	switch name {
	case CPU:
		r.cpu = q
		return r
	case GPU:
		r.gpu = q
		return r
	}
	i := sort.Search(len(r.other), func(i int) bool { return r.other[i].name >= name })
	found := i < len(r.other) && r.other[i].name == name
	var out []entry
	switch {
	case found && q == 0:
		if len(r.other) > 1 {
			out = make([]entry, 0, len(r.other)-1)
			out = append(out, r.other[:i]...)
			out = append(out, r.other[i+1:]...)
		}
	case found:
		out = append([]entry(nil), r.other...)
		out[i].q = q
	case q == 0:
		return r
	default:
		out = make([]entry, 0, len(r.other)+1)
		out = append(out, r.other[:i]...)
		out = append(out, entry{name, q})
		out = append(out, r.other[i:]...)
	}
	r.other = out
	return r
}

// Fits reports whether a demand of req fits in r, r being what is available: every resource
// req asks a positive amount of must be present in r in at least that amount. A request for
// nothing fits anywhere, even in negative (oversubscribed) resources.
func (r Resources) Fits(req Resources) bool {
	return fits(&r, &req)
}

// fits is Fits by pointer, for the loops of Place.
func fits(avail, req *Resources) bool {
	// A zero demand fits even a negative amount.
	if req.cpu > max(avail.cpu, 0) || req.gpu > max(avail.gpu, 0) {
		return false
	}
	j := 0
	for _, e := range req.other {
		if e.q <= 0 {
			continue
		}
		for j < len(avail.other) && avail.other[j].name < e.name {
			j++
		}
		if j == len(avail.other) || avail.other[j].name != e.name || avail.other[j].q < e.q {
			return false
		}
	}
	return true
}

// Add returns r+o. It allocates only when both carry resources other than CPU and GPU.
func (r Resources) Add(o Resources) Resources {
	return Resources{
		cpu:   addSat(r.cpu, o.cpu),
		gpu:   addSat(r.gpu, o.gpu),
		other: merge(r.other, o.other, false),
	}
}

// Sub returns r-o. The result may be negative (see Resources). It allocates only when o
// carries resources other than CPU and GPU.
func (r Resources) Sub(o Resources) Resources {
	return Resources{
		cpu:   subSat(r.cpu, o.cpu),
		gpu:   subSat(r.gpu, o.gpu),
		other: merge(r.other, o.other, true),
	}
}

// merge returns a+b (or a-b when sub) over sorted entry slices, dropping zeros.
func merge(a, b []entry, sub bool) []entry {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 && !sub {
		return b
	}
	out := make([]entry, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i].name < b[j].name):
			out = append(out, a[i])
			i++
		case i == len(a) || b[j].name < a[i].name:
			q := b[j].q
			if sub {
				q = subSat(0, q)
			}
			out = append(out, entry{b[j].name, q})
			j++
		default:
			var q Quantity
			if sub {
				q = subSat(a[i].q, b[j].q)
			} else {
				q = addSat(a[i].q, b[j].q)
			}
			if q != 0 {
				out = append(out, entry{a[i].name, q})
			}
			i++
			j++
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// IsZero reports whether every quantity in r is zero.
func (r Resources) IsZero() bool { return r.cpu == 0 && r.gpu == 0 && len(r.other) == 0 }

// Equal reports whether r and o hold the same quantities.
func (r Resources) Equal(o Resources) bool {
	if r.cpu != o.cpu || r.gpu != o.gpu || len(r.other) != len(o.other) {
		return false
	}
	for i := range r.other {
		if r.other[i] != o.other[i] {
			return false
		}
	}
	return true
}

// Negative reports whether some quantity in r is below zero (an oversubscribed node).
func (r Resources) Negative() bool {
	if r.cpu < 0 || r.gpu < 0 {
		return true
	}
	for _, e := range r.other {
		if e.q < 0 {
			return true
		}
	}
	return false
}

// Each calls fn for every non-zero quantity in the stable order CPU, GPU, then the other
// names sorted bytewise.
func (r Resources) Each(fn func(name string, q Quantity)) {
	if r.cpu != 0 {
		fn(CPU, r.cpu)
	}
	if r.gpu != 0 {
		fn(GPU, r.gpu)
	}
	for _, e := range r.other {
		fn(e.name, e.q)
	}
}

// Map returns r as amounts in whole units (nil when r is zero).
func (r Resources) Map() map[string]float64 {
	if r.IsZero() {
		return nil
	}
	m := make(map[string]float64, 2+len(r.other))
	r.Each(func(name string, q Quantity) { m[name] = q.Float() })
	return m
}

// String formats r in the order of Each, e.g. "{CPU=1, GPU=0.5, memory=1073741824}";
// the zero value is "{}".
func (r Resources) String() string {
	b := make([]byte, 0, 32)
	b = append(b, '{')
	first := true
	r.Each(func(name string, q Quantity) {
		if !first {
			b = append(b, ", "...)
		}
		first = false
		b = append(b, name...)
		b = append(b, '=')
		b = q.appendTo(b)
	})
	return string(append(b, '}'))
}
