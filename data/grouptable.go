package data

import (
	"math"
	"math/bits"
	"slices"

	"github.com/apache/arrow/go/v15/arrow"
)

// The hash table that groups rows by their keys: open addressing with linear probing over
// a power-of-two array of slots, each the row hash of a group and the group's number
// (plus one; zero is an empty slot), sized for twice the groups expected (estimateGroups;
// a partition's rows: one group each) and doubled if it gets half full anyway. A slot is
// found from the hash's top bits, not its bottom ones: every row of one partition has the
// same hash modulo the partitions (mapPartition), so bottom bits would crowd a reduce's
// groups into a fraction of the slots. A probe compares the hashes first and the keys
// only when they are equal, and not at all for one integer key column without nulls,
// whose hash (hashRows: a bijection of the 64-bit value) is the key itself.

// groupSlot is one slot of a grouper's table.
type groupSlot struct {
	h uint64
	g int32 // the group + 1; 0: empty
}

// groupByHash groups rows by their key columns cols, whose row hashes (hashRows) are
// hashes: groupOf is each row's group, numbered in the order of their first rows, reps
// those first rows.
func groupByHash(cols []arrow.Array, hashes []uint64) (groupOf []int32, reps []int32, err error) {
	t, err := newGrouper(cols, len(hashes))
	if err != nil {
		return nil, nil, err
	}
	return t.groupOf, t.group(hashes, nil), nil
}

// groupByPartition is groupByHash with the groups numbered partition by partition (a
// group's partition being its hash modulo n): those of partition 0 first, then those of
// partition 1, and so on, each partition's in the order of their first rows; counts are
// the groups of each partition. Each partition's rows are grouped in a table of their
// own, which stays in cache where one table of the whole block's groups (hundreds of
// thousands in a map task of many keys) would not: a probe into one of tens of MiB costs
// a cache and TLB miss, several times the rest of the work.
func groupByPartition(cols []arrow.Array, hashes []uint64, n int) (groupOf, reps []int32, counts []int64, err error) {
	t, err := newGrouper(cols, len(hashes))
	if err != nil {
		return nil, nil, nil, err
	}
	// The rows of each partition, in order (a counting sort of the row numbers).
	starts := make([]int32, n+1)
	for _, h := range hashes {
		starts[h%uint64(n)+1]++
	}
	for p := 1; p <= n; p++ {
		starts[p] += starts[p-1]
	}
	rows := make([]int32, len(hashes))
	at := slices.Clone(starts[:n])
	for i, h := range hashes {
		p := h % uint64(n)
		rows[at[p]] = int32(i)
		at[p]++
	}
	counts = make([]int64, n)
	for p := 0; p < n; p++ {
		before := len(t.reps)
		t.group(hashes, rows[starts[p]:starts[p+1]])
		counts[p] = int64(len(t.reps) - before)
	}
	return t.groupOf, t.reps, counts, nil
}

// grouper groups rows into groups numbered from 0 on, over one or several calls of group.
type grouper struct {
	exact   bool
	c       rowCmp
	groupOf []int32
	reps    []int32
	slots   []groupSlot // reused from one call to the next
}

func newGrouper(cols []arrow.Array, n int) (*grouper, error) {
	t := &grouper{exact: hashIsKey(cols), groupOf: make([]int32, n)}
	if !t.exact {
		var err error
		if t.c, err = newRowCmp(cols, cols, nil); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// group groups the rows listed (nil: every row of hashes) in a table of their own (rows
// of different calls are never in one group: the caller passes rows that cannot be),
// and returns the groups so far.
func (t *grouper) group(hashes []uint64, rows []int32) []int32 {
	n := len(rows)
	if rows == nil {
		n = len(hashes)
	}
	var est int
	if rows == nil {
		est = estimateGroups(hashes)
	} else {
		est = n // partitions are small: a slot pair per row
	}
	shift := uint(64 - bits.Len(uint(max(16, 2*est)-1)))
	size := 1 << (64 - shift)
	slots := t.slots
	if cap(slots) >= size {
		slots = slots[:size]
		clear(slots)
	} else {
		slots = make([]groupSlot, size)
	}
	mask := uint64(len(slots) - 1)
	first := int32(len(t.reps))
	groupOf, reps, exact, c := t.groupOf, t.reps, t.exact, t.c
	for k := 0; k < n; k++ {
		i := k
		if rows != nil {
			i = int(rows[k])
		}
		h := hashes[i]
		pos := h >> shift
		for {
			s := &slots[pos]
			if s.g == 0 {
				g := int32(len(reps))
				s.h, s.g = h, g-first+1
				reps = append(reps, int32(i))
				groupOf[i] = g
				if 2*int(g-first+1) > len(slots) {
					shift--
					slots = regroup(slots, shift)
					mask = uint64(len(slots) - 1)
				}
				break
			}
			if s.h == h && (exact || c.cmp(int(reps[first+s.g-1]), i) == 0) {
				groupOf[i] = first + s.g - 1
				break
			}
			pos = (pos + 1) & mask
		}
	}
	t.reps, t.slots = reps, slots
	return reps
}

// estimateGroups estimates how many distinct values hashes holds, to size the table
// once: a table grown by doubling is regrouped about log2(groups/start) times, each time
// reading and writing every slot out of cache, and one sized from the rows (at most one
// group each) is mostly empty where keys repeat (a reduce's, say: each key of a
// partition once per map), and its pages cost faults when first written. A HyperLogLog
// over the hashes (4,096 registers, from their top 12 bits: about 2% off) costs a pass
// over them, some 10% more upper bound for the error; small inputs take one slot pair per
// row.
func estimateGroups(hashes []uint64) int {
	const p = 12
	const m = 1 << p
	n := len(hashes)
	if n <= 4*m {
		return n
	}
	var reg [m]uint8
	for _, h := range hashes {
		r := uint8(bits.LeadingZeros64(h<<p|1<<(p-1)) + 1)
		if i := h >> (64 - p); r > reg[i] {
			reg[i] = r
		}
	}
	var sum float64
	zeros := 0
	for _, r := range reg {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	e := 0.7213 / (1 + 1.079/m) * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(float64(m)/float64(zeros)) // linear counting, for few groups
	}
	return min(int(e*1.1)+16, n)
}

// regroup returns the groups of slots in a table of 64-shift bits of slots.
func regroup(slots []groupSlot, shift uint) []groupSlot {
	out := make([]groupSlot, 1<<(64-shift))
	mask := uint64(len(out) - 1)
	for _, s := range slots {
		if s.g == 0 {
			continue
		}
		pos := s.h >> shift
		for out[pos].g != 0 {
			pos = (pos + 1) & mask
		}
		out[pos] = s
	}
	return out
}

// hashIsKey reports whether equal row hashes of cols mean equal keys: one integer column
// (of any width, or a timestamp or a date) without nulls, which hashInts maps one to one.
func hashIsKey(cols []arrow.Array) bool {
	if len(cols) != 1 || cols[0].NullN() > 0 {
		return false
	}
	switch cols[0].DataType().ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.TIMESTAMP, arrow.DATE32, arrow.DATE64:
		return true
	}
	return false
}
