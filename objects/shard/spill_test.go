package shard

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/fuzzing"
	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestSpillCorruptLength: one flipped bit in a spill file's length field (a claim of
// 512 GiB) used to make the reader allocate the claimed size before checking anything, a
// fatal out-of-memory. The reader knows the object's size; a file that disagrees, or is
// larger than a spill of that size can be, is refused at once, with an error that names
// the file and says what is wrong.
func TestSpillCorruptLength(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	id := ids.PutID(ids.NewRootTaskID(), 1)
	var sum uint32
	write := func(name string) string {
		p := filepath.Join(dir, name)
		var err error
		if _, sum, err = writeSpill(p, id, data); err != nil {
			t.Fatal(err)
		}
		return p
	}
	size := int64(len(data))
	rec := func(path string) spillRecord { return spillRecord{path: path, id: id, size: size, sum: sum} }
	if got, err := readSpill(rec(write("good.zst"))); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("good file: %v", err)
	}

	flipped := write("flipped.zst")
	b, _ := os.ReadFile(flipped)
	b[4+4] ^= 0x80 // bit 39 of the length: +512 GiB
	if err := os.WriteFile(flipped, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	fuzzing.CheckAlloc(t, 1<<20, "reading a spill file claiming 512 GiB", func() { _, err = readSpill(rec(flipped)) })
	if !errors.Is(err, ErrCorruptSpill) || !strings.Contains(err.Error(), flipped) || !strings.Contains(err.Error(), "header says 549756862464 bytes, the object has 1048576") {
		t.Fatalf("flipped length: %v", err)
	}

	grown := write("grown.zst")
	f, _ := os.OpenFile(grown, os.O_WRONLY|os.O_APPEND, 0)
	_, _ = f.Write(make([]byte, 2<<20))
	f.Close()
	fuzzing.CheckAlloc(t, 1<<20, "reading a grown spill file", func() { _, err = readSpill(rec(grown)) })
	if !errors.Is(err, ErrCorruptSpill) || !strings.Contains(err.Error(), grown) || !strings.Contains(err.Error(), "more than a spill of a 1048576-byte object can take") {
		t.Fatalf("grown file: %v", err)
	}

}

// TestSpillFileChecks: a spill file is checked against what the shard wrote, not only
// against itself. A valid file of another object (copied over this one's), or a valid
// file of this object's ID with other bytes (left from an earlier spill), used to be read
// back as this object's bytes with no error. Both are corrupt now; a file that is gone is
// reported as missing (it used to read "corrupt: open ...: no such file or directory").
func TestSpillFileChecks(t *testing.T) {
	dir := t.TempDir()
	root := ids.NewRootTaskID()
	a, b := ids.PutID(root, 1), ids.PutID(root, 2)
	va, vb := bytes.Repeat([]byte("a"), 5000), bytes.Repeat([]byte("b"), 5000)
	pa, pathB := filepath.Join(dir, "a.zst"), filepath.Join(dir, "b.zst")
	_, sa, err := writeSpill(pa, a, va)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := writeSpill(pathB, b, vb); err != nil {
		t.Fatal(err)
	}
	recA := spillRecord{path: pa, id: a, size: int64(len(va)), sum: sa}
	if got, err := readSpill(recA); err != nil || !bytes.Equal(got, va) {
		t.Fatalf("good file: %v", err)
	}

	// b's file copied over a's: same size, valid in itself.
	copyFile(t, pathB, pa)
	got, err := readSpill(recA)
	if !errors.Is(err, ErrCorruptSpill) || !strings.Contains(err.Error(), pa) || !strings.Contains(err.Error(), "holds another object ("+b.String()+")") || got != nil {
		t.Fatalf("another object's file: %d bytes, %v; want ErrCorruptSpill naming the file and the object it holds", len(got), err)
	}

	// A file of a's ID with other bytes (an earlier spill): its checksum is its own, the
	// shard's record of what it wrote is not.
	if _, _, err := writeSpill(pa, a, bytes.Repeat([]byte("A"), len(va))); err != nil {
		t.Fatal(err)
	}
	got, _, err = readSpillSum(recA)
	if !errors.Is(err, ErrCorruptSpill) || !strings.Contains(err.Error(), "other bytes than were spilled") || got != nil {
		t.Fatalf("an earlier spill's file: %d bytes, %v; want ErrCorruptSpill", len(got), err)
	}

	// Gone.
	os.Remove(pa)
	_, err = readSpill(recA)
	if !errors.Is(err, ErrMissingSpill) || errors.Is(err, ErrCorruptSpill) || err.Error() != "shard: spill file is missing: "+pa {
		t.Fatalf("missing file: %v", err)
	}
}

