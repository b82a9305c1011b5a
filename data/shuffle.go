package data

import (
	crand "crypto/rand"
	"encoding/binary"
	"math/rand/v2"
	"slices"

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

// pieceShuffler permutes the rows of pieces fed one after the other, as they arrive: a
// shuffle reduce feeds it the pieces of the map outputs that exist while later maps still
// run. It is Fisher-Yates inside out (row i of the whole goes to a random place j <= i and
// the row there moves to i), so the result depends only on the pieces, their order and the
// rng, not on when they arrived. Pieces whose columns are all fixed-width without nulls, of
// one schema, are copied once into a growing buffer per column and shuffled there; any
// other piece switches to the general path (the rows so far and the rest concatenated,
// then the same inside-out sequence continued over row indices and a take).
type pieceShuffler struct {
	rng    *rand.Rand
	schema *arrow.Schema
	widths []int
	cols   [][]byte // fast path: the rows so far, shuffled
	n      int
	slow   []arrow.Record // general path: the rows so far (the first shuffled) and the pieces after
	js     []uint64
	hint   int // expected rows in all (reserve)
}

func newPieceShuffler(rng *rand.Rand) *pieceShuffler { return &pieceShuffler{rng: rng} }

// reserve sizes the fast path's buffers for about rows rows in all (an estimate: they
// still grow past it), so that they are not copied as they grow.
func (s *pieceShuffler) reserve(rows int) { s.hint = rows }

// fixedWidths returns each column's width in bytes, or false if a column is not fixed-width
// (or is boolean) or has nulls.
func fixedWidths(rec arrow.Record) ([]int, bool) {
	widths := make([]int, rec.NumCols())
	for c, f := range rec.Schema().Fields() {
		dt, fixed := f.Type.(arrow.FixedWidthDataType)
		if !fixed || dt.ID() == arrow.BOOL || dt.BitWidth() == 0 || dt.BitWidth()%8 != 0 || rec.Column(c).NullN() > 0 {
			return nil, false
		}
		widths[c] = dt.BitWidth() / 8
	}
	return widths, true
}

// add feeds the next piece (not retained unless on the general path).
func (s *pieceShuffler) add(p arrow.Record) {
	if s.schema == nil {
		s.schema = p.Schema()
		if w, ok := fixedWidths(p); ok {
			s.widths, s.cols = w, make([][]byte, len(w))
		}
	}
	if s.slow == nil && s.cols != nil {
		if w, ok := fixedWidths(p); ok && p.Schema().Equal(s.schema) && slices.Equal(w, s.widths) {
			s.addFixed(p)
			return
		}
		s.toSlow()
	}
	if s.slow == nil {
		// General from the start: nothing shuffled yet.
		s.slow = []arrow.Record{}
	}
	p.Retain()
	s.slow = append(s.slow, p)
}

func (s *pieceShuffler) addFixed(p arrow.Record) {
	k := int(p.NumRows())
	if k == 0 {
		return
	}
	s.js = s.js[:0]
	for i := s.n; i < s.n+k; i++ {
		s.js = append(s.js, s.rng.Uint64N(uint64(i)+1))
	}
	for c, w := range s.widths {
		d := p.Column(c).Data()
		src := d.Buffers()[1].Bytes()[d.Offset()*w:][:k*w]
		out := s.cols[c]
		if need := (s.n + k) * w; need > cap(out) {
			grown := make([]byte, len(out), max(need, 2*cap(out), s.hint*w))
			copy(grown, out)
			out = grown
		}
		out = out[:(s.n+k)*w]
		switch w {
		case 8:
			insideOut(arrow.Uint64Traits.CastFromBytes(out), arrow.Uint64Traits.CastFromBytes(src), s.n, s.js)
		case 4:
			insideOut(arrow.Uint32Traits.CastFromBytes(out), arrow.Uint32Traits.CastFromBytes(src), s.n, s.js)
		case 2:
			insideOut(arrow.Uint16Traits.CastFromBytes(out), arrow.Uint16Traits.CastFromBytes(src), s.n, s.js)
		case 1:
			insideOut(out, src, s.n, s.js)
		default:
			for r, j := range s.js {
				i := s.n + r
				if int(j) != i {
					copy(out[i*w:(i+1)*w], out[int(j)*w:(int(j)+1)*w])
				}
				copy(out[int(j)*w:(int(j)+1)*w], src[r*w:(r+1)*w])
			}
		}
		s.cols[c] = out
	}
	s.n += k
}

// insideOut places src's rows, the rows n, n+1, ... of the whole, at js[r] <= n+r.
func insideOut[T any](out, src []T, n int, js []uint64) {
	for r, j := range js {
		out[n+r] = out[j]
		out[j] = src[r]
	}
}

// fixedRecord is the fast path's rows so far as a record.
func (s *pieceShuffler) fixedRecord() arrow.Record {
	cols := make([]arrow.Array, len(s.widths))
	for c := range s.widths {
		b := s.cols[c]
		if b == nil {
			b = []byte{}
		}
		cols[c] = newArray(s.schema.Field(c).Type, s.n, nil, 0, memory.NewBufferBytes(b))
	}
	rec := array.NewRecord(s.schema, cols, int64(s.n))
	releaseAll(cols)
	return rec
}

func (s *pieceShuffler) toSlow() {
	s.slow = []arrow.Record{s.fixedRecord()}
	s.cols = nil
}

// finish returns the shuffled rows (nil, with no error, if no piece was fed).
func (s *pieceShuffler) finish() (arrow.Record, error) {
	if s.schema == nil {
		return nil, nil
	}
	if s.slow == nil {
		return s.fixedRecord(), nil
	}
	defer releaseRecords(s.slow)
	all, err := concatRecords(s.slow)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	total := int(all.NumRows())
	idx := make([]int32, total)
	for i := range idx {
		idx[i] = int32(i)
	}
	for i := s.n; i < total; i++ { // rows [0, s.n) are shuffled already
		j := s.rng.Uint64N(uint64(i) + 1)
		idx[i] = idx[j]
		idx[j] = int32(i)
	}
	return takeRows(all, idx)
}

func releaseRecords(recs []arrow.Record) {
	for _, r := range recs {
		r.Release()
	}
}
