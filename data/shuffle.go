package data

import (
	crand "crypto/rand"
	"encoding/binary"
	"math/rand/v2"

	"github.com/apache/arrow/go/v15/arrow"
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
	perm := rng.Perm(int(rec.NumRows()))
	idx := make([]int32, len(perm))
	for i, p := range perm {
		idx[i] = int32(p)
	}
	return takeRows(rec, idx)
}