// TestSpillFileOfAnotherObject: the same through the grain, as the tester saw it through
// ray.Get: of two spilled objects, one's file is copied over the other's; a Get and a
// pull of the victim fail naming it and the object its file holds, never answer with the
// other object's bytes; the other object still reads right. And a file left from an
// earlier spill of the same ID (freed, put again with other bytes, spilled again, the old
// file put back) fails too.
func TestSpillFileOfAnotherObject(t *testing.T) {
	dir := t.TempDir()
	const size = 256 << 10
	ask := startShard(t, Config{Node: "n1", Budget: 1 << 20, SpillDir: dir})
	root := ids.NewRootTaskID()
	value := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, size) }
	var objs []ids.ObjectID
	for i := range 8 { // 2 MiB into a 1 MiB budget: the first ones go to disk
		id := ids.PutID(root, uint32(i+1))
		objs = append(objs, id)
		ask(&pb.PutObject{ObjectId: id[:], Data: value(i)})
	}
	a, b := objs[0], objs[1]
	waitSpilled := func(want ...ids.ObjectID) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for _, id := range want {
			for !isSpilled(ask, id) {
				if time.Now().After(deadline) {
					t.Fatalf("object %s was not spilled", id)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	waitSpilled(a, b)
	copyFile(t, spillFile(t, dir, b), spillFile(t, dir, a))

	checkLost := func(id ids.ObjectID, why string) {
		t.Helper()
		r := ask(&pb.GetObject{ObjectId: id[:]}).(*pb.GetObjectReply)
		if r.Found || len(r.Data) != 0 || !strings.Contains(r.Error, id.String()) || !strings.Contains(r.Error, why) {
			t.Fatalf("get of %s: found %v (%d bytes), error %q; want an error naming it, saying %q", id, r.Found, len(r.Data), r.Error, why)
		}
		p := ask(&pb.PullObject{ObjectId: id[:], Length: MaxPullChunk}).(*pb.PullObjectReply)
		if p.Found || len(p.Data) != 0 || !strings.Contains(p.Error, id.String()) || !strings.Contains(p.Error, why) {
			t.Fatalf("pull of %s: found %v (%d bytes), error %q; want an error naming it, saying %q", id, p.Found, len(p.Data), p.Error, why)
		}
	}
	checkLost(a, "holds another object ("+b.String()+")")
	if r := ask(&pb.GetObject{ObjectId: b[:]}).(*pb.GetObjectReply); !r.Found || !bytes.Equal(r.Data, value(1)) {
		t.Fatalf("the object whose file was copied: found %v, error %q", r.Found, r.Error)
	}

	// A file of an earlier spill of the same ID. b's file is kept aside, b freed and put
	// again with other bytes, pushed out to disk again, and the old file put back.
	old := filepath.Join(t.TempDir(), "old.zst")
	copyFile(t, spillFile(t, dir, b), old)
	ask(&pb.FreeObjects{ObjectIds: [][]byte{b[:]}})
	ask(&pb.PutObject{ObjectId: b[:], Data: value(100)})
	for i := range 8 {
		id := ids.PutID(root, uint32(100+i))
		ask(&pb.PutObject{ObjectId: id[:], Data: value(i)})
	}
	waitSpilled(b)
	copyFile(t, old, spillFile(t, dir, b))
	checkLost(b, "other bytes than were spilled")

	// Gone: said so.
	os.Remove(spillFile(t, dir, b))
	checkLost(b, "spill file is missing")
}

// isSpilled says whether the shard has id on disk only.
func isSpilled(ask func(m any) any, id ids.ObjectID) bool {
	st := ask(&pb.StoreStats{Top: 1 << 20}).(*pb.StoreStatsReply)
	for _, o := range st.Largest {
		if bytes.Equal(o.ObjectId, id[:]) {
			return o.Spilled
		}
	}
	return false
}

// spillFile is the path of id's latest spill file in dir (the highest number: spillPath).
func spillFile(t *testing.T, dir string, id ids.ObjectID) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, id.String()+"-*.zst"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no spill file of %s in %s (%v)", id, dir, err)
	}
	latest, latestN := "", uint64(0)
	for _, f := range files {
		n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), id.String()+"-"), ".zst"), 10, 64)
		if err != nil {
			t.Fatalf("spill file %s: %v", f, err)
		}
		if latest == "" || n > latestN {
			latest, latestN = f, n
		}
	}
	return latest
}

