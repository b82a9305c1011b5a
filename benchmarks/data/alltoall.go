package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"sync"
	"syscall"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/ray-go/ray/data"
)

// Parts (d) sort, (e) groupby and (f) shuffle: the all-to-all operators against plain Go
// doing the same work in memory, in the same process and run.

// xResult is one of parts d, e, f.
type xResult struct {
	What      string         `json:"what"`
	Rows      int64          `json:"rows"`
	Bytes     int64          `json:"bytes"` // the data's size (d: record bytes; e, f: Arrow bytes)
	Sides     []side         `json:"sides"`
	Summaries []summaryStats `json:"summaries"`
	Ratio     float64        `json:"ratio_ray_over_baseline"`
	Goal      float64        `json:"goal_ratio"`
	Spilled   int64          `json:"max_spilled_bytes"`     // the most the store held spilled, over the ray-go trials (from Stats)
	Store     int64          `json:"store_bytes,omitempty"` // (d) with -sort-store-mib: the runtime's object store
	Stats     string         `json:"last_ray_stats"`
}

var spillRe = regexp.MustCompile(`Object store bytes spilled \(the most seen during the execution\): (\d+)`)

func spilledOf(stats string) int64 {
	if m := spillRe.FindStringSubmatch(stats); m != nil {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return n
	}
	return 0
}

// xVariant is one side of a part: run returns the rows it checked, a checksum, and
// ray-go's Stats.
type xVariant struct {
	s   *side
	ray bool
	run func() (rows int64, sum uint64, stats string, err error)
}

// processCPU is the process's user and system CPU time so far (all threads).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runX runs the variants trials times, interleaved, each after a GC and a reset of the
// peak RSS, and checks every run's rows and checksum against the first.
func runX(part string, res *xResult, trials int, variants []xVariant) error {
	var wantRows int64 = -1
	var wantSum uint64
	for trial := 0; trial < trials; trial++ {
		for _, v := range variants {
			p := startProbe()
			start, cpu0 := time.Now(), processCPU()
			rows, sum, stats, err := v.run()
			wall, cpu := time.Since(start), processCPU()-cpu0
			m := p.finish()
			if err != nil {
				return fmt.Errorf("%s: %w", v.s.Name, err)
			}
			if wantRows < 0 {
				wantRows, wantSum = rows, sum
			} else if rows != wantRows || sum != wantSum {
				return fmt.Errorf("%s: %d rows, checksum %x; the first run had %d rows, checksum %x", v.s.Name, rows, sum, wantRows, wantSum)
			}
			if v.ray {
				res.Stats = stats
				res.Spilled = max(res.Spilled, spilledOf(stats))
			}
			v.s.Trials = append(v.s.Trials, trialStats{WallS: wall.Seconds(), Rows: res.Rows, Mem: m, CPUS: cpu.Seconds()})
			logf("%s: trial %d %-26s %7.3f s  %6.2f M rows/s  cpu %6.3f s  peak RSS %s  load %s", part, trial+1, v.s.Name, wall.Seconds(),
				float64(res.Rows)/wall.Seconds()/1e6, cpu.Seconds(), mib(m.Peak), loadAvg())
		}
	}
	for _, v := range variants {
		res.Sides = append(res.Sides, *v.s)
		res.Summaries = append(res.Summaries, v.s.summary(res.Bytes))
	}
	if len(res.Summaries) == 2 && res.Summaries[1].RowsPerS > 0 {
		res.Ratio = res.Summaries[0].RowsPerS / res.Summaries[1].RowsPerS
	}
	return nil
}

// ---- (d) sort ----

const (
	sortKeyLen = 10
	sortValLen = 90
)

var sortSchema = arrow.NewSchema([]arrow.Field{
	{Name: "key", Type: arrow.BinaryTypes.Binary},
	{Name: "value", Type: arrow.BinaryTypes.Binary},
}, nil)

