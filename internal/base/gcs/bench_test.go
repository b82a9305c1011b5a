package gcs_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
)

// Benchmarks of the Writer and the Packer against a real embedded etcd (fsync on, the
// in-process client, so etcd's own CPU is in the process and counted by cpu-ns/op).
//
//	go test -run '^$' -bench . -benchtime 2s ./internal/gcs/
//
// Metrics: keys/s or records/s (wall clock, including the final Flush), cpu-ns/op (user
// plus system CPU of the whole process per op: the Packer's and etcd's cost together),
// txns and etcd-B/op (bytes sent to etcd per op).

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type meter struct {
	b     *testing.B
	start time.Time
	cpu0  time.Duration
}

func startMeter(b *testing.B) *meter {
	b.ReportAllocs()
	b.ResetTimer()
	return &meter{b: b, start: time.Now(), cpu0: cpuTime()}
}

func (m *meter) stop(unit string, w *gcs.Writer) {
	wall := time.Since(m.start)
	cpu := cpuTime() - m.cpu0
	m.b.StopTimer()
	n := float64(m.b.N)
	m.b.ReportMetric(n/wall.Seconds(), unit+"/s")
	m.b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/op")
	st := w.Stats()
	m.b.ReportMetric(float64(st.Txns), "txns")
	m.b.ReportMetric(float64(st.Bytes)/n, "etcd-B/op")
}

// spec returns a lineage-spec-like record of about 200 bytes: structured text with IDs
// and a little binary argument data.
func spec(buf []byte, i int, rng *rand.Rand) []byte {
	buf = append(buf[:0], "job=00000001 task="...)
	buf = appendHex(buf, uint64(i))
	buf = append(buf, " fn=demo.square parent="...)
	buf = appendHex(buf, uint64(i/7))
	buf = append(buf, " owner=node-3 retries=3 res=CPU:1 args=["...)
	for range 8 {
		buf = binary.LittleEndian.AppendUint64(buf, rng.Uint64()%1000)
	}
	return append(buf, ']')
}

func appendHex(buf []byte, v uint64) []byte {
	const digits = "0123456789abcdef"
	for shift := 60; shift >= 0; shift -= 4 {
		buf = append(buf, digits[(v>>uint(shift))&0xf])
	}
	return buf
}

func BenchmarkWriterPut(b *testing.B) {
	s := embedded(b, false)
	ctx := context.Background()
	w := newWriter(b, s, gcs.WriterConfig{})
	val := make([]byte, 100)
	keys := make([]string, b.N)
	for i := range keys {
		keys[i] = fmt.Sprintf("bench/w/%016x", i)
	}
	m := startMeter(b)
	for _, k := range keys {
		w.Put(k, val)
	}
	if err := w.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	m.stop("keys", w)
}

func BenchmarkWriterPutParallel(b *testing.B) {
	s := embedded(b, false)
	ctx := context.Background()
	w := newWriter(b, s, gcs.WriterConfig{})
	val := make([]byte, 100)
	m := startMeter(b)
	b.RunParallel(func(pb *testing.PB) {
		r := rand.Uint64()
		for i := 0; pb.Next(); i++ {
			w.Put(fmt.Sprintf("bench/p/%x/%d", r, i), val)
		}
	})
	if err := w.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	m.stop("keys", w)
}

// BenchmarkPackerAppend: records appended and kept (lineage that stays in scope).
func BenchmarkPackerAppend(b *testing.B) {
	s := embedded(b, false)
	benchPacker(b, s, 0)
}

// BenchmarkPackerAppendRemove: each record is removed 20 000 records after it was
// appended (about 0.1 s at 150 k/s): the steady state of a running cluster, where pages
// are written, then deleted or rewritten.
func BenchmarkPackerAppendRemove(b *testing.B) {
	s := embedded(b, false)
	benchPacker(b, s, 20_000)
}

// BenchmarkPackerAppendMem: the hot path alone (memstore behind the Writer).
func BenchmarkPackerAppendMem(b *testing.B) {
	benchPacker(b, newMem(b), 20_000)
}

func benchPacker(b *testing.B, s gcs.Store, window int) {
	ctx := context.Background()
	w := newWriter(b, s, gcs.WriterConfig{})
	p := newPacker(b, w, gcs.PackerConfig{RewriteMinAge: time.Second}) // the default
	rng := rand.New(rand.NewPCG(1, 2))
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = fmt.Sprintf("%016x", i)
	}
	buf := make([]byte, 0, 256)
	m := startMeter(b)
	for i, id := range ids {
		buf = spec(buf, i, rng)
		if err := p.Append(id, buf); err != nil {
			b.Fatal(err)
		}
		if window > 0 && i >= window {
			p.Remove(ids[i-window])
		}
	}
	if err := p.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	m.stop("records", w)
	st := p.Stats()
	if st.RawBytes > 0 {
		b.ReportMetric(float64(st.RawBytes)/float64(st.PackedBytes), "ratio")
	}
}

// BenchmarkPackerAppendRemoveSoon: the short-lived task stream of microbench
// single_client_tasks_async with lineage on: batches of 1000 records (about one page of
// lineage specs) are appended, then all removed soonAfter later, with the node's lineage
// configuration (SealDelay 50 ms). Records that die within SealDelay should cost etcd
// nothing: etcd-B/op, pages/op and written/op (records in written pages per record
// appended) show what still reaches it.
func BenchmarkPackerAppendRemoveSoon(b *testing.B) {
	const batch, soonAfter = 1000, 3 * time.Millisecond
	s := embedded(b, false)
	ctx := context.Background()
	w := newWriter(b, s, gcs.WriterConfig{})
	p := newPacker(b, w, gcs.PackerConfig{SealDelay: 50 * time.Millisecond, RewriteMinAge: time.Second})
	rng := rand.New(rand.NewPCG(1, 2))
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = fmt.Sprintf("%016x", i)
	}
	buf := make([]byte, 0, 256)
	m := startMeter(b)
	for start := 0; start < b.N; start += batch {
		end := min(start+batch, b.N)
		for i := start; i < end; i++ {
			buf = spec(buf, i, rng)
			if err := p.Append(ids[i], buf); err != nil {
				b.Fatal(err)
			}
		}
		time.Sleep(soonAfter) // pacing the load: records die soon after they were appended
		for _, id := range ids[start:end] {
			p.Remove(id)
		}
	}
	if err := p.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	m.stop("records", w)
	st := p.Stats()
	n := float64(b.N)
	b.ReportMetric(float64(st.PagesWritten)/n, "pages/op")
	b.ReportMetric(float64(st.Records)/n, "written/op")
	b.ReportMetric(float64(st.RawBytes)/n, "raw-B/op")
}