// TestRespillOfAnIDGetsItsOwnFile: an object freed and put again (the same ID: a Put of a
// retried task, a result lineage made again) and spilled again writes a file of its own.
// The freed copy's file is removed on a goroutine of its own, and used to be the same path:
// a removal that came late deleted the new spill ("spill file is missing", the object
// lost). Both files are checked: the old one goes, the new one stays and reads back.
func TestRespillOfAnIDGetsItsOwnFile(t *testing.T) {
	dir := t.TempDir()
	const size = 256 << 10
	ask := startShard(t, Config{Node: "n1", Budget: 1 << 20, SpillDir: dir})
	root := ids.NewRootTaskID()
	value := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, size) }
	a := ids.PutID(root, 1)
	fill := func(from int) { // 2 MiB more into a 1 MiB budget: a goes to disk
		for i := range 8 {
			id := ids.PutID(root, uint32(from+i))
			ask(&pb.PutObject{ObjectId: id[:], Data: value(i)})
		}
	}
	waitSpilled := func(id ids.ObjectID) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !isSpilled(ask, id) {
			if time.Now().After(deadline) {
				t.Fatalf("object %s was not spilled", id)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	ask(&pb.PutObject{ObjectId: a[:], Data: value(1)})
	fill(100)
	waitSpilled(a)
	first := spillFile(t, dir, a)
	ask(&pb.FreeObjects{ObjectIds: [][]byte{a[:]}})
	ask(&pb.PutObject{ObjectId: a[:], Data: value(2)})
	fill(200)
	waitSpilled(a)
	second := spillFile(t, dir, a)
	if second == first {
		t.Fatalf("both spills of %s went to %s: the first one's removal can delete the second", a, first)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(first); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the freed copy's spill file %s is still there", first)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := ask(&pb.GetObject{ObjectId: a[:]}).(*pb.GetObjectReply); !r.Found || !bytes.Equal(r.Data, value(2)) {
		t.Fatalf("the object put again: found %v, error %q", r.Found, r.Error)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSpillFileModes: spill files are readable by their owner only, in a directory only
// the owner can enter.
func TestSpillFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spill")
	p := filepath.Join(dir, "x.zst")
	if _, _, err := writeSpill(p, ids.PutID(ids.NewRootTaskID(), 1), []byte("secret")); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, p: 0o600} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, st.Mode().Perm(), want)
		}
	}
}

// TestSpillOfAFreedObject: an object freed while its spill file is written and put again
// (same ID, other bytes) before the write ends is another object: the end of the old
// write does not mark the new copy spilled to the old file, whose bytes are not its own.
func TestSpillOfAFreedObject(t *testing.T) {
	const size = 256 << 10
	x := ids.PutID(ids.NewRootTaskID(), 1)
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	write := func(path string, id ids.ObjectID, data []byte) (int64, uint32, error) {
		if id == x {
			once.Do(func() { close(started); <-release })
		}
		return writeSpill(path, id, data)
	}
	dir := t.TempDir()
	// Puts are sent, not asked: one over the budget is answered only once the spill
	// it started ends (backpressure), and this one is held up on purpose.
	ask, send := startShardSend(t, Config{Node: "n1", Budget: 1 << 20, SpillDir: dir, SpillWorkers: 1, write: write})
	value := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, size) }
	send(&pb.PutObject{ObjectId: x[:], Data: value(1)})
	for i := range 4 { // over the budget: x, the least recently used, is written first
		id := ids.PutID(x.Task(), uint32(10+i))
		send(&pb.PutObject{ObjectId: id[:], Data: value(10 + i)})
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("x was not spilled")
	}
	ask(&pb.FreeObjects{ObjectIds: [][]byte{x[:]}})
	send(&pb.PutObject{ObjectId: x[:], Data: value(2)})
	close(release)
	// Until the store settles (the old batch ends, the new copy may be spilled in turn),
	// x reads as its new bytes.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		r := ask(&pb.GetObject{ObjectId: x[:]}).(*pb.GetObjectReply)
		if !r.Found || !bytes.Equal(r.Data, value(2)) {
			t.Fatalf("x put again after a free: found %v, error %q, first byte %v; want its new bytes", r.Found, r.Error, r.Data[:min(1, len(r.Data))])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
