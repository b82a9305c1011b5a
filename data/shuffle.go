package data

import (
	crand "crypto/rand"
	"encoding/binary"
	"math/rand/v2"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// newShuffleRand is the random source of a local shuffle: seeded, or from crypto/rand.
func newShuffleRand(seed *int64) *rand.Rand {
	var s uint64
	if seed != nil {
		s = uint64(*seed)
	} else {
		var b [8]byte
		_, _ = crand.Read(b[:])
		s = binary.LittleEndian.Uint64(b[:])
	}
	return rand.New(rand.NewPCG(s, 0x10ca1))
}

// shuffleBatches is cutBatches with a local shuffle buffer (Ray's ShufflingBatcher): records
// are taken from held one at a time (fetch appends more) into the buffer while it holds
// fewer than bufMin+size rows; a batch is the next size rows of the shuffled buffer, which is
// reshuffled with the rows added since when what is left of it is down to bufMin rows. At
// the end the buffer drains. Records are taken one at a time, so the batches depend only on
// the records' order and the random source, not on how many blocks each fetch brought.
func shuffleBatches(size, bufMin int64, rng *rand.Rand, held *[]arrow.Record, fetch func() (bool, error), yield func(arrow.Record, error) bool) {
	var (
		shuffled arrow.Record   // the shuffled buffer, consumed from head
		head     int64          // rows of shuffled already yielded
		added    []arrow.Record // records added since the last shuffle
		addedN   int64
		eof      bool
	)
	defer func() {
		if shuffled != nil {
			shuffled.Release()
		}
		for _, r := range added {
			r.Release()
		}
	}()
	left := func() int64 {
		if shuffled == nil {
			return 0
		}
		return shuffled.NumRows() - head
	}
	for {
		// Fill the buffer.
		for !eof && left()+addedN < bufMin+size {
			if len(*held) == 0 {
				more, err := fetch()
				if err != nil {
					yield(nil, err)
					return
				}
				eof = !more && len(*held) == 0
				continue
			}
			r := (*held)[0]
			*held = (*held)[1:]
			if r.NumRows() == 0 {
				r.Release()
				continue
			}
			added = append(added, r)
			addedN += r.NumRows()
		}
		if left()+addedN == 0 {
			return
		}
		if addedN > 0 && (eof || left() <= bufMin) {
			parts := added
			if left() > 0 {
				parts = append([]arrow.Record{shuffled.NewSlice(head, shuffled.NumRows())}, added...)
			}
			all, err := concatRecords(parts)
			if left() > 0 {
				parts[0].Release()
			}
			for _, r := range added {
				r.Release()
			}
			added, addedN = nil, 0
			if shuffled != nil {
				shuffled.Release()
				shuffled = nil
			}
			if err != nil {
				yield(nil, err)
				return
			}
			perm, err := permuteRecord(all, rng)
			all.Release()
			if err != nil {
				yield(nil, err)
				return
			}
			shuffled, head = perm, 0
		}
		n := min(size, left())
		batch := shuffled.NewSlice(head, head+n)
		head += n
		more := yield(batch, nil)
		batch.Release()
		if !more {
			return
		}
	}
}

// permuteRecord returns rec's rows in a random order.
func permuteRecord(rec arrow.Record, rng *rand.Rand) (arrow.Record, error) {
	return takeRows(rec, permutation(int(rec.NumRows()), rng))
}

// permutation is a random permutation of [0, n) (Fisher-Yates, inside out: the indices
// are made and shuffled in one pass, as int32, the take's index type; rand.Perm makes
// ints, which the take would need converted, and swaps through a function call).
func permutation(n int, rng *rand.Rand) []int32 {
	idx := make([]int32, n)
	for i := range idx {
		j := rng.Uint64N(uint64(i) + 1)
		idx[i] = idx[j]
		idx[j] = int32(i)
	}
	return idx
}

// shufflePieces is concatRecords then permuteRecord for the common case of pieces whose
// columns are all fixed-width, without nulls, of one schema: each column is copied once
// into a buffer of its own and shuffled there in place (Fisher-Yates, one sequence of
// swaps for every column, so rows stay whole), instead of being copied by the
// concatenation and then gathered into a second buffer by a take. ok is false for any
// other pieces (the caller takes the general path).
func shufflePieces(pieces []arrow.Record, rng *rand.Rand) (rec arrow.Record, ok bool) {
	if len(pieces) == 0 {
		return nil, false
	}
	schema := pieces[0].Schema()
	widths := make([]int, schema.NumFields())
	for c, f := range schema.Fields() {
		dt, fixed := f.Type.(arrow.FixedWidthDataType)
		if !fixed || dt.ID() == arrow.BOOL || dt.BitWidth() == 0 || dt.BitWidth()%8 != 0 {
			return nil, false
		}
		widths[c] = dt.BitWidth() / 8
	}
	var n int
	for _, p := range pieces {
		if !p.Schema().Equal(schema) {
			return nil, false
		}
		for _, col := range p.Columns() {
			if col.NullN() > 0 {
				return nil, false
			}
		}
		n += int(p.NumRows())
	}
	swaps := make([]int32, n) // swaps[i]: the row swapped with row i, from the last down
	for i := n - 1; i > 0; i-- {
		swaps[i] = int32(rng.Uint64N(uint64(i) + 1))
	}
	cols := make([]arrow.Array, len(widths))
	for c, w := range widths {
		out := make([]byte, n*w)
		at := 0
		for _, p := range pieces {
			d := p.Column(c).Data()
			rows := d.Len() * w
			if rows == 0 {
				continue
			}
			at += copy(out[at:], d.Buffers()[1].Bytes()[d.Offset()*w:][:rows])
		}
		switch w {
		case 8:
			swapAll(arrow.Uint64Traits.CastFromBytes(out), swaps)
		case 4:
			swapAll(arrow.Uint32Traits.CastFromBytes(out), swaps)
		case 2:
			swapAll(arrow.Uint16Traits.CastFromBytes(out), swaps)
		case 1:
			swapAll(out, swaps)
		default:
			tmp := make([]byte, w)
			for i := n - 1; i > 0; i-- {
				a, b := out[i*w:(i+1)*w], out[int(swaps[i])*w:(int(swaps[i])+1)*w]
				copy(tmp, a)
				copy(a, b)
				copy(b, tmp)
			}
		}
		cols[c] = newArray(schema.Field(c).Type, n, nil, 0, memory.NewBufferBytes(out))
	}
	rec = array.NewRecord(schema, cols, int64(n))
	releaseAll(cols)
	return rec, true
}

func swapAll[T any](v []T, swaps []int32) {
	for i := len(v) - 1; i > 0; i-- {
		j := swaps[i]
		v[i], v[j] = v[j], v[i]
	}
}