// genRecord fills rec with gensort-like records lo..hi-1: a random 10-byte key and a
// 90-byte value that holds the record number (as gensort's) and filler.
func genRecord(i int64, rec []byte) {
	r := rand.New(rand.NewPCG(uint64(i), 0x5047))
	for k := 0; k < sortKeyLen; k += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && k+j < sortKeyLen; j++ {
			rec[k+j] = byte(v >> (8 * j))
		}
	}
	val := rec[sortKeyLen:]
	s := strconv.AppendInt(val[:0], i, 16)
	for j := len(s); j < sortValLen; j++ {
		val[j] = "0123456789ABCDEF"[(i+int64(j))&15]
	}
}

// recordSum is valsort's checksum idea: the sum of a CRC-32 of every record, the same in
// any order.
func recordSum(key, val []byte) uint64 {
	c := crc32.NewIEEE()
	c.Write(key)
	c.Write(val)
	return uint64(c.Sum32())
}

// writeSortInput writes n records in files Parquet files (row groups of 128 Ki rows,
// uncompressed: random keys do not compress) and returns the files and the checksum.
func writeSortInput(dir string, n int64, files int) ([]string, uint64, error) {
	var paths []string
	var sum uint64
	rec := make([]byte, sortKeyLen+sortValLen)
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Uncompressed), parquet.WithDictionaryDefault(false))
	for f := 0; f < files; f++ {
		lo, hi := n*int64(f)/int64(files), n*int64(f+1)/int64(files)
		path := filepath.Join(dir, fmt.Sprintf("sort-in-%03d.parquet", f))
		out, err := os.Create(path)
		if err != nil {
			return nil, 0, err
		}
		w, err := pqarrow.NewFileWriter(sortSchema, out, props, pqarrow.DefaultWriterProps())
		if err != nil {
			out.Close()
			return nil, 0, err
		}
		for rg := lo; rg < hi; rg += 128 << 10 {
			end := min(rg+128<<10, hi)
			kb := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
			vb := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
			for i := rg; i < end; i++ {
				genRecord(i, rec)
				kb.Append(rec[:sortKeyLen])
				vb.Append(rec[sortKeyLen:])
				sum += recordSum(rec[:sortKeyLen], rec[sortKeyLen:])
			}
			k, v := kb.NewArray(), vb.NewArray()
			kb.Release()
			vb.Release()
			r := array.NewRecord(sortSchema, []arrow.Array{k, v}, end-rg)
			k.Release()
			v.Release()
			err := w.Write(r)
			r.Release()
			if err != nil {
				w.Close()
				return nil, 0, err
			}
		}
		if err := w.Close(); err != nil {
			return nil, 0, err
		}
		paths = append(paths, path)
	}
	return paths, sum, nil
}

// validateSorted reads the output files in order (valsort): every key at least the one
// before, and the checksum and count of the records.
func validateSorted(files []string) (int64, uint64, error) {
	var prev []byte
	var n int64
	var sum uint64
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return 0, 0, err
		}
		pf, err := file.NewParquetReader(f)
		if err != nil {
			f.Close()
			return 0, 0, err
		}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
		if err != nil {
			pf.Close()
			return 0, 0, err
		}
		rr, err := fr.GetRecordReader(context.Background(), nil, nil)
		if err != nil {
			pf.Close()
			return 0, 0, err
		}
		for rr.Next() {
			r := rr.Record()
			ki := r.Schema().FieldIndices("key")[0]
			vi := r.Schema().FieldIndices("value")[0]
			keys, vals := r.Column(ki).(*array.Binary), r.Column(vi).(*array.Binary)
			for i := 0; i < keys.Len(); i++ {
				k := keys.Value(i)
				if prev != nil && bytes.Compare(prev, k) > 0 {
					rr.Release()
					pf.Close()
					return 0, 0, fmt.Errorf("%s: record %d: key %x after %x", path, n, k, prev)
				}
				prev = append(prev[:0], k...)
				sum += recordSum(k, vals.Value(i))
				n++
			}
		}
		err = rr.Err()
		rr.Release()
		pf.Close()
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, 0, err
		}
	}
	return n, sum, nil
}

