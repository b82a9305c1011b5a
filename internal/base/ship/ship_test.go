package ship

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
)

func sumOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// content makes n bytes that compress somewhat (like an executable).
func content(n int) []byte {
	b := make([]byte, n)
	x := uint32(1)
	for i := range b {
		x = x*1664525 + 1013904223
		if i%3 == 0 {
			b[i] = byte(x >> 24)
		} else {
			b[i] = byte(i / 7)
		}
	}
	return b
}

func count(t *testing.T, s gcs.Store, prefix string) int64 {
	t.Helper()
	n, err := s.Count(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A held blob is stored once however many hold it, fetched and verified byte for byte, and
// leaves the GCS when its last holder stops.
func TestHoldFetchOnceAndGone(t *testing.T) {
	clock := memstore.NewManualClock(time.Unix(1000, 0))
	s := memstore.New(memstore.Options{Clock: clock})
	defer s.Close()
	data := content(3*ChunkBytes + 12345)
	sum := sumOf(data)
	ctx1, stop1 := context.WithCancel(context.Background())
	done1, err := Hold(ctx1, s, sum, bytes.NewReader(data), int64(len(data)), 1<<30, nil)
	if err != nil {
		t.Fatal(err)
	}
	chunks := count(t, s, chunkPrefix)
	if chunks == 0 {
		t.Fatal("no chunks stored")
	}
	ctx2, stop2 := context.WithCancel(context.Background())
	done2, err := Hold(ctx2, s, sum, bytes.NewReader(data), int64(len(data)), 1<<30, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := count(t, s, chunkPrefix); got != chunks {
		t.Fatalf("second holder: %d chunk keys, want the first's %d (stored once)", got, chunks)
	}
	var out bytes.Buffer
	if err := Fetch(context.Background(), s, sum, 1<<30, &out); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), data) {
		t.Fatal("fetched bytes differ")
	}
	if err := Fetch(context.Background(), s, sum, int64(len(data)-1), &out); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("fetch over the limit: %v, want ErrTooLarge", err)
	}
	stop1()
	<-done1
	clock.Advance(2 * TTL)
	if err := Fetch(context.Background(), s, sum, 1<<30, &bytes.Buffer{}); err != nil {
		t.Fatalf("with one holder left: %v", err)
	}
	stop2()
	<-done2
	clock.Advance(2 * TTL)
	if n := count(t, s, Prefix); n != 0 {
		t.Fatalf("%d blob keys left after every holder stopped", n)
	}
	if err := Fetch(context.Background(), s, sum, 1<<30, &bytes.Buffer{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("fetch after the end: %v, want ErrNotFound", err)
	}
}

// Content that does not hash to the name it is uploaded under is refused at upload.
func TestUploadRefusesWrongContent(t *testing.T) {
	s := memstore.New(memstore.Options{})
	defer s.Close()
	data := content(1000)
	err := Upload(context.Background(), s, sumOf([]byte("other")), bytes.NewReader(data), int64(len(data)), 1<<20, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "changed while it was uploaded") {
		t.Fatalf("err %v", err)
	}
	if n := count(t, s, Prefix); n != 0 {
		t.Fatalf("%d keys left by a refused upload", n)
	}
}

// Every way a stored blob can be damaged is refused by Fetch, and the cache keeps nothing.
func TestFetchRefusesDamage(t *testing.T) {
	data := content(2*ChunkBytes + 999)
	sum := sumOf(data)
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, s gcs.Store, m Meta)
		want   error
	}{
		{"chunk flipped", func(t *testing.T, s gcs.Store, m Meta) {
			k := chunkKey(sum, gcs.LeaseID(m.Lease), 1)
			kv, _, _ := s.Get(context.Background(), k)
			v := bytes.Clone(kv.Value)
			v[len(v)/2] ^= 0xff
			put(t, s, k, v, m)
		}, ErrCorrupt},
		{"chunk gone", func(t *testing.T, s gcs.Store, m Meta) {
			if _, err := s.Delete(context.Background(), chunkKey(sum, gcs.LeaseID(m.Lease), m.Chunks-1)); err != nil {
				t.Fatal(err)
			}
		}, ErrNotFound},
		{"chunk too large", func(t *testing.T, s gcs.Store, m Meta) {
			put(t, s, chunkKey(sum, gcs.LeaseID(m.Lease), 0), make([]byte, ChunkBytes+1), m)
		}, ErrCorrupt},
		{"size lies", func(t *testing.T, s gcs.Store, m Meta) {
			m.Size--
			b := []byte(`{"size":` + itoa(m.Size) + `,"chunks":` + itoa(int64(m.Chunks)) + `,"stored":` + itoa(m.Stored) + `,"lease":` + itoa(m.Lease) + `}`)
			put(t, s, MetaKey(sum), b, m)
		}, ErrCorrupt},
		{"record garbage", func(t *testing.T, s gcs.Store, m Meta) {
			put(t, s, MetaKey(sum), []byte("{\"size\":-1"), m)
		}, ErrCorrupt},
		{"other content", func(t *testing.T, s gcs.Store, m Meta) {
			other := content(2*ChunkBytes + 999)
			other[5] ^= 1
			if _, err := writeChunks(context.Background(), s, sumOf(other), gcs.LeaseID(m.Lease), bytes.NewReader(other), int64(len(other))); err != nil {
				t.Fatal(err)
			}
			// Move the other content's chunks under this blob's name.
			kvs, _, _ := s.List(context.Background(), chunksOf(sumOf(other), gcs.LeaseID(m.Lease)))
			for i, kv := range kvs {
				put(t, s, chunkKey(sum, gcs.LeaseID(m.Lease), i), kv.Value, m)
			}
		}, ErrCorrupt},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := memstore.New(memstore.Options{})
			defer s.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if _, err := Hold(ctx, s, sum, bytes.NewReader(data), int64(len(data)), 1<<30, nil); err != nil {
				t.Fatal(err)
			}
			kv, _, _ := s.Get(ctx, MetaKey(sum))
			m, err := DecodeMeta(kv.Value)
			if err != nil {
				t.Fatal(err)
			}
			c.damage(t, s, m)
			dir := t.TempDir()
			cache := Cache{Dir: filepath.Join(dir, "bin"), Limit: 1 << 30}
			_, err = cache.Path(ctx, s, sum, nil)
			if !errors.Is(err, c.want) {
				t.Fatalf("err %v, want %v", err, c.want)
			}
			ents, _ := os.ReadDir(cache.Dir)
			if len(ents) != 0 {
				t.Fatalf("the cache kept %v after a failed fetch", ents)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func put(t *testing.T, s gcs.Store, k string, v []byte, m Meta) {
	t.Helper()
	if _, err := s.Put(context.Background(), k, v, gcs.LeaseID(m.Lease)); err != nil {
		t.Fatal(err)
	}
}

// The cache fetches once, reuses its verified file (0700), fetches again when the file was
// changed on disk, and evicts the least recently used beyond its size cap.
func TestCache(t *testing.T) {
	s := memstore.New(memstore.Options{})
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sums []string
	for i := range 3 {
		data := content(100000 + i)
		sum := sumOf(data)
		sums = append(sums, sum)
		if _, err := Hold(ctx, s, sum, bytes.NewReader(data), int64(len(data)), 1<<30, nil); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "bin")
	c := Cache{Dir: dir, Limit: 1 << 20, MaxBytes: 250000}
	p0, err := c.Path(ctx, s, sums[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p0)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("cached file: %v %v", fi, err)
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 {
		t.Fatalf("cache dir mode %v", di.Mode().Perm())
	}
	if err := os.WriteFile(p0, []byte("tampered"), 0o700); err != nil {
		t.Fatal(err)
	}
	if p, err := c.Path(ctx, s, sums[0], nil); err != nil || p != p0 {
		t.Fatal(p, err)
	}
	if got, _ := FileSum(p0); got != sums[0] {
		t.Fatal("a tampered cache file was used")
	}
	old := time.Now().Add(-time.Hour)
	_ = os.Chtimes(p0, old, old)
	if _, err := c.Path(ctx, s, sums[1], nil); err != nil {
		t.Fatal(err)
	}
	// Two files fit; the third evicts the least recently used (sums[0]) unless kept.
	if _, err := c.Path(ctx, s, sums[2], map[string]bool{sums[0]: true}); err != nil {
		t.Fatal(err)
	}
	left := names(t, dir)
	if !left[sums[0]] || left[sums[1]] || !left[sums[2]] {
		t.Fatalf("kept %v: want sums[0] (kept) and sums[2] (fresh)", left)
	}
}

func names(t *testing.T, dir string) map[string]bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, e := range ents {
		m[e.Name()] = true
	}
	return m
}
