package shard

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ray-go/ray/internal/base/ids"
	"github.com/ray-go/ray/internal/base/pb"
)

type table struct {
	mu   sync.Mutex
	recs map[ids.ObjectID][]byte
}

func (t *table) Record(id ids.ObjectID, e []byte) { t.mu.Lock(); t.recs[id] = e; t.mu.Unlock() }
func (t *table) Drop(id ids.ObjectID)             { t.mu.Lock(); delete(t.recs, id); t.mu.Unlock() }
func (t *table) len() int                         { t.mu.Lock(); defer t.mu.Unlock(); return len(t.recs) }

func TestShard(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	defer sys.Shutdown()
	tab := &table{recs: map[ids.ObjectID][]byte{}}
	pid := sys.Root.Spawn(Props(Config{Node: "n1", Table: tab}))
	ask := func(m any) any {
		t.Helper()
		res, err := sys.Root.RequestFuture(pid, m, 5*time.Second).Result()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	root := ids.NewRootTaskID()
	a, b := ids.PutID(root, 1), ids.PutID(root, 2)

	if ack := ask(&pb.PutObject{ObjectId: a[:], Data: []byte("first")}).(*pb.PutObjectAck); ack.Error != "" {
		t.Fatal(ack.Error)
	}
	sys.Root.Send(pid, &pb.PutObject{ObjectId: a[:], Data: []byte("second")}) // immutable: ignored
	sys.Root.Send(pid, &pb.PutObject{ObjectId: b[:], Data: []byte("bb")})
	if r := ask(&pb.GetObject{ObjectId: a[:]}).(*pb.GetObjectReply); !r.Found || string(r.Data) != "first" {
		t.Fatalf("get a: %v %q", r.Found, r.Data)
	}
	if st := ask(&pb.StoreStats{}).(*pb.StoreStatsReply); st.Objects != 2 || st.Bytes != 7 {
		t.Fatalf("stats %+v, want 2 objects of 7 bytes", st)
	}
	if tab.len() != 2 {
		t.Fatalf("%d object table records, want 2", tab.len())
	}
	if ack := ask(&pb.PutObject{ObjectId: []byte("short")}).(*pb.PutObjectAck); ack.Error == "" {
		t.Fatal("a malformed object ID was accepted")
	}
	sys.Root.Send(pid, &pb.FreeObjects{ObjectIds: [][]byte{a[:], b[:]}})
	if r := ask(&pb.GetObject{ObjectId: a[:]}).(*pb.GetObjectReply); r.Found {
		t.Fatal("freed object still served")
	}
	if st := ask(&pb.StoreStats{}).(*pb.StoreStatsReply); st.Objects != 0 || st.Bytes != 0 || tab.len() != 0 {
		t.Fatalf("after free: %+v, %d records", st, tab.len())
	}
}

func TestSpillAndRestore(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	defer sys.Shutdown()
	dir := t.TempDir()
	const size = 256 << 10
	pid := sys.Root.Spawn(Props(Config{Node: "n1", Budget: 1 << 20, SpillDir: dir, Logger: quiet}))
	ask := func(m any) any {
		t.Helper()
		res, err := sys.Root.RequestFuture(pid, m, 10*time.Second).Result()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	root := ids.NewRootTaskID()
	var objs []ids.ObjectID
	value := func(i int) []byte {
		b := make([]byte, size)
		for k := range b {
			b[k] = byte(i*31 + k%251)
		}
		return b
	}
	// 12 objects of 256 KiB into a 1 MiB budget: 8 or more must go to disk.
	for i := range 12 {
		id := ids.PutID(root, uint32(i+1))
		objs = append(objs, id)
		ask(&pb.PutObject{ObjectId: id[:], Data: value(i)})
	}
	var st *pb.StoreStatsReply
	deadline := time.Now().Add(10 * time.Second)
	for {
		st = ask(&pb.StoreStats{}).(*pb.StoreStatsReply)
		if st.MemoryBytes <= 1<<20 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st.MemoryBytes > 1<<20 || st.SpilledObjects < 8 || st.Objects != 12 || st.Bytes != 12*size {
		t.Fatalf("after 3 MiB into a 1 MiB budget: %+v", st)
	}
	// Every object reads back exactly, from memory or from its file.
	for i, id := range objs {
		r := ask(&pb.GetObject{ObjectId: id[:]}).(*pb.GetObjectReply)
		if !r.Found || string(r.Data) != string(value(i)) {
			t.Fatalf("object %d: found %v, error %q, %d bytes", i, r.Found, r.Error, len(r.Data))
		}
	}
	// A spill file altered on disk is detected, not returned.
	files, _ := filepath.Glob(filepath.Join(dir, "*.zst"))
	if len(files) < 8 {
		t.Fatalf("%d spill files", len(files))
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-3] ^= 0xff
	if err := os.WriteFile(files[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	// And one bit of another file's length field (a claim of 512 GiB): refused before
	// anything is allocated for it.
	if b, err = os.ReadFile(files[1]); err != nil {
		t.Fatal(err)
	}
	b[4+4] ^= 0x80
	if err := os.WriteFile(files[1], b, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := 0
	for _, id := range objs {
		r := ask(&pb.GetObject{ObjectId: id[:]}).(*pb.GetObjectReply)
		if !r.Found {
			bad++
			if !strings.Contains(r.Error, "corrupt") || len(r.Data) != 0 {
				t.Fatalf("corrupt spill file: found %v, error %q", r.Found, r.Error)
			}
		}
	}
	if bad != 2 {
		t.Fatalf("%d objects failed after altering two files", bad)
	}
	// Freeing removes the files.
	var all [][]byte
	for _, id := range objs {
		all = append(all, id[:])
	}
	ask(&pb.FreeObjects{ObjectIds: all})
	deadline = time.Now().Add(5 * time.Second)
	for {
		left, _ := filepath.Glob(filepath.Join(dir, "*"))
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("spill files left after free: %v", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := ask(&pb.StoreStats{}).(*pb.StoreStatsReply); st.Objects != 0 || st.Bytes != 0 || st.MemoryBytes != 0 || st.SpilledObjects != 0 {
		t.Fatalf("after free: %+v", st)
	}
}

// TestSpillDirUnwritable: when spilling fails, objects stay in memory (over budget) and
// readable, and the failure is counted.
func TestSpillDirUnwritable(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory under a regular file cannot be created, even by root.
	ask := startShard(t, Config{Node: "n1", Budget: 100, SpillDir: filepath.Join(blocker, "spill")})
	id := ids.PutID(ids.NewRootTaskID(), 1)
	ask(&pb.PutObject{ObjectId: id[:], Data: make([]byte, 1000)})
	deadline := time.Now().Add(5 * time.Second)
	for ask(&pb.StoreStats{}).(*pb.StoreStatsReply).SpillErrors == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no spill error reported")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := ask(&pb.GetObject{ObjectId: id[:]}).(*pb.GetObjectReply); !r.Found || len(r.Data) != 1000 {
		t.Fatalf("object after a failed spill: %+v", r)
	}
}

// TestSpillDiskFull: a spill that hits a full disk (ENOSPC from the kernel: the spill file's
// temporary name leads to /dev/full) keeps the object in memory, readable, counted as a
// spill error and logged with the cause; once space is back the retry after the back-off
// spills it.
func TestSpillDiskFull(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Fatalf("this test needs /dev/full (Linux): %v", err)
	}
	logger, logs := capturedLogs()
	dir := t.TempDir()
	ask := startShard(t, Config{Node: "n1", Budget: 100, SpillDir: dir, Logger: logger})
	id := ids.PutID(ids.NewRootTaskID(), 1)
	tmp := spillPath(dir, id, 1) + ".tmp" // the shard's first spill write
	if err := os.Symlink("/dev/full", tmp); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i)
	}
	ask(&pb.PutObject{ObjectId: id[:], Data: data})
	deadline := time.Now().Add(5 * time.Second)
	for ask(&pb.StoreStats{}).(*pb.StoreStatsReply).SpillErrors == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no spill error reported on a full disk")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := ask(&pb.GetObject{ObjectId: id[:]}).(*pb.GetObjectReply); !r.Found || string(r.Data) != string(data) {
		t.Fatalf("object after a spill onto a full disk: found %v, %d bytes", r.Found, len(r.Data))
	}
	logged := logs()
	if !strings.Contains(logged, "no space left on device") || !strings.Contains(logged, "free_space=") {
		t.Fatalf("the log does not say the disk is full: %s", logged)
	}
	// Space is back: the retry after the back-off spills the object, and then puts are
	// taken and spilled again.
	os.Remove(tmp)
	deadline = time.Now().Add(5 * time.Second)
	for ask(&pb.StoreStats{}).(*pb.StoreStatsReply).SpilledObjects < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the object was not spilled after the back-off once space was back: %+v", ask(&pb.StoreStats{}))
		}
		time.Sleep(10 * time.Millisecond)
	}
	id2 := ids.PutID(ids.NewRootTaskID(), 2)
	ask(&pb.PutObject{ObjectId: id2[:], Data: make([]byte, 1000)})
	deadline = time.Now().Add(5 * time.Second)
	for ask(&pb.StoreStats{}).(*pb.StoreStatsReply).SpilledObjects < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("objects not spilled once space was back: %+v", ask(&pb.StoreStats{}))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := ask(&pb.GetObject{ObjectId: id[:]}).(*pb.GetObjectReply); !r.Found || string(r.Data) != string(data) {
		t.Fatalf("object read back from its spill file: found %v, %d bytes", r.Found, len(r.Data))
	}
}

// TestSpillFailureBacksOff: with a spill directory that cannot be written, 200 puts cost a
// round of spilling per back-off, not one per put and object: one WARN with the directory
// and the free space, a spill error per round, not per object; objects stay readable; and a
// put that would take memory over twice the budget is refused with what to do.
func TestSpillFailureBacksOff(t *testing.T) {
	logger, logs := capturedLogs()
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	spillDir := filepath.Join(blocker, "spill")
	const budget = 100 << 10
	ask := startShard(t, Config{Node: "n1", Budget: budget, SpillDir: spillDir, Logger: logger})
	root := ids.NewRootTaskID()
	var kept []ids.ObjectID
	var refused *pb.PutObjectAck
	for i := range 200 {
		id := ids.PutID(root, uint32(i+1))
		ack := ask(&pb.PutObject{ObjectId: id[:], Data: make([]byte, 4<<10)}).(*pb.PutObjectAck)
		if ack.Error != "" {
			if refused == nil {
				refused = ack
			}
			continue
		}
		kept = append(kept, id)
	}
	st := ask(&pb.StoreStats{}).(*pb.StoreStatsReply)
	if st.SpillErrors == 0 || st.SpillErrors > 5 {
		t.Errorf("%d spill errors for 200 puts in about a second: want a few (one per round), not one per put or object", st.SpillErrors)
	}
	if refused == nil || !strings.Contains(refused.Error, spillDir) || !strings.Contains(refused.Error, "release objects") {
		t.Errorf("a put over twice the budget while spilling fails: %+v, want a refusal naming the spill directory and what to do", refused)
	}
	if st.MemoryBytes > 2*budget {
		t.Errorf("%d bytes in memory, over twice the budget of %d", st.MemoryBytes, budget)
	}
	for _, id := range kept {
		if r := ask(&pb.GetObject{ObjectId: id[:]}).(*pb.GetObjectReply); !r.Found || len(r.Data) != 4<<10 {
			t.Fatalf("an object kept in memory is not readable: %+v", r)
		}
	}
	logged := logs()
	if n := strings.Count(logged, "level=WARN"); n != 1 || strings.Count(logged, "level=ERROR") != 0 || !strings.Contains(logged, "free_space=") {
		t.Fatalf("%d WARN lines (want 1, with the free space, and no ERROR):\n%s", n, logged)
	}
}

// startShard is startShardSend's ask alone.
func startShard(t *testing.T, cfg Config) (ask func(m any) any) {
	t.Helper()
	ask, _ = startShardSend(t, cfg)
	return ask
}

// capturedLogs returns a logger that keeps what it writes, and a function that reads it.
func capturedLogs() (*slog.Logger, func() string) {
	var logs strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	return logger, func() string {
		mu.Lock()
		defer mu.Unlock()
		return logs.String()
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestSpillWorkers: spill files are written by SpillWorkers goroutines at once, never more;
// every object is spilled once and reads back exactly; and when the writes fail, the
// batches that were written together count one spill error, not one each, and the attempt
// after the back-off is one batch alone.
func TestSpillWorkers(t *testing.T) {
	const workers, size, n = 3, 64 << 10, 40
	var mu sync.Mutex
	running, most, calls := 0, 0, 0
	release := make(chan struct{})
	failing := false
	failGate, hold := make(chan struct{}), make(chan struct{})
	defer close(hold)
	write := func(path string, id ids.ObjectID, data []byte) (int64, uint32, error) {
		mu.Lock()
		running++
		most = max(most, running)
		calls++
		call, fail := calls, failing
		mu.Unlock()
		defer func() { mu.Lock(); running--; mu.Unlock() }()
		<-release
		if !fail {
			return writeSpill(path, id, data)
		}
		if call > workers {
			<-hold // the attempt after the back-off: kept waiting until the test ends
		} else {
			<-failGate
		}
		return 0, 0, errors.New("test: no space left on device")
	}
	dir := t.TempDir()
	const budget = 4 * minSpillBatch
	ask, send := startShardSend(t, Config{Node: "n1", Budget: budget, SpillDir: dir, SpillWorkers: workers, write: write})
	root := ids.NewRootTaskID()
	value := func(i int) []byte {
		b := make([]byte, size)
		for k := range b {
			b[k] = byte(i*7 + k%13)
		}
		return b
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("waited 20 s for %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// 40 small objects, then 12 of a batch each: the store is 3x over its budget.
	var objs []ids.ObjectID
	for i := range n {
		id := ids.PutID(root, uint32(i+1))
		objs = append(objs, id)
		send(&pb.PutObject{ObjectId: id[:], Data: value(i)})
	}
	big := make([]byte, minSpillBatch)
	for i := range big {
		big[i] = byte(i % 253)
	}
	var bigs []ids.ObjectID
	for i := range 12 {
		id := ids.PutID(root, uint32(1000+i))
		bigs = append(bigs, id)
		send(&pb.PutObject{ObjectId: id[:], Data: big})
	}
	waitFor("all the workers to write", func() bool { mu.Lock(); defer mu.Unlock(); return running == workers })
	close(release)
	waitFor("the store to be under budget", func() bool {
		st := ask(&pb.StoreStats{}).(*pb.StoreStatsReply)
		return st.MemoryBytes <= budget && st.Objects == n+12
	})
	mu.Lock()
	if most != workers {
		t.Errorf("%d spill writes at once, want %d (SpillWorkers)", most, workers)
	}
	mu.Unlock()
	st := ask(&pb.StoreStats{}).(*pb.StoreStatsReply)
	if st.SpilledObjects == 0 || st.SpillErrors != 0 || st.Bytes != st.MemoryBytes+st.SpilledBytes {
		t.Fatalf("after spilling: %+v", st)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.zst"))
	if int64(len(files)) != st.SpilledObjects {
		t.Fatalf("%d spill files for %d spilled objects", len(files), st.SpilledObjects)
	}
	// Gets of every object at once (restores run SpillWorkers at a time): all read back.
	var wg sync.WaitGroup
	for i, id := range objs {
		wg.Go(func() {
			r := ask(&pb.GetObject{ObjectId: id[:]}).(*pb.GetObjectReply)
			if !r.Found || string(r.Data) != string(value(i)) {
				t.Errorf("object %d: found %v, error %q, %d bytes", i, r.Found, r.Error, len(r.Data))
			}
		})
	}
	wg.Wait()
	for _, id := range bigs {
		wg.Go(func() {
			if r := ask(&pb.GetObject{ObjectId: id[:]}).(*pb.GetObjectReply); !r.Found || string(r.Data) != string(big) {
				t.Errorf("object %s: found %v, error %q", id, r.Found, r.Error)
			}
		})
	}
	wg.Wait()

	// Now every write fails. Three batches start together and fail: one spill error.
	mu.Lock()
	failing, calls = true, 0
	mu.Unlock()
	for i := range 3 {
		id := ids.PutID(root, uint32(2000+i))
		send(&pb.PutObject{ObjectId: id[:], Data: make([]byte, 2*minSpillBatch)})
	}
	waitFor("three failing writes at once", func() bool { mu.Lock(); defer mu.Unlock(); return running == workers })
	close(failGate)
	// The attempt after the back-off starts only when the three batches are reported (it
	// is one batch alone): then the count is final until it ends, and it never does here.
	waitFor("the attempt after the back-off", func() bool { mu.Lock(); defer mu.Unlock(); return calls > workers })
	st = ask(&pb.StoreStats{}).(*pb.StoreStatsReply)
	if st.SpillErrors != 1 {
		t.Errorf("%d spill errors after the three batches of one attempt failed, want 1", st.SpillErrors)
	}
	mu.Lock()
	if running != 1 {
		t.Errorf("%d writes after the back-off, want one batch alone", running)
	}
	mu.Unlock()
}

// startShardSend spawns a shard grain of cfg in an actor system of its own (stopped with
// the test) and returns a function that asks it and waits for the answer, and one that
// sends it a message without a sender (no reply is waited for).
func startShardSend(t *testing.T, cfg Config) (ask func(m any) any, send func(m any)) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	t.Cleanup(sys.Shutdown)
	pid := sys.Root.Spawn(Props(cfg))
	return func(m any) any {
			t.Helper()
			res, err := sys.Root.RequestFuture(pid, m, 10*time.Second).Result()
			if err != nil {
				t.Fatal(err)
			}
			return res
		}, func(m any) {
			sys.Root.Send(pid, m)
		}
}

// TestPressure: a put that finds the shard's memory over PressureFraction of its budget
// calls Config.Pressure (the node asks for garbage collections: refs dropped without
// Release may hold objects here), one below it does not, and while the memory stays over
// it the shard calls it again without another put (a collection at once may have missed
// refs dropped just before it).
func TestPressure(t *testing.T) {
	var calls atomic.Int64
	ask := startShard(t, Config{Node: "n1", Budget: 1000, SpillDir: t.TempDir(), Pressure: func() { calls.Add(1) }})
	task := ids.NewRootTaskID()
	a, b := ids.PutID(task, 1), ids.PutID(task, 2)
	ask(&pb.PutObject{ObjectId: a[:], Data: make([]byte, 500)})
	if n := calls.Load(); n != 0 {
		t.Fatalf("at 50%% of the budget: %d calls of Pressure, want 0", n)
	}
	ask(&pb.PutObject{ObjectId: b[:], Data: make([]byte, 300)})
	if n := calls.Load(); n != 1 {
		t.Fatalf("at 80%% of the budget: %d calls of Pressure, want 1", n)
	}
	for deadline := time.Now().Add(20 * time.Second); calls.Load() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the memory stayed at 80% of the budget without another put, and Pressure was not called again")
		}
	}
	ask(&pb.FreeObjects{ObjectIds: [][]byte{a[:], b[:]}})
	if st := ask(&pb.StoreStats{}).(*pb.StoreStatsReply); st.MemoryBytes != 0 {
		t.Fatalf("after the frees: %+v", st)
	}
}

// TestSpillFullDiskMessage: when a spill write fails for want of space, the refusal says
// how many bytes the spill needed and the free space measured when the write failed,
// while its partial file was still there, not after it was removed (then the figure
// would count the room the spill could not have).
func TestSpillFullDiskMessage(t *testing.T) {
	spillDir := filepath.Join(t.TempDir(), "spill")
	const whileTmp, afterCleanup = "1234 bytes", "20971520 bytes"
	// free stands for the filesystem's free space: small while a partial .tmp file is
	// there, the whole of it once the file is gone.
	free := func(dir string) string {
		if tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(tmps) > 0 {
			return whileTmp
		}
		return afterCleanup
	}
	// A write that fills the disk halfway through the file.
	full := func(name string, buf []byte, perm fs.FileMode) error {
		if err := os.WriteFile(name, buf[:len(buf)/2], perm); err != nil {
			return err
		}
		return &fs.PathError{Op: "write", Path: name, Err: syscall.ENOSPC}
	}
	write := func(path string, id ids.ObjectID, data []byte) (int64, uint32, error) {
		return writeSpillWith(full, free, path, id, data)
	}
	const budget, size = 100 << 10, 4 << 10
	logger, _ := capturedLogs()
	ask := startShard(t, Config{Node: "n1", Budget: budget, SpillDir: spillDir, Logger: logger, write: write})
	root := ids.NewRootTaskID()
	var refused string
	for i := 0; i < 200 && refused == ""; i++ {
		id := ids.PutID(root, uint32(i+1))
		refused = ask(&pb.PutObject{ObjectId: id[:], Data: make([]byte, size)}).(*pb.PutObjectAck).Error
	}
	if refused == "" {
		t.Fatal("no put refused while every spill write fails for want of space")
	}
	if !strings.Contains(refused, "no space left on device") || !strings.Contains(refused, "free space there when it failed: "+whileTmp) {
		t.Errorf("refusal %q: want the ENOSPC and the free space measured at the failure (%s), not after the partial file was removed (%s)", refused, whileTmp, afterCleanup)
	}
	m := regexp.MustCompile(`a spill of (\d+) bytes failed`).FindStringSubmatch(refused)
	if m == nil {
		t.Fatalf("refusal %q: does not say how many bytes the spill needed", refused)
	}
	if n, _ := strconv.Atoi(m[1]); n < size || n%size != 0 || n > 200*size {
		t.Errorf("refusal %q: the spill needed %d bytes, want a whole number of the %d-byte objects", refused, n, size)
	}
	if tmps, _ := filepath.Glob(filepath.Join(spillDir, "*.tmp")); len(tmps) != 0 {
		t.Errorf("partial spill files left: %v", tmps)
	}
}