// sortPlain is the baseline: the same records, in memory, sorted by plain Go on all cores
// (each core sorts a slice of record indices by key, then a k-way merge), and the output
// written to a new buffer in order. The checksum is computed outside the timing, by the
// caller, over the output.
func sortPlain(recs []byte, n int64, workers int) []byte {
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(i)
	}
	const w = sortKeyLen + sortValLen
	key := func(i int32) []byte { return recs[int64(i)*w : int64(i)*w+sortKeyLen] }
	chunks := make([][]int32, workers)
	var wg sync.WaitGroup
	for c := range chunks {
		chunks[c] = idx[n*int64(c)/int64(workers) : n*int64(c+1)/int64(workers)]
		wg.Add(1)
		go func(s []int32) {
			defer wg.Done()
			slices.SortFunc(s, func(a, b int32) int { return bytes.Compare(key(a), key(b)) })
		}(chunks[c])
	}
	wg.Wait()
	out := make([]byte, len(recs))
	pos := make([]int, workers)
	o := 0
	for {
		best := -1
		for c := range chunks {
			if pos[c] < len(chunks[c]) && (best < 0 || bytes.Compare(key(chunks[c][pos[c]]), key(chunks[best][pos[best]])) < 0) {
				best = c
			}
		}
		if best < 0 {
			break
		}
		i := int64(chunks[best][pos[best]])
		copy(out[o:o+w], recs[i*w:(i+1)*w])
		o += w
		pos[best]++
	}
	return out
}

func partD(ctx context.Context, cfg config, dir string) (*xResult, error) {
	n := cfg.sortBytes / (sortKeyLen + sortValLen)
	res := &xResult{What: "sort", Rows: n, Bytes: n * (sortKeyLen + sortValLen), Goal: 0.40}
	start := time.Now()
	files, inSum, err := writeSortInput(dir, n, cfg.sortFiles)
	if err != nil {
		return nil, fmt.Errorf("writing the input: %w", err)
	}
	logf("d: input %d records (%s) in %d Parquet files, ready in %v", n, mib(res.Bytes), len(files), time.Since(start).Round(time.Millisecond))
	if cfg.sortStore > 0 {
		res.Store = cfg.sortStore // main started the local runtime with this store
		logf("d: sorting in the local runtime whose object store has %s", mib(cfg.sortStore))
	}
	// The baseline's input: the same records, in memory (made before the timing).
	var recs []byte
	if cfg.sortBaseline {
		recs = make([]byte, res.Bytes)
		for i := int64(0); i < n; i++ {
			genRecord(i, recs[i*(sortKeyLen+sortValLen):(i+1)*(sortKeyLen+sortValLen)])
		}
	}
	ray := &side{Name: "ray-go Read->Sort->Write"}
	plain := &side{Name: fmt.Sprintf("plain Go sort, %d goroutines", cfg.workers)}
	trial := 0
	variants := []xVariant{
		{s: ray, ray: true, run: func() (int64, uint64, string, error) {
			trial++
			out := filepath.Join(dir, fmt.Sprintf("sorted-%d", trial))
			defer os.RemoveAll(out)
			ds := data.ReadParquet(files).Sort([]string{"key"})
			written, err := ds.WriteParquet(ctx, out, data.Compression("none"), data.Progress(cfg.progress), data.MaxTasksInFlight(cfg.xMaxTasks))
			if err != nil {
				return 0, 0, ds.Stats(), fmt.Errorf("sorting: %w", err)
			}
			stats := ds.Stats()
			// Checked like valsort: the check reads the output back, inside the timing.
			rows, sum, err := validateSorted(written)
			if err != nil {
				err = fmt.Errorf("checking the output: %w", err)
			} else if rows != n || sum != inSum {
				err = fmt.Errorf("the output has %d records of checksum %x, the input %d of %x", rows, sum, n, inSum)
			}
			return rows, sum, stats, err
		}},
		{s: plain, run: func() (int64, uint64, string, error) {
			out := sortPlain(recs, n, cfg.workers)
			const w = sortKeyLen + sortValLen
			var sum uint64
			for i := int64(0); i < n; i++ {
				r := out[i*w : (i+1)*w]
				if i > 0 && bytes.Compare(out[(i-1)*w:(i-1)*w+sortKeyLen], r[:sortKeyLen]) > 0 {
					return 0, 0, "", fmt.Errorf("record %d out of order", i)
				}
				sum += recordSum(r[:sortKeyLen], r[sortKeyLen:])
			}
			return n, sum, "", nil
		}},
	}
	if !cfg.sortBaseline {
		variants = variants[:1]
	}
	if err := runX("d", res, cfg.xTrials, variants); err != nil {
		return nil, err
	}
	return res, nil
}

