package formats

import (
	"container/heap"
	"fmt"
	"os"

	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/metadata"
)

// Plan splits files into read units: CSV/JSON/Binary/Text one unit per file; Parquet one unit per group
// of consecutive row groups, so that there are about `parallelism` units in total when the files
// allow it (never split a row group; never fewer units than files). Reads only Parquet footers.
// A file that is not valid Parquet gives an error naming the file. parallelism <= 0 means one
// unit per file. Extra units go to the files with the most bytes per unit; within a file the row
// groups are cut into runs of about equal compressed size.
func Plan(f Format, files []string, parallelism int) ([]Unit, error) {
	switch f {
	case Parquet:
	case CSV, JSON, Binary, Text:
		units := make([]Unit, 0, len(files))
		for _, p := range files {
			fi, err := os.Stat(p)
			if err != nil {
				return nil, pathErr(p, err)
			}
			units = append(units, Unit{Path: p, Rows: -1, Bytes: fi.Size()})
		}
		return units, nil
	default:
		return nil, fmt.Errorf("data: unknown format %d: use formats.Parquet, CSV, JSON or Binary", int(f))
	}

	metas := make([]pqFile, len(files))
	for i, p := range files {
		m, err := readFooter(p)
		if err != nil {
			return nil, err
		}
		metas[i] = m
	}
	// k[i] units for file i: start at one each, then hand out the rest to the file whose units
	// are currently the largest.
	k := make([]int, len(files))
	h := &unitHeap{}
	for i, m := range metas {
		k[i] = 1
		if len(m.rgBytes) > 1 {
			heap.Push(h, heapItem{i, m.total})
		}
	}
	for extra := parallelism - len(files); extra > 0 && h.Len() > 0; extra-- {
		it := heap.Pop(h).(heapItem)
		k[it.file]++
		if k[it.file] < len(metas[it.file].rgBytes) {
			heap.Push(h, heapItem{it.file, metas[it.file].total / int64(k[it.file])})
		}
	}
	var units []Unit
	for i, m := range metas {
		n := len(m.rgBytes)
		if n == 0 || k[i] == 1 {
			units = append(units, Unit{Path: files[i], Rows: sum(m.rgRows), Bytes: m.size, ArrowBytes: sum(m.rgArrow)})
			continue
		}
		start := 0
		remaining := m.total
		for g := k[i]; g > 0; g-- {
			// Take at least one row group, leave at least one per remaining unit, and
			// otherwise stop once this unit has its share of the remaining bytes.
			target := remaining / int64(g)
			end := start + 1
			acc := m.rgBytes[start]
			for end < n-(g-1) && acc+m.rgBytes[end]/2 <= target {
				acc += m.rgBytes[end]
				end++
			}
			if g == 1 {
				end = n
				acc = sum(m.rgBytes[start:])
			}
			rgs := make([]int, 0, end-start)
			for r := start; r < end; r++ {
				rgs = append(rgs, r)
			}
			units = append(units, Unit{Path: files[i], RowGroups: rgs, Rows: sum(m.rgRows[start:end]), Bytes: acc, ArrowBytes: sum(m.rgArrow[start:end])})
			remaining -= acc
			start = end
		}
	}
	return units, nil
}

type pqFile struct {
	size    int64
	total   int64   // sum of rgBytes
	rgRows  []int64 // per row group
	rgBytes []int64 // per row group, compressed
	rgArrow []int64 // per row group, the estimated Arrow size
}

func sum(s []int64) int64 {
	var t int64
	for _, v := range s {
		t += v
	}
	return t
}

// readFooter reads the metadata of a Parquet file.
func readFooter(path string) (pqFile, error) {
	f, err := open(path)
	if err != nil {
		return pqFile{}, err
	}
	defer f.Close()
	fi, err := f.f.Stat()
	if err != nil {
		return pqFile{}, pathErr(path, err)
	}
	md, err := parquetMeta(f)
	if err != nil {
		return pqFile{}, footerErr(path, err)
	}
	out := pqFile{size: fi.Size()}
	for r := 0; r < len(md.RowGroups); r++ {
		rg := md.RowGroup(r)
		b := rg.TotalCompressedSize()
		if b <= 0 {
			for c := 0; c < rg.NumColumns(); c++ {
				if cc, err := rg.ColumnChunk(c); err == nil {
					b += cc.TotalCompressedSize()
				}
			}
		}
		if b <= 0 {
			b = rg.TotalByteSize()
		}
		out.rgArrow = append(out.rgArrow, rowGroupArrowBytes(md, r, nil))
		out.rgRows = append(out.rgRows, rg.NumRows())
		out.rgBytes = append(out.rgBytes, b)
		out.total += b
	}
	return out, nil
}

func parquetMeta(f *retryFile) (md *metadata.FileMetaData, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	rdr, err := file.NewParquetReader(f)
	if err != nil {
		return nil, err
	}
	return rdr.MetaData(), nil
}

type heapItem struct {
	file int
	per  int64 // the file's current bytes per unit
}

type unitHeap []heapItem

func (h unitHeap) Len() int { return len(h) }
func (h unitHeap) Less(i, j int) bool {
	if h[i].per != h[j].per {
		return h[i].per > h[j].per
	}
	return h[i].file < h[j].file
}
func (h unitHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *unitHeap) Push(x any)   { *h = append(*h, x.(heapItem)) }
func (h *unitHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
