package data

import (
	"context"
	"fmt"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/bitutil"
	"github.com/apache/arrow/go/v15/arrow/compute"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// take gathers rows of arrays. Arrow Go v15's compute.Take is correct but slow on
// variable-size binary (about 0.3 ms per row of a 5,000-row binary array here, from its
// per-row output growth), and the exchanges move every row through a take at least twice,
// so fixed-width and binary/string arrays are gathered here with one pass and exact
// allocations; other types (lists, structs...) go to compute.Take. A negative index gives
// a null.

// takeIdx returns a's rows idx in that order.
func takeIdx(a arrow.Array, idx []int32) (arrow.Array, error) {
	n := len(idx)
	if a.DataType().ID() == arrow.NULL {
		return array.NewNull(n), nil
	}
	validity, nulls := takeValidity(a, idx)
	d := a.Data()
	switch dt := a.DataType().(type) {
	case arrow.FixedWidthDataType:
		if dt.ID() == arrow.BOOL || dt.BitWidth()%8 != 0 {
			break
		}
		w := dt.BitWidth() / 8
		src := d.Buffers()[1].Bytes()[d.Offset()*w:]
		out := make([]byte, n*w)
		switch w {
		case 8:
			s := arrow.Int64Traits.CastFromBytes(src)
			o := arrow.Int64Traits.CastFromBytes(out)
			for i, x := range idx {
				if x >= 0 {
					o[i] = s[x]
				}
			}
		case 4:
			s := arrow.Int32Traits.CastFromBytes(src)
			o := arrow.Int32Traits.CastFromBytes(out)
			for i, x := range idx {
				if x >= 0 {
					o[i] = s[x]
				}
			}
		default:
			for i, x := range idx {
				if x >= 0 {
					copy(out[i*w:(i+1)*w], src[int(x)*w:(int(x)+1)*w])
				}
			}
		}
		return newArray(dt, n, validity, nulls, memory.NewBufferBytes(out)), nil
	case *arrow.BinaryType, *arrow.StringType:
		offs := arrow.Int32Traits.CastFromBytes(d.Buffers()[1].Bytes())[d.Offset():]
		var vals []byte
		if b := d.Buffers()[2]; b != nil {
			vals = b.Bytes()
		}
		total := 0
		for _, x := range idx {
			if x >= 0 {
				total += int(offs[x+1] - offs[x])
			}
		}
		if int64(total) > 1<<31-1 {
			break // too big for int32 offsets: let compute.Take say so
		}
		oo := make([]int32, n+1)
		ov := make([]byte, total)
		p := int32(0)
		for i, x := range idx {
			if x >= 0 {
				p += int32(copy(ov[p:], vals[offs[x]:offs[x+1]]))
			}
			oo[i+1] = p
		}
		return newArray(dt, n, validity, nulls, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(oo)), memory.NewBufferBytes(ov)), nil
	case *arrow.LargeBinaryType, *arrow.LargeStringType:
		offs := arrow.Int64Traits.CastFromBytes(d.Buffers()[1].Bytes())[d.Offset():]
		var vals []byte
		if b := d.Buffers()[2]; b != nil {
			vals = b.Bytes()
		}
		total := int64(0)
		for _, x := range idx {
			if x >= 0 {
				total += offs[x+1] - offs[x]
			}
		}
		oo := make([]int64, n+1)
		ov := make([]byte, total)
		p := int64(0)
		for i, x := range idx {
			if x >= 0 {
				p += int64(copy(ov[p:], vals[offs[x]:offs[x+1]]))
			}
			oo[i+1] = p
		}
		return newArray(dt, n, validity, nulls, memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(oo)), memory.NewBufferBytes(ov)), nil
	}
	// Other types: compute.Take, with nulls for negative indices.
	ib := array.NewInt32Builder(mem)
	defer ib.Release()
	ib.Reserve(n)
	for _, x := range idx {
		if x < 0 {
			ib.AppendNull()
		} else {
			ib.UnsafeAppend(x)
		}
	}
	ia := ib.NewArray()
	defer ia.Release()
	out, err := compute.TakeArray(context.Background(), a, ia)
	if err != nil {
		return nil, fmt.Errorf("data: take: %w", err)
	}
	return out, nil
}

// takeValidity is the validity bitmap of a's rows idx (nil when none is null).
func takeValidity(a arrow.Array, idx []int32) (*memory.Buffer, int) {
	has := a.NullN() > 0
	neg := false
	for _, x := range idx {
		if x < 0 {
			neg = true
			break
		}
	}
	if !has && !neg {
		return nil, 0
	}
	bits := make([]byte, bitutil.BytesForBits(int64(len(idx))))
	nulls := 0
	for i, x := range idx {
		if x >= 0 && (!has || a.IsValid(int(x))) {
			bitutil.SetBit(bits, i)
		} else {
			nulls++
		}
	}
	return memory.NewBufferBytes(bits), nulls
}

func newArray(dt arrow.DataType, n int, validity *memory.Buffer, nulls int, bufs ...*memory.Buffer) arrow.Array {
	d := array.NewData(dt, n, append([]*memory.Buffer{validity}, bufs...), nil, nulls, 0)
	defer d.Release()
	return array.MakeFromData(d)
}