// ---- (e) groupby ----

// groupKey and groupVal make row id's key (of keys distinct values) and float value.
func groupKey(id, keys int64) int64 { return int64(mix(uint64(id)) % uint64(keys)) }
func groupVal(id int64) float64     { return float64(mix(uint64(id)^0xabcdef)%100000) / 100 }

var genGroups = data.BatchFunc("databench.genGroups", func(_ context.Context, b arrow.Record) (arrow.Record, error) {
	ids := b.Column(0).(*array.Int64).Int64Values()
	keys := groupKeysFlag
	kb := array.NewInt64Builder(memory.DefaultAllocator)
	defer kb.Release()
	vb := array.NewFloat64Builder(memory.DefaultAllocator)
	defer vb.Release()
	kb.Reserve(len(ids))
	vb.Reserve(len(ids))
	for _, id := range ids {
		kb.UnsafeAppend(groupKey(id, keys))
		vb.UnsafeAppend(groupVal(id))
	}
	k, v := kb.NewArray(), vb.NewArray()
	defer k.Release()
	defer v.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "key", Type: arrow.PrimitiveTypes.Int64}, {Name: "x", Type: arrow.PrimitiveTypes.Float64}}, nil)
	return array.NewRecord(schema, []arrow.Array{k, v}, int64(len(ids))), nil
})

// groupKeysFlag is -groupby-keys (the workers of a local runtime share the process).
var groupKeysFlag int64

// groupSum is the checksum of a groupby result: the groups, and a rounded sum of the
// sums and means.
func groupSum(sums, means float64) uint64 {
	return uint64(sums*100+0.5)*31 + uint64(means*1000+0.5)
}

func partE(ctx context.Context, cfg config) (*xResult, error) {
	n := cfg.groupRows
	res := &xResult{What: "groupby", Rows: n, Bytes: n * 16, Goal: 0.50}
	ray := &side{Name: "ray-go GroupBy.Aggregate"}
	plain := &side{Name: "plain Go map, 1 goroutine"}
	variants := []xVariant{
		{s: ray, ray: true, run: func() (int64, uint64, string, error) {
			ds := data.Range(int(n), data.Parallelism(cfg.groupBlocks)).MapBatches(genGroups).
				GroupBy("key").Aggregate(data.Sum("x"), data.Mean("x"))
			var groups int64
			var sums, means float64
			for b, err := range ds.IterBatches(ctx, data.BatchSize(64<<10), data.Progress(cfg.progress), data.MaxTasksInFlight(cfg.xMaxTasks)) {
				if err != nil {
					return 0, 0, ds.Stats(), err
				}
				s := b.Column(1).(*array.Float64).Float64Values()
				m := b.Column(2).(*array.Float64).Float64Values()
				for i := range s {
					sums += s[i]
					means += m[i]
				}
				groups += b.NumRows()
			}
			return groups, groupSum(sums, means), ds.Stats(), nil
		}},
		{s: plain, run: func() (int64, uint64, string, error) {
			type acc struct {
				sum float64
				n   int64
			}
			m := map[int64]*acc{}
			for id := int64(0); id < n; id++ {
				k := groupKey(id, groupKeysFlag)
				a := m[k]
				if a == nil {
					a = &acc{}
					m[k] = a
				}
				a.sum += groupVal(id)
				a.n++
			}
			var sums, means float64
			for _, a := range m {
				sums += a.sum
				means += a.sum / float64(a.n)
			}
			return int64(len(m)), groupSum(sums, means), "", nil
		}},
	}
	return res, runX("e", res, cfg.xTrials, variants)
}

