package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/fuzzing"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
	"github.com/ray-go/ray/internal/base/pb"
)

// lostManager is a head's worker manager over an in-memory GCS, for the lost-driver
// records alone (nothing runs).
func lostManager(t *testing.T) (*workerManager, gcs.Store) {
	t.Helper()
	s := memstore.New(memstore.Options{})
	t.Cleanup(func() { s.Close() })
	a := &Agent{cfg: Config{Head: true}, store: s, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return newWorkerManager(a), s
}

func lostRecord(t *testing.T, s gcs.Store, job string) (*DriverLost, bool) {
	t.Helper()
	kv, found, err := s.Get(context.Background(), gcs.DriverLostKey(job))
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		return nil, false
	}
	d, err := DecodeDriverLost(job, kv.Value)
	if err != nil {
		t.Fatal(err)
	}
	return d, true
}

// TestLostDriverRecord: the head records a RUNNING job's driver whose alive key went
// (unreachable, with when), deletes the record when the key is back, and marks it dead,
// with the job's message, when the job ends while the driver is unreachable.
func TestLostDriverRecord(t *testing.T) {
	m, s := lostManager(t)
	ctx := context.Background()
	info := &pb.JobInfo{JobId: "j1", State: pb.JobInfo_RUNNING, DriverNode: "n1", DriverHost: "h", DriverPid: 7, DriverAddress: "127.0.0.1:1"}
	rec := jobRec{info: info}
	m.jobs["j1"] = rec
	gone := time.Now().Add(-2 * time.Second)

	m.trackLost(ctx, "j1", rec, gone, true)
	d, ok := lostRecord(t, s, "j1")
	if !ok || d.DeadUnixMs != 0 || d.Node != "n1" || d.Pid != 7 || d.LapsedUnixMs != gone.UnixMilli() ||
		d.LastHeartbeatUnixMs() != gone.UnixMilli()-AliveTTL.Milliseconds() {
		t.Fatalf("the record of an unreachable driver: %+v, %v", d, ok)
	}

	m.alive["j1"] = true // its key is back
	m.trackLost(ctx, "j1", rec, time.Time{}, false)
	if d, ok := lostRecord(t, s, "j1"); ok {
		t.Fatalf("the record of a driver that came back is left: %+v", d)
	}

	delete(m.alive, "j1")
	m.trackLost(ctx, "j1", rec, gone, true)
	ended := &pb.JobInfo{JobId: "j1", State: pb.JobInfo_FAILED, Message: "driver exit status 1", EndUnixMs: time.Now().UnixMilli(),
		DriverNode: "n1", DriverHost: "h", DriverPid: 7}
	m.trackLost(ctx, "j1", jobRec{info: ended}, time.Time{}, false)
	if d, ok := lostRecord(t, s, "j1"); !ok || d.DeadUnixMs != ended.EndUnixMs || d.Reason != ended.Message || d.LapsedUnixMs != gone.UnixMilli() {
		t.Fatalf("the record of a driver whose job ended while it was unreachable: %+v, %v", d, ok)
	}
}

// TestPruneLostDrivers: dead drivers' records are kept lostDriverKeep and at most
// lostDriverMax of them, the newest; records of unreachable drivers go when their job is
// no longer running or their key is back, unless this head tracks them; undecodable
// records go.
func TestPruneLostDrivers(t *testing.T) {
	m, s := lostManager(t)
	ctx := context.Background()
	now := time.Now()
	put := func(d DriverLost) {
		b, _ := json.Marshal(d)
		if _, err := s.Put(ctx, gcs.DriverLostKey(d.Job), b, 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := range lostDriverMax + 5 {
		at := now.Add(-time.Duration(i) * time.Second)
		put(DriverLost{Job: fmt.Sprintf("dead%03d", i), LapsedUnixMs: at.Add(-time.Minute).UnixMilli(), DeadUnixMs: at.UnixMilli()})
	}
	put(DriverLost{Job: "old", LapsedUnixMs: now.Add(-3 * time.Hour).UnixMilli(), DeadUnixMs: now.Add(-lostDriverKeep - time.Minute).UnixMilli()})
	put(DriverLost{Job: "ended", LapsedUnixMs: now.UnixMilli()})   // not RUNNING here
	put(DriverLost{Job: "back", LapsedUnixMs: now.UnixMilli()})    // RUNNING, key back
	put(DriverLost{Job: "silent", LapsedUnixMs: now.UnixMilli()})  // RUNNING, no key
	put(DriverLost{Job: "tracked", LapsedUnixMs: now.UnixMilli()}) // this head's, job ended meanwhile
	if _, err := s.Put(ctx, gcs.DriverLostKey("junk"), []byte("{"), 0); err != nil {
		t.Fatal(err)
	}
	for _, j := range []string{"back", "silent"} {
		m.jobs[j] = jobRec{info: &pb.JobInfo{JobId: j, State: pb.JobInfo_RUNNING}}
	}
	m.alive["back"] = true
	m.lost["tracked"] = false

	m.pruneLost(ctx, now)
	kvs, _, err := s.List(ctx, gcs.DriverLostPrefix)
	if err != nil {
		t.Fatal(err)
	}
	left := map[string]bool{}
	dead := 0
	for _, kv := range kvs {
		job, _ := gcs.TrimKey(gcs.DriverLostPrefix, kv.Key)
		left[job] = true
		if strings.HasPrefix(job, "dead") {
			dead++
		}
	}
	if dead != lostDriverMax || !left["dead000"] || !left[fmt.Sprintf("dead%03d", lostDriverMax-1)] || left[fmt.Sprintf("dead%03d", lostDriverMax)] {
		t.Errorf("dead records left: %d (want the newest %d)", dead, lostDriverMax)
	}
	for job, want := range map[string]bool{"old": false, "ended": false, "back": false, "silent": true, "tracked": true, "junk": false} {
		if left[job] != want {
			t.Errorf("record %s left: %v, want %v", job, left[job], want)
		}
	}
}

func driverLostSeeds() [][]any {
	b, _ := json.Marshal(DriverLost{Job: "j1", Node: "n1", Host: "h", Pid: 7, Address: "127.0.0.1:1", LapsedUnixMs: 1, DeadUnixMs: 2, Reason: "r"})
	return [][]any{{"j1", b}, {"j1", []byte(`{"job":"j2","lapsed_unix_ms":1}`)}, {"j1", []byte(`{"job":"j1"}`)}, {"j1", []byte("[]")}}
}

func TestFuzzDriverLostCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzDriverLost", driverLostSeeds()) }

func FuzzDriverLost(f *testing.F) {
	f.Fuzz(func(t *testing.T, job string, b []byte) {
		var (
			d   *DriverLost
			err error
		)
		fuzzing.CheckAlloc(t, 16*uint64(len(b))+64<<10, "DecodeDriverLost", func() { d, err = DecodeDriverLost(job, b) })
		if err != nil {
			if !strings.HasPrefix(err.Error(), "agent: ") {
				t.Fatalf("error %q does not say where it comes from", err)
			}
			return
		}
		if d.Job != job || d.LapsedUnixMs <= 0 {
			t.Fatalf("accepted %+v for job %q", d, job)
		}
	})
}
