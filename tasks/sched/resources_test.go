package sched

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// R builds Resources from a map and panics on error: test shorthand.
func R(m map[string]float64) Resources {
	r, err := FromMap(m)
	if err != nil {
		panic(err)
	}
	return r
}

func cpu(n float64) Resources { return R(map[string]float64{CPU: n}) }

func TestQuantityOf(t *testing.T) {
	tests := []struct {
		in      float64
		want    Quantity
		wantErr string
	}{
		{0, 0, ""},
		{1, Unit, ""},
		{0.5, Unit / 2, ""},
		{0.1, 1000, ""},
		{0.0001, 1, ""},
		{0.00005, 1, ""}, // rounds to nearest
		{1.23456, 12346, ""},
		{1 << 30, (1 << 30) * Unit, ""},
		{-1, 0, "-1 must not be negative"},
		{math.NaN(), 0, "NaN is not a number"},
		{math.Inf(1), 0, "+Inf is not finite"},
		{math.Inf(-1), 0, "-Inf is not finite"},
		{0.00001, 0, "1e-05 is below the resolution 0.0001"},
		{1e15, 0, "1e+15 exceeds the maximum 922337203685477.5807"},
	}
	for _, tt := range tests {
		got, err := QuantityOf(tt.in)
		if tt.wantErr != "" {
			if err == nil || !errors.Is(err, ErrInvalidQuantity) || err.Error() != "sched: invalid resource quantity: "+tt.wantErr {
				t.Errorf("QuantityOf(%v) err = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("QuantityOf(%v) = %v, %v; want %v", tt.in, int64(got), err, int64(tt.want))
		}
	}
}

func TestQuantityString(t *testing.T) {
	tests := []struct {
		q    Quantity
		want string
	}{
		{0, "0"},
		{Unit, "1"},
		{Unit / 2, "0.5"},
		{-Unit / 4, "-0.25"},
		{1, "0.0001"},
		{12340, "1.234"},
		{1073741824 * Unit, "1073741824"},
		{MaxQuantity, "922337203685477.5807"},
		{-MaxQuantity, "-922337203685477.5807"},
	}
	for _, tt := range tests {
		if got := tt.q.String(); got != tt.want {
			t.Errorf("Quantity(%d).String() = %q, want %q", int64(tt.q), got, tt.want)
		}
	}
	if got := (Unit / 2).Float(); got != 0.5 {
		t.Errorf("Float = %v", got)
	}
}

func TestFromMap(t *testing.T) {
	tests := []struct {
		name    string
		in      map[string]float64
		want    string // String() of the result
		wantErr string
	}{
		{"nil", nil, "{}", ""},
		{"cpu only", map[string]float64{CPU: 0.5}, "{CPU=0.5}", ""},
		{"zeros dropped", map[string]float64{CPU: 0, GPU: 0, "foo": 0}, "{}", ""},
		{"all kinds sorted", map[string]float64{"zeta": 1, GPU: 1, Memory: 1 << 30, CPU: 4, "alpha": 2, ObjectStoreMemory: 1 << 20},
			"{CPU=4, GPU=1, alpha=2, memory=1073741824, object_store_memory=1048576, zeta=1}", ""},
		{"negative", map[string]float64{GPU: -1}, "", "GPU=-1 must not be negative"},
		{"NaN", map[string]float64{CPU: math.NaN()}, "", "CPU=NaN is not a number"},
		{"inf", map[string]float64{"foo": math.Inf(1)}, "", "foo=+Inf is not finite"},
		{"too small", map[string]float64{CPU: 1e-7}, "", "CPU=1e-07 is below the resolution 0.0001"},
		{"too large", map[string]float64{Memory: 1e16}, "", "memory=1e+16 exceeds the maximum 922337203685477.5807"},
		{"empty name", map[string]float64{"": 1}, "", "resource name is empty"},
		{"first error in sorted order", map[string]float64{"b": -1, "a": math.NaN(), "c": -2}, "", "a=NaN is not a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromMap(tt.in)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrInvalidQuantity) || err.Error() != "sched: invalid resource quantity: "+tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if !got.IsZero() {
					t.Fatalf("value on error = %v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFits(t *testing.T) {
	neg := cpu(1).Sub(cpu(2)) // CPU=-1, oversubscribed
	tests := []struct {
		name       string
		avail, req Resources
		want       bool
	}{
		{"zero in zero", Resources{}, Resources{}, true},
		{"zero in negative", neg, Resources{}, true},
		{"cpu exact", cpu(1), cpu(1), true},
		{"cpu fraction", cpu(1), cpu(0.5), true},
		{"cpu short", cpu(0.5), cpu(0.5001), false},
		{"cpu in negative", neg, cpu(0.0001), false},
		{"gpu missing", cpu(8), R(map[string]float64{GPU: 1}), false},
		{"gpu ok", R(map[string]float64{CPU: 1, GPU: 2}), R(map[string]float64{CPU: 1, GPU: 2}), true},
		{"gpu short", R(map[string]float64{CPU: 1, GPU: 1}), R(map[string]float64{GPU: 2}), false},
		{"custom present", R(map[string]float64{CPU: 1, "tpu": 4}), R(map[string]float64{"tpu": 4}), true},
		{"custom missing", R(map[string]float64{CPU: 64, "a": 1, "c": 1}), R(map[string]float64{"b": 1}), false},
		{"custom after all", R(map[string]float64{"a": 1}), R(map[string]float64{"z": 1}), false},
		{"custom short", R(map[string]float64{"tpu": 1}), R(map[string]float64{"tpu": 2}), false},
		{"several custom", R(map[string]float64{"a": 1, "b": 2, "c": 3, memory: 10}), R(map[string]float64{"a": 1, "c": 3, memory: 10}), true},
		{"extra avail ignored", R(map[string]float64{CPU: 2, "x": 1}), cpu(1), true},
		{"negative request entry ignored", Resources{}, Resources{}.Sub(R(map[string]float64{"x": 1})), true},
	}
	for _, tt := range tests {
		if got := tt.avail.Fits(tt.req); got != tt.want {
			t.Errorf("%s: %v.Fits(%v) = %v, want %v", tt.name, tt.avail, tt.req, got, tt.want)
		}
	}
}

const memory = Memory

func TestAddSub(t *testing.T) {
	tests := []struct {
		name          string
		a, b          Resources
		sum, diff     string
		diffNegative  bool
		sumIsZero     bool
		diffIsZeroTo  bool
		wantSameSlice bool
	}{
		{name: "cpu", a: cpu(1), b: cpu(0.5), sum: "{CPU=1.5}", diff: "{CPU=0.5}"},
		{name: "oversubscribe", a: cpu(0.5), b: cpu(1), sum: "{CPU=1.5}", diff: "{CPU=-0.5}", diffNegative: true},
		{name: "to zero", a: cpu(1), b: cpu(1), sum: "{CPU=2}", diff: "{}", diffIsZeroTo: true},
		{name: "zero", a: Resources{}, b: Resources{}, sum: "{}", diff: "{}", sumIsZero: true, diffIsZeroTo: true},
		{name: "custom merge", a: R(map[string]float64{"a": 1, "c": 3}), b: R(map[string]float64{"b": 2, "c": 1, "d": 1}),
			sum: "{a=1, b=2, c=4, d=1}", diff: "{a=1, b=-2, c=2, d=-1}", diffNegative: true},
		{name: "custom cancels", a: R(map[string]float64{GPU: 1, "a": 1}), b: R(map[string]float64{GPU: 1, "a": 1}),
			sum: "{GPU=2, a=2}", diff: "{}", diffIsZeroTo: true},
		{name: "custom minus nothing", a: R(map[string]float64{"a": 1}), b: cpu(1), sum: "{CPU=1, a=1}", diff: "{CPU=-1, a=1}", diffNegative: true},
		{name: "nothing minus custom", a: cpu(2), b: R(map[string]float64{"a": 1}), sum: "{CPU=2, a=1}", diff: "{CPU=2, a=-1}", diffNegative: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.a.String()
			if got := tt.a.Add(tt.b).String(); got != tt.sum {
				t.Errorf("Add = %v, want %v", got, tt.sum)
			}
			d := tt.a.Sub(tt.b)
			if got := d.String(); got != tt.diff {
				t.Errorf("Sub = %v, want %v", got, tt.diff)
			}
			if d.Negative() != tt.diffNegative {
				t.Errorf("Negative = %v", d.Negative())
			}
			if d.IsZero() != tt.diffIsZeroTo || tt.a.Add(tt.b).IsZero() != tt.sumIsZero {
				t.Errorf("IsZero wrong")
			}
			if !d.Add(tt.b).Equal(tt.a) {
				t.Errorf("(a-b)+b = %v, want %v", d.Add(tt.b), tt.a)
			}
			if tt.a.String() != before {
				t.Errorf("receiver mutated: %v -> %v", before, tt.a)
			}
		})
	}
}

func TestSaturation(t *testing.T) {
	max := Resources{}.With(CPU, MaxQuantity).With("x", MaxQuantity)
	if got := max.Add(max); got.Get(CPU) != MaxQuantity || got.Get("x") != MaxQuantity {
		t.Errorf("Add saturates: %v", got)
	}
	min := Resources{}.Sub(max)
	if got := min.Sub(max); got.Get(CPU) != -MaxQuantity || got.Get("x") != -MaxQuantity {
		t.Errorf("Sub saturates: %v", got)
	}
	if got := min.Sub(cpu(0.0001)); got.Get(CPU) != -MaxQuantity {
		t.Errorf("Sub clamps at -MaxQuantity: %d", int64(got.Get(CPU)))
	}
	_ = min.String() // never MinInt64, so String never overflows
}

func TestWithGetEachMap(t *testing.T) {
	r := Resources{}.With(CPU, 2*Unit).With(GPU, Unit).With("b", Unit).With("a", 3*Unit).With("c", 0)
	if r.String() != "{CPU=2, GPU=1, a=3, b=1}" {
		t.Fatalf("With: %v", r)
	}
	r2 := r.With("a", Unit)  // replace
	r3 := r.With("b", 0)     // delete
	r4 := r3.With("a", 0)    // delete last
	r5 := r.With("zz", 0)    // delete absent: no-op
	r6 := r.With("bb", Unit) // insert in the middle
	if r.String() != "{CPU=2, GPU=1, a=3, b=1}" {
		t.Fatalf("With mutated the receiver: %v", r)
	}
	for _, tt := range []struct {
		got  Resources
		want string
	}{
		{r2, "{CPU=2, GPU=1, a=1, b=1}"},
		{r3, "{CPU=2, GPU=1, a=3}"},
		{r4, "{CPU=2, GPU=1}"},
		{r5, "{CPU=2, GPU=1, a=3, b=1}"},
		{r6, "{CPU=2, GPU=1, a=3, b=1, bb=1}"},
	} {
		if tt.got.String() != tt.want {
			t.Errorf("got %v, want %v", tt.got, tt.want)
		}
	}
	if r4.other != nil {
		t.Errorf("empty slice kept: %#v", r4.other)
	}
	for name, want := range map[string]Quantity{CPU: 2 * Unit, GPU: Unit, "a": 3 * Unit, "b": Unit, "0": 0, "aa": 0, "zz": 0} {
		if got := r.Get(name); got != want {
			t.Errorf("Get(%q) = %v, want %v", name, got, want)
		}
	}
	var names []string
	r.Each(func(name string, q Quantity) { names = append(names, name+"="+q.String()) })
	if strings.Join(names, " ") != "CPU=2 GPU=1 a=3 b=1" {
		t.Errorf("Each order: %v", names)
	}
	if m := r.Map(); !reflect.DeepEqual(m, map[string]float64{CPU: 2, GPU: 1, "a": 3, "b": 1}) {
		t.Errorf("Map = %v", m)
	}
	if (Resources{}).Map() != nil {
		t.Errorf("zero Map not nil")
	}
	if !R(r.Map()).Equal(r) {
		t.Errorf("FromMap(Map) round trip")
	}
}

func TestEqual(t *testing.T) {
	a := R(map[string]float64{CPU: 1, "x": 1})
	for _, tt := range []struct {
		b    Resources
		want bool
	}{
		{R(map[string]float64{CPU: 1, "x": 1}), true},
		{R(map[string]float64{CPU: 1}), false},
		{R(map[string]float64{CPU: 1, "x": 2}), false},
		{R(map[string]float64{CPU: 1, "y": 1}), false},
		{R(map[string]float64{CPU: 1, GPU: 1, "x": 1}), false},
	} {
		if a.Equal(tt.b) != tt.want {
			t.Errorf("%v.Equal(%v) != %v", a, tt.b, tt.want)
		}
	}
}

func TestNegative(t *testing.T) {
	if (Resources{}).Negative() || cpu(1).Negative() || R(map[string]float64{"x": 1}).Negative() {
		t.Error("non-negative reported negative")
	}
	if !(Resources{}).Sub(R(map[string]float64{GPU: 1})).Negative() {
		t.Error("GPU=-1 not negative")
	}
}

// TestOversubscription walks a node through Ray's blocked-task cycle: a task blocks in Get and
// releases its CPU, another task takes it, the first unblocks and takes its CPU back anyway.
func TestOversubscription(t *testing.T) {
	total := cpu(1)
	avail := total.Sub(cpu(1)) // task A runs
	avail = avail.Add(cpu(1))  // A blocks in Get: CPU released
	if !avail.Fits(cpu(1)) {
		t.Fatal("released CPU does not fit B")
	}
	avail = avail.Sub(cpu(1)) // B runs
	avail = avail.Sub(cpu(1)) // A unblocks and reacquires regardless
	if avail.String() != "{CPU=-1}" || !avail.Negative() {
		t.Fatalf("avail = %v, want CPU=-1", avail)
	}
	if avail.Fits(cpu(0.5)) || !avail.Fits(Resources{}) {
		t.Fatal("oversubscribed node must admit only zero-resource work")
	}
	avail = avail.Add(cpu(1)) // B finishes
	if avail.Fits(cpu(0.5)) {
		t.Fatal("still fully used")
	}
	avail = avail.Add(cpu(1)) // A finishes
	if !avail.Equal(total) {
		t.Fatalf("avail = %v, want %v", avail, total)
	}
}

func TestCPUOnlyAllocatesNothing(t *testing.T) {
	a, b := cpu(4), cpu(0.5)
	var sink Resources
	var ok bool
	n := testing.AllocsPerRun(1000, func() {
		ok = a.Fits(b)
		sink = a.Sub(b).Add(b).With(CPU, Unit).With(GPU, Unit)
		ok = ok && sink.Equal(sink) && !sink.IsZero()
	})
	if n != 0 || !ok {
		t.Fatalf("allocs = %v, ok = %v", n, ok)
	}
	// Add or Sub with a custom-only side shares the slice instead of copying.
	c := R(map[string]float64{"x": 1})
	n = testing.AllocsPerRun(1000, func() { sink = c.Add(b).Sub(b); sink = a.Add(c) })
	if n != 0 {
		t.Fatalf("sharing allocs = %v", n)
	}
}