// ---- (f) shuffle ----

func partF(ctx context.Context, cfg config) (*xResult, error) {
	n := cfg.shuffleRows
	res := &xResult{What: "shuffle", Rows: n, Bytes: n * 8, Goal: 0.50}
	ray := &side{Name: "ray-go RandomShuffle"}
	plain := &side{Name: "plain Go permutation"}
	// The checksum: the count, and the sum of id*position mod 2^64 would differ between
	// two permutations, so only what a permutation keeps is compared: the sum of ids and
	// of their squares (and that the order is not the identity).
	check := func(ids []int64, pos *int64, sum *uint64, moved *bool) {
		for _, id := range ids {
			*sum += uint64(id) + uint64(id)*uint64(id)*7
			if id != *pos {
				*moved = true
			}
			*pos++
		}
	}
	variants := []xVariant{
		{s: ray, ray: true, run: func() (int64, uint64, string, error) {
			ds := data.Range(int(n), data.Parallelism(cfg.shuffleBlocks)).RandomShuffle(data.Seed(1))
			var pos int64
			var sum uint64
			var moved bool
			for b, err := range ds.IterBatches(ctx, data.BatchSize(cfg.batch), data.Progress(cfg.progress), data.MaxTasksInFlight(cfg.xMaxTasks)) {
				if err != nil {
					return 0, 0, ds.Stats(), err
				}
				check(b.Column(0).(*array.Int64).Int64Values(), &pos, &sum, &moved)
			}
			if !moved {
				return 0, 0, ds.Stats(), fmt.Errorf("the rows came out in order")
			}
			return pos, sum, ds.Stats(), nil
		}},
		{s: plain, run: func() (int64, uint64, string, error) {
			ids := make([]int64, n)
			for i := range ids {
				ids[i] = int64(i)
			}
			r := rand.New(rand.NewPCG(1, 2))
			r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
			var pos int64
			var sum uint64
			var moved bool
			for off := 0; off < len(ids); off += cfg.batch {
				check(ids[off:min(off+cfg.batch, len(ids))], &pos, &sum, &moved)
			}
			if !moved {
				return 0, 0, "", fmt.Errorf("the rows came out in order")
			}
			return pos, sum, "", nil
		}},
	}
	return res, runX("f", res, cfg.xTrials, variants)
}

func printX(w interface{ Write([]byte) (int, error) }, part, title string, r *xResult, verbose bool) {
	fmt.Fprintf(w, "\n(%s) %s\n", part, title)
	printSummaries(w, r.Summaries, "rows/s", "MB/s")
	met := "met"
	if r.Ratio < r.Goal {
		met = "NOT met"
	}
	if len(r.Summaries) == 2 {
		fmt.Fprintf(w, "    process CPU per trial (median; whole process, cluster included): %s %.3f s, %s %.3f s\n",
			r.Summaries[0].Name, r.Summaries[0].CPUS, r.Summaries[1].Name, r.Summaries[1].CPUS)
	}
	fmt.Fprintf(w, "    ratio ray-go / baseline: %.3f (goal >= %.2f: %s); object store bytes spilled (max over trials): %s\n", r.Ratio, r.Goal, met, mib(r.Spilled))
	if verbose {
		fmt.Fprintf(w, "\n%s\n", indent(r.Stats))
	}
}
