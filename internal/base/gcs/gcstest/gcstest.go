package gcstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/gcs"
)

// waitLimit bounds every wait of the suite for something that must happen (an event, a
// closed channel). It is a liveness bound, not a latency assertion: generous on purpose.
const waitLimit = 30 * time.Second

// Run runs the conformance suite: one parallel subtest per clause of the gcs.Store
// contract. newStore must return a store of its own for each call (its own revision
// space: subtests compact and count revisions) and register with t.Cleanup the release
// of whatever backs it; Run closes every store it gets.
func Run(t *testing.T, newStore func(t *testing.T) gcs.Store) {
	open := func(t *testing.T) gcs.Store {
		t.Parallel()
		s := newStore(t)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s gcs.Store)
	}{
		{"PutGet", testPutGet},
		{"Revisions", testRevisions},
		{"EmptyKey", testEmptyKey},
		{"Delete", testDelete},
		{"ListCount", testListCount},
		{"ListLarge", testListLarge},
		{"TxnAtomic", testTxnAtomic},
		{"TxnCmp", testTxnCmp},
		{"TxnDeletePrefix", testTxnDeletePrefix},
		{"TxnLimits", testTxnLimits},
		{"TxnDuplicateKey", testTxnDuplicateKey},
		{"WatchFromNow", testWatchFromNow},
		{"WatchHistory", testWatchHistory},
		{"WatchTxnOneRevision", testWatchTxnOneRevision},
		{"WatchCancel", testWatchCancel},
		{"WatchConcurrentWriters", testWatchConcurrentWriters},
		{"Compact", testCompact},
		{"LeaseRevoke", testLeaseRevoke},
		{"LeaseUnknown", testLeaseUnknown},
		{"LeaseExpiry", testLeaseExpiry},
		{"KeepAlive", testKeepAlive},
		{"ContextDone", testContextDone},
		{"Close", testClose},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

func put(t *testing.T, s gcs.Store, key, value string) int64 {
	t.Helper()
	rev, err := s.Put(testCtx(t), key, []byte(value), 0)
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	return rev
}

func get(t *testing.T, s gcs.Store, key string) (gcs.KV, bool) {
	t.Helper()
	kv, ok, err := s.Get(testCtx(t), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return kv, ok
}

func revision(t *testing.T, s gcs.Store) int64 {
	t.Helper()
	rev, err := s.Revision(testCtx(t))
	if err != nil {
		t.Fatalf("Revision: %v", err)
	}
	return rev
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

// next returns the next response of a watch, failing the test if none comes in time.
func next(t *testing.T, ch <-chan gcs.WatchResponse) (gcs.WatchResponse, bool) {
	t.Helper()
	select {
	case r, ok := <-ch:
		return r, ok
	case <-time.After(waitLimit):
		t.Fatalf("no watch response within %v", waitLimit)
		return gcs.WatchResponse{}, false
	}
}

// events reads a watch until it has n events.
func events(t *testing.T, ch <-chan gcs.WatchResponse, n int) []gcs.Event {
	t.Helper()
	var evs []gcs.Event
	for len(evs) < n {
		r, ok := next(t, ch)
		if !ok {
			t.Fatalf("watch closed after %d of %d events", len(evs), n)
		}
		if r.Err != nil {
			t.Fatalf("watch error after %d of %d events: %v", len(evs), n, r.Err)
		}
		evs = append(evs, r.Events...)
	}
	if len(evs) > n {
		t.Fatalf("got %d events, want %d: %v", len(evs), n, evs)
	}
	return evs
}

// closed waits for a channel to be closed, discarding what it delivers; it returns the
// watch errors seen on the way.
func closed[T any](t *testing.T, ch <-chan T) []error {
	t.Helper()
	var errs []error
	deadline := time.After(waitLimit)
	for {
		select {
		case v, ok := <-ch:
			if !ok {
				return errs
			}
			if r, isResp := any(v).(gcs.WatchResponse); isResp && r.Err != nil {
				errs = append(errs, r.Err)
			}
		case <-deadline:
			t.Fatalf("channel not closed within %v", waitLimit)
			return nil
		}
	}
}

func checkEvent(t *testing.T, ev gcs.Event, typ gcs.EventType, key, value string, rev int64) {
	t.Helper()
	if ev.Type != typ || ev.KV.Key != key || ev.KV.ModRev != rev {
		t.Fatalf("event %+v, want type %d key %q rev %d", ev, typ, key, rev)
	}
	if typ == gcs.EventPut && string(ev.KV.Value) != value {
		t.Fatalf("event %q value %q, want %q", key, ev.KV.Value, value)
	}
	if typ == gcs.EventDelete && len(ev.KV.Value) != 0 {
		t.Fatalf("delete event of %q carries value %q", key, ev.KV.Value)
	}
}

func testPutGet(t *testing.T, s gcs.Store) {
	if _, ok := get(t, s, "missing"); ok {
		t.Fatal("Get of a missing key found it")
	}
	rev := put(t, s, "k", "v1")
	kv, ok := get(t, s, "k")
	if !ok || string(kv.Value) != "v1" || kv.Key != "k" || kv.CreateRev != rev || kv.ModRev != rev || kv.Lease != 0 {
		t.Fatalf("Get = %+v %v, want k=v1 at rev %d", kv, ok, rev)
	}
	rev2 := put(t, s, "k", "v2")
	kv, _ = get(t, s, "k")
	if rev2 <= rev || string(kv.Value) != "v2" || kv.CreateRev != rev || kv.ModRev != rev2 {
		t.Fatalf("after overwrite: %+v (rev %d then %d)", kv, rev, rev2)
	}
	// Keys are arbitrary strings.
	odd := "a/\x00\xff/ü"
	put(t, s, odd, "")
	if kv, ok := get(t, s, odd); !ok || len(kv.Value) != 0 {
		t.Fatalf("Get(%q) = %+v %v", odd, kv, ok)
	}
}

func testRevisions(t *testing.T, s gcs.Store) {
	ctx := testCtx(t)
	last := revision(t, s)
	for i := range 5 {
		rev := put(t, s, fmt.Sprint("r", i), "x")
		if rev <= last {
			t.Fatalf("put %d: revision %d after %d", i, rev, last)
		}
		if cur := revision(t, s); cur != rev {
			t.Fatalf("Revision() = %d after put at %d", cur, rev)
		}
		last = rev
	}
	// Changes that change nothing create no revision.
	rev, err := s.Delete(ctx, "absent")
	if err != nil || rev != last {
		t.Fatalf("Delete(absent) = %d, %v; want %d, nil", rev, err, last)
	}
	ok, rev, err := s.Txn(ctx, []gcs.Cmp{{Key: "r0", ModRev: 1 << 40}}, []gcs.Op{{Kind: gcs.OpPut, Key: "r0", Value: []byte("y")}})
	if err != nil || ok || rev != last {
		t.Fatalf("failed Txn = %v, %d, %v; want false, %d, nil", ok, rev, err, last)
	}
	if cur := revision(t, s); cur != last {
		t.Fatalf("Revision() = %d, want %d", cur, last)
	}
}

func testEmptyKey(t *testing.T, s gcs.Store) {
	ctx := testCtx(t)
	_, err := s.Put(ctx, "", []byte("v"), 0)
	wantErr(t, "Put(\"\")", err, gcs.ErrEmptyKey)
	_, _, err = s.Get(ctx, "")
	wantErr(t, "Get(\"\")", err, gcs.ErrEmptyKey)
	_, err = s.Delete(ctx, "")
	wantErr(t, "Delete(\"\")", err, gcs.ErrEmptyKey)
	_, _, err = s.Txn(ctx, nil, []gcs.Op{{Kind: gcs.OpPut, Key: ""}})
	wantErr(t, "Txn put \"\"", err, gcs.ErrEmptyKey)
	_, _, err = s.Txn(ctx, []gcs.Cmp{{Key: ""}}, nil)
	wantErr(t, "Txn cmp \"\"", err, gcs.ErrEmptyKey)
	// The empty prefix is fine.
	put(t, s, "a", "1")
	if n, err := s.Count(ctx, ""); err != nil || n != 1 {
		t.Fatalf("Count(\"\") = %d, %v", n, err)
	}
}

func testDelete(t *testing.T, s gcs.Store) {
	ctx := testCtx(t)
	put(t, s, "d", "v")
	before := revision(t, s)
	rev, err := s.Delete(ctx, "d")
	if err != nil || rev <= before {
		t.Fatalf("Delete = %d, %v (before %d)", rev, err, before)
	}
	if _, ok := get(t, s, "d"); ok {
		t.Fatal("key still there after Delete")
	}
	rev2 := put(t, s, "d", "again")
	if kv, _ := get(t, s, "d"); kv.CreateRev != rev2 {
		t.Fatalf("re-created key has CreateRev %d, want %d", kv.CreateRev, rev2)
	}
}

func testListCount(t *testing.T, s gcs.Store) {
	ctx := testCtx(t)
	keys := []string{"t/b", "t/a", "t/c/x", "t\xff", "u/a", "t/\xff\xff", "s"}
	var last int64
	for _, k := range keys {
		last = put(t, s, k, "v:"+k)
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"t/", []string{"t/a", "t/b", "t/c/x", "t/\xff\xff"}},
		{"t", []string{"t/a", "t/b", "t/c/x", "t/\xff\xff", "t\xff"}},
		{"t/c/", []string{"t/c/x"}},
		{"t/\xff", []string{"t/\xff\xff"}},
		{"v", nil},
		{"", []string{"s", "t/a", "t/b", "t/c/x", "t/\xff\xff", "t\xff", "u/a"}},
	} {
		kvs, rev, err := s.List(ctx, tc.prefix)
		if err != nil {
			t.Fatalf("List(%q): %v", tc.prefix, err)
		}
		var got []string
		for _, kv := range kvs {
			got = append(got, kv.Key)
			if string(kv.Value) != "v:"+kv.Key || kv.ModRev == 0 || kv.CreateRev == 0 {
				t.Fatalf("List(%q): bad entry %+v", tc.prefix, kv)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Fatalf("List(%q) = %q, want %q", tc.prefix, got, tc.want)
		}
		if rev != last {
			t.Fatalf("List(%q) read at %d, want %d", tc.prefix, rev, last)
		}
		n, err := s.Count(ctx, tc.prefix)
		if err != nil || n != int64(len(tc.want)) {
			t.Fatalf("Count(%q) = %d, %v; want %d", tc.prefix, n, err, len(tc.want))
		}
	}
}

func testListLarge(t *testing.T, s gcs.Store) {
	ctx := testCtx(t)
	const n = 3000
	val := bytes.Repeat([]byte("x"), 200)
	for i := 0; i < n; i += gcs.MaxTxnOps {
		var ops []gcs.Op
		for j := i; j < min(n, i+gcs.MaxTxnOps); j++ {
			ops = append(ops, gcs.Op{Kind: gcs.OpPut, Key: fmt.Sprintf("big/%05d", j), Value: val})
		}
		if _, _, err := s.Txn(ctx, nil, ops); err != nil {
			t.Fatal(err)
		}
	}
	put(t, s, "bigger", "not listed")
	kvs, _, err := s.List(ctx, "big/")
	if err != nil {
		t.Fatal(err)
	}
	if len(kvs) != n {
		t.Fatalf("List returned %d keys, want %d", len(kvs), n)
	}
	for i, kv := range kvs {
		if kv.Key != fmt.Sprintf("big/%05d", i) || !bytes.Equal(kv.Value, val) {
			t.Fatalf("entry %d is %q", i, kv.Key)
		}
	}
	if c, err := s.Count(ctx, "big/"); err != nil || c != n {
		t.Fatalf("Count = %d, %v", c, err)
	}
}

func testTxnAtomic(t *testing.T, s gcs.Store) {
	ctx := testCtx(t)
	put(t, s, "x/old", "1")
	ok, rev, err := s.Txn(ctx, nil, []gcs.Op{
		{Kind: gcs.OpPut, Key: "x/a", Value: []byte("a")},
		{Kind: gcs.OpPut, Key: "x/b", Value: []byte("b")},
		{Kind: gcs.OpDelete, Key: "x/old"},
		{Kind: gcs.OpDelete, Key: "x/never"},
	})
	if err != nil || !ok {
		t.Fatalf("Txn = %v, %v", ok, err)
	}
	for _, k := range []string{"x/a", "x/b"} {
		if kv, found := get(t, s, k); !found || kv.ModRev != rev {
			t.Fatalf("%s: %+v %v, want ModRev %d", k, kv, found, rev)
		}
	}
	if _, found := get(t, s, "x/old"); found {
		t.Fatal("x/old not deleted")
	}
	if cur := revision(t, s); cur != rev {
		t.Fatalf("a Txn is one revision: Revision() = %d, Txn rev %d", cur, rev)
	}
	// An empty Txn is valid and changes nothing.
	if ok, rev2, err := s.Txn(ctx, nil, nil); err != nil || !ok || rev2 != rev {
		t.Fatalf("empty Txn = %v, %d, %v", ok, rev2, err)
	}
}

func testTxnCmp(t *testing.T, s gcs.Store) {
	ctx := testCtx(t)
	putOp := func(k, v string) []gcs.Op { return []gcs.Op{{Kind: gcs.OpPut, Key: k, Value: []byte(v)}} }
	// ModRev 0: create only if absent.
	ok, rev, err := s.Txn(ctx, []gcs.Cmp{{Key: "c", ModRev: 0}}, putOp("c", "1"))
	if err != nil || !ok {
		t.Fatalf("create-if-absent = %v, %v", ok, err)
	}
	ok, _, err = s.Txn(ctx, []gcs.Cmp{{Key: "c", ModRev: 0}}, putOp("c", "2"))
	if err != nil || ok {
		t.Fatalf("second create-if-absent = %v, %v; want false, nil", ok, err)
	}
	// Compare-and-swap on ModRev.
	ok, rev2, err := s.Txn(ctx, []gcs.Cmp{{Key: "c", ModRev: rev}}, putOp("c", "3"))
	if err != nil || !ok {
		t.Fatalf("CAS = %v, %v", ok, err)
	}
	ok, _, err = s.Txn(ctx, []gcs.Cmp{{Key: "c", ModRev: rev}}, putOp("c", "4"))
	if err != nil || ok {
		t.Fatalf("stale CAS = %v, %v; want false, nil", ok, err)
	}
	// Every cmp must hold; a failed Txn applies nothing.
	put(t, s, "d", "x")
	ok, _, err = s.Txn(ctx, []gcs.Cmp{{Key: "c", ModRev: rev2}, {Key: "d", ModRev: 1}},
		[]gcs.Op{{Kind: gcs.OpDelete, Key: "c"}, {Kind: gcs.OpDelete, Key: "d"}})
	if err != nil || ok {
		t.Fatalf("Txn with one failing cmp = %v, %v", ok, err)
	}
	if kv, found := get(t, s, "c"); !found || string(kv.Value) != "3" {
		t.Fatalf("c = %+v %v, want 3", kv, found)
	}
	if _, found := get(t, s, "d"); !found {
		t.Fatal("d deleted by a failed Txn")
	}
}

func testTxnDeletePrefix(t *testing.T, s gcs.Store) {
	ctx := testCtx(t)
	for _, k := range []string{"p/1", "p/2", "p/3/x", "p", "q/1"} {
		put(t, s, k, "v")
	}
	ok, rev, err := s.Txn(ctx, nil, []gcs.Op{{Kind: gcs.OpDeletePrefix, Key: "p/"}, {Kind: gcs.OpPut, Key: "q/2", Value: []byte("n")}})
	if err != nil || !ok {
		t.Fatalf("Txn = %v, %v", ok, err)
	}
	kvs, _, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range kvs {
		keys = append(keys, kv.Key)
	}
	if want := []string{"p", "q/1", "q/2"}; !slices.Equal(keys, want) {
		t.Fatalf("keys after DeletePrefix(p/) = %q, want %q", keys, want)
	}
	if revision(t, s) != rev {
		t.Fatal("DeletePrefix of several keys is not one revision")
	}
	// The empty prefix deletes everything.
	if _, _, err := s.Txn(ctx, nil, []gcs.Op{{Kind: gcs.OpDeletePrefix, Key: ""}}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Count(ctx, ""); err != nil || n != 0 {
		t.Fatalf("Count after DeletePrefix(\"\") = %d, %v", n, err)
	}
}

func testTxnLimits(t *testing.T, s gcs.Store) {
	ctx := testCtx(t)
	ops := make([]gcs.Op, gcs.MaxTxnOps+1)
	for i := range ops {
		ops[i] = gcs.Op{Kind: gcs.OpPut, Key: fmt.Sprintf("lim/%03d", i), Value: []byte("v")}
	}
	_, _, err := s.Txn(ctx, nil, ops)
	wantErr(t, "Txn of MaxTxnOps+1 ops", err, gcs.ErrTooLarge)
	if n, _ := s.Count(ctx, "lim/"); n != 0 {
		t.Fatalf("a rejected Txn wrote %d keys", n)
	}
	if ok, _, err := s.Txn(ctx, nil, ops[:gcs.MaxTxnOps]); err != nil || !ok {
		t.Fatalf("Txn of MaxTxnOps ops = %v, %v", ok, err)
	}
	half := bytes.Repeat([]byte("b"), gcs.MaxRequestBytes/2)
	_, _, err = s.Txn(ctx, nil, []gcs.Op{{Kind: gcs.OpPut, Key: "big1", Value: half}, {Kind: gcs.OpPut, Key: "big2", Value: half}})
	wantErr(t, "Txn above MaxRequestBytes", err, gcs.ErrTooLarge)
	full := bytes.Repeat([]byte("f"), gcs.MaxRequestBytes-len("big"))
	if _, err := s.Put(ctx, "big", full, 0); err != nil {
		t.Fatalf("Put of exactly MaxRequestBytes: %v", err)
	}
	if kv, ok := get(t, s, "big"); !ok || !bytes.Equal(kv.Value, full) {
		t.Fatal("large value not read back")
	}
	_, err = s.Put(ctx, "big", append(full, 'x'), 0)
	wantErr(t, "Put above MaxRequestBytes", err, gcs.ErrTooLarge)
}

func testTxnDuplicateKey(t *testing.T, s gcs.Store) {
	ctx := testCtx(t)
	p := func(k string) gcs.Op { return gcs.Op{Kind: gcs.OpPut, Key: k, Value: []byte("v")} }
	for _, tc := range []struct {
		name string
		ops  []gcs.Op
	}{
		{"put twice", []gcs.Op{p("k"), p("k")}},
		{"put and delete", []gcs.Op{p("k"), {Kind: gcs.OpDelete, Key: "k"}}},
		{"delete and put", []gcs.Op{{Kind: gcs.OpDelete, Key: "k"}, p("k")}},
		{"put under deleted prefix", []gcs.Op{{Kind: gcs.OpDeletePrefix, Key: "k"}, p("k/1")}},
	} {
		_, _, err := s.Txn(ctx, nil, tc.ops)
		wantErr(t, tc.name, err, gcs.ErrDuplicateKey)
	}
	// Overlapping deletes are fine.
	if _, _, err := s.Txn(ctx, nil, []gcs.Op{{Kind: gcs.OpDelete, Key: "k/1"}, {Kind: gcs.OpDeletePrefix, Key: "k"}}); err != nil {
		t.Fatalf("overlapping deletes: %v", err)
	}
}

func testWatchFromNow(t *testing.T, s gcs.Store) {
	ctx := testCtx(t)
	put(t, s, "w/before", "x")
	ch := s.Watch(ctx, "w/", 0)
	// A watch from now sees changes made after Watch returned.
	r1 := put(t, s, "w/a", "1")
	put(t, s, "other", "ignored")
	r2 := put(t, s, "w/a", "2")
	r3, err := s.Delete(ctx, "w/a")
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, ch, 3)
	checkEvent(t, evs[0], gcs.EventPut, "w/a", "1", r1)
	checkEvent(t, evs[1], gcs.EventPut, "w/a", "2", r2)
	checkEvent(t, evs[2], gcs.EventDelete, "w/a", "", r3)
	if evs[0].KV.CreateRev != r1 || evs[1].KV.CreateRev != r1 {
		t.Fatalf("CreateRev of events: %d %d, want %d", evs[0].KV.CreateRev, evs[1].KV.CreateRev, r1)
	}
}

func testWatchHistory(t *testing.T, s gcs.Store) {
	ctx := testCtx(t)
	r1 := put(t, s, "h/1", "a")
	r2 := put(t, s, "h/2", "b")
	put(t, s, "i/1", "outside")
	r3, err := s.Delete(ctx, "h/1")
	if err != nil {
		t.Fatal(err)
	}
	ch := s.Watch(ctx, "h/", r1)
	evs := events(t, ch, 3)
	checkEvent(t, evs[0], gcs.EventPut, "h/1", "a", r1)
	checkEvent(t, evs[1], gcs.EventPut, "h/2", "b", r2)
	checkEvent(t, evs[2], gcs.EventDelete, "h/1", "", r3)
	// History then live, without a gap.
	r4 := put(t, s, "h/3", "c")
	checkEvent(t, events(t, ch, 1)[0], gcs.EventPut, "h/3", "c", r4)
	// A second watch from the middle of history.
	evs = events(t, s.Watch(ctx, "h/", r2), 3)
	if evs[0].KV.ModRev != r2 || evs[2].KV.ModRev != r4 {
		t.Fatalf("watch from %d: %+v", r2, evs)
	}
}

func testWatchTxnOneRevision(t *testing.T, s gcs.Store) {
	ctx := testCtx(t)
	put(t, s, "tx/gone", "x")
	ch := s.Watch(ctx, "tx/", 0)
	_, rev, err := s.Txn(ctx, nil, []gcs.Op{
		{Kind: gcs.OpPut, Key: "tx/a", Value: []byte("a")},
		{Kind: gcs.OpDelete, Key: "tx/gone"},
		{Kind: gcs.OpPut, Key: "tx/b", Value: []byte("b")},
	})
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, ch, 3)
	checkEvent(t, evs[0], gcs.EventPut, "tx/a", "a", rev)
	checkEvent(t, evs[1], gcs.EventDelete, "tx/gone", "", rev)
	checkEvent(t, evs[2], gcs.EventPut, "tx/b", "b", rev)
}

func testWatchCancel(t *testing.T, s gcs.Store) {
	ctx, cancel := context.WithCancel(testCtx(t))
	ch := s.Watch(ctx, "c/", 0)
	r := put(t, s, "c/1", "x")
	checkEvent(t, events(t, ch, 1)[0], gcs.EventPut, "c/1", "x", r)
	cancel()
	for _, err := range closed(t, ch) {
		wantErr(t, "watch error after cancel", err, context.Canceled)
	}
	// A watch started with a done ctx is closed too.
	closed(t, s.Watch(ctx, "c/", 0))
	// The store is still usable.
	put(t, s, "c/2", "y")
}

func testWatchConcurrentWriters(t *testing.T, s gcs.Store) {
	ctx := testCtx(t)
	const writers, each = 8, 40
	ch := s.Watch(ctx, "cw/", 0)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := s.Put(ctx, fmt.Sprintf("cw/%d/%d", w, i), []byte{byte(i)}, 0); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	evs := events(t, ch, writers*each)
	seen := make(map[string]bool)
	var last int64
	for _, ev := range evs {
		if ev.KV.ModRev <= last {
			t.Fatalf("revision %d after %d", ev.KV.ModRev, last)
		}
		last = ev.KV.ModRev
		seen[ev.KV.Key] = true
	}
	if len(seen) != writers*each {
		t.Fatalf("saw %d distinct keys, want %d", len(seen), writers*each)
	}
}

func testCompact(t *testing.T, s gcs.Store) {
	ctx := testCtx(t)
	r1 := put(t, s, "cp/a", "1")
	put(t, s, "cp/a", "2")
	r3 := put(t, s, "cp/b", "3")
	r4 := put(t, s, "cp/a", "4")
	live := s.Watch(ctx, "cp/", r4+1) // caught up before the compaction: unaffected
	if err := s.Compact(ctx, r3); err != nil {
		t.Fatalf("Compact(%d): %v", r3, err)
	}
	wantErr(t, "Compact of the compacted revision", s.Compact(ctx, r3), gcs.ErrCompacted)
	wantErr(t, "Compact of an older revision", s.Compact(ctx, r1), gcs.ErrCompacted)
	wantErr(t, "Compact of a future revision", s.Compact(ctx, revision(t, s)+100), gcs.ErrFutureRev)

	ch := s.Watch(ctx, "cp/", r1)
	r, ok := next(t, ch)
	if !ok {
		t.Fatal("compacted watch closed without an error")
	}
	wantErr(t, "watch from a compacted revision", r.Err, gcs.ErrCompacted)
	if len(r.Events) != 0 {
		t.Fatalf("compacted watch delivered events %v", r.Events)
	}
	closed(t, ch)

	// Current values survive, and watches from after the compaction point work.
	if kv, ok := get(t, s, "cp/a"); !ok || string(kv.Value) != "4" {
		t.Fatalf("cp/a = %+v %v", kv, ok)
	}
	checkEvent(t, events(t, s.Watch(ctx, "cp/", r3+1), 1)[0], gcs.EventPut, "cp/a", "4", r4)
	r5 := put(t, s, "cp/c", "5")
	checkEvent(t, events(t, live, 1)[0], gcs.EventPut, "cp/c", "5", r5)
	if err := s.Compact(ctx, r5); err != nil {
		t.Fatalf("second Compact: %v", err)
	}
}

func testLeaseRevoke(t *testing.T, s gcs.Store) {
	ctx := testCtx(t)
	id, err := s.Grant(ctx, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if id == 0 {
		t.Fatal("Grant returned lease 0")
	}
	ch := s.Watch(ctx, "lr/", 0)
	r1, err := s.Put(ctx, "lr/1", []byte("a"), id)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s.Put(ctx, "lr/2", []byte("b"), id)
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "lr/free", "c")
	// A put without the lease detaches the key from it.
	if _, err := s.Put(ctx, "lr/moved", []byte("d"), id); err != nil {
		t.Fatal(err)
	}
	put(t, s, "lr/moved", "e")
	if kv, _ := get(t, s, "lr/1"); kv.Lease != id {
		t.Fatalf("lr/1 lease = %x, want %x", kv.Lease, id)
	}
	evs := events(t, ch, 5)
	checkEvent(t, evs[0], gcs.EventPut, "lr/1", "a", r1)
	checkEvent(t, evs[1], gcs.EventPut, "lr/2", "b", r2)
	lost, err := s.KeepAlive(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Revoke(ctx, id); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	closed(t, lost)
	evs = events(t, ch, 2)
	if evs[0].Type != gcs.EventDelete || evs[1].Type != gcs.EventDelete || evs[0].KV.ModRev != evs[1].KV.ModRev {
		t.Fatalf("revoke events %+v, want two deletes of one revision", evs)
	}
	if got := []string{evs[0].KV.Key, evs[1].KV.Key}; !slices.Contains(got, "lr/1") || !slices.Contains(got, "lr/2") {
		t.Fatalf("revoke deleted %q", got)
	}
	for k, want := range map[string]bool{"lr/1": false, "lr/2": false, "lr/free": true, "lr/moved": true} {
		if _, ok := get(t, s, k); ok != want {
			t.Fatalf("%s present=%v after revoke, want %v", k, ok, want)
		}
	}
	wantErr(t, "second Revoke", s.Revoke(ctx, id), gcs.ErrLeaseNotFound)
	_, err = s.Put(ctx, "lr/3", []byte("x"), id)
	wantErr(t, "Put with a revoked lease", err, gcs.ErrLeaseNotFound)
	_, err = s.KeepAlive(ctx, id)
	wantErr(t, "KeepAlive of a revoked lease", err, gcs.ErrLeaseNotFound)
}

func testLeaseUnknown(t *testing.T, s gcs.Store) {
	ctx := testCtx(t)
	const bogus = gcs.LeaseID(0x7eadbeef)
	_, err := s.Put(ctx, "lu", []byte("x"), bogus)
	wantErr(t, "Put with an unknown lease", err, gcs.ErrLeaseNotFound)
	_, _, err = s.Txn(ctx, nil, []gcs.Op{{Kind: gcs.OpPut, Key: "lu", Value: []byte("x"), Lease: bogus}})
	wantErr(t, "Txn put with an unknown lease", err, gcs.ErrLeaseNotFound)
	wantErr(t, "Revoke of an unknown lease", s.Revoke(ctx, bogus), gcs.ErrLeaseNotFound)
	_, err = s.KeepAlive(ctx, bogus)
	wantErr(t, "KeepAlive of an unknown lease", err, gcs.ErrLeaseNotFound)
	if _, ok := get(t, s, "lu"); ok {
		t.Fatal("key written despite the unknown lease")
	}
}

func testLeaseExpiry(t *testing.T, s gcs.Store) {
	ctx := testCtx(t)
	id, err := s.Grant(ctx, 500*time.Millisecond) // rounds up to 1 s
	if err != nil {
		t.Fatal(err)
	}
	ch := s.Watch(ctx, "le/", 0)
	for _, k := range []string{"le/1", "le/2"} {
		if _, err := s.Put(ctx, k, []byte("v"), id); err != nil {
			t.Fatal(err)
		}
	}
	events(t, ch, 2)
	// Nobody keeps the lease alive: it expires and its keys go, in one revision.
	evs := events(t, ch, 2)
	for _, ev := range evs {
		if ev.Type != gcs.EventDelete || ev.KV.ModRev != evs[0].KV.ModRev {
			t.Fatalf("expiry events %+v, want two deletes of one revision", evs)
		}
	}
	if n, err := s.Count(ctx, "le/"); err != nil || n != 0 {
		t.Fatalf("Count after expiry = %d, %v", n, err)
	}
	_, err = s.Put(ctx, "le/3", []byte("v"), id)
	wantErr(t, "Put with an expired lease", err, gcs.ErrLeaseNotFound)
	_, err = s.KeepAlive(ctx, id)
	wantErr(t, "KeepAlive of an expired lease", err, gcs.ErrLeaseNotFound)
}

func testKeepAlive(t *testing.T, s gcs.Store) {
	ctx := testCtx(t)
	// 5 s, not the 1 s minimum: etcd's client renews every TTL/3 from a 500 ms loop, and a
	// keep-alive that misses a whole TTL (a loaded machine, the race detector) rightly
	// loses the lease; this test is about the normal case.
	id, err := s.Grant(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "ka", []byte("v"), id); err != nil {
		t.Fatal(err)
	}
	kctx, stop := context.WithCancel(ctx)
	lost, err := s.KeepAlive(kctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// A second keeper of the same lease, stopped early, must not end the first one.
	k2ctx, stop2 := context.WithCancel(ctx)
	lost2, err := s.KeepAlive(k2ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	stop2()
	closed(t, lost2)
	// Longer than a TTL later the key is still there.
	time.Sleep(6 * time.Second)
	select {
	case <-lost:
		t.Fatal("lease lost while kept alive")
	default:
	}
	if _, ok := get(t, s, "ka"); !ok {
		t.Fatal("key of a kept-alive lease is gone")
	}
	// Stopping the keep-alive closes lost; the lease then expires.
	ch := s.Watch(ctx, "ka", 0)
	stop()
	closed(t, lost)
	ev := events(t, ch, 1)[0]
	if ev.Type != gcs.EventDelete || ev.KV.Key != "ka" {
		t.Fatalf("event %+v, want delete of ka", ev)
	}
}

func testContextDone(t *testing.T, s gcs.Store) {
	put(t, s, "cx", "v")
	id, err := s.Grant(testCtx(t), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, tc := range []struct {
		ctx  context.Context
		want error
	}{{canceled, context.Canceled}, {expired, context.DeadlineExceeded}} {
		ctx := tc.ctx
		calls := map[string]func() error{
			"Get":    func() error { _, _, err := s.Get(ctx, "cx"); return err },
			"List":   func() error { _, _, err := s.List(ctx, ""); return err },
			"Count":  func() error { _, err := s.Count(ctx, ""); return err },
			"Put":    func() error { _, err := s.Put(ctx, "cx", []byte("w"), 0); return err },
			"Delete": func() error { _, err := s.Delete(ctx, "cx"); return err },
			"Txn":    func() error { _, _, err := s.Txn(ctx, nil, []gcs.Op{{Kind: gcs.OpDelete, Key: "cx"}}); return err },
			"Grant":  func() error { _, err := s.Grant(ctx, time.Second); return err },
			"KeepAlive": func() error {
				_, err := s.KeepAlive(ctx, id)
				return err
			},
			"Revoke":   func() error { return s.Revoke(ctx, id) },
			"Compact":  func() error { return s.Compact(ctx, 1) },
			"Revision": func() error { _, err := s.Revision(ctx); return err },
		}
		for name, call := range calls {
			wantErr(t, name+" with a done ctx", call(), tc.want)
		}
		closed(t, s.Watch(ctx, "", 0))
	}
	if kv, ok := get(t, s, "cx"); !ok || string(kv.Value) != "v" {
		t.Fatalf("calls with a done ctx changed cx: %+v %v", kv, ok)
	}
	if err := s.Revoke(testCtx(t), id); err != nil {
		t.Fatalf("lease gone after calls with a done ctx: %v", err)
	}
}

func testClose(t *testing.T, s gcs.Store) {
	ctx := testCtx(t)
	put(t, s, "cl", "v")
	id, err := s.Grant(ctx, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	lost, err := s.KeepAlive(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	ch := s.Watch(ctx, "", 0)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, err := range closed(t, ch) {
		wantErr(t, "watch error after Close", err, gcs.ErrClosed)
	}
	closed(t, lost)
	calls := map[string]func() error{
		"Get":       func() error { _, _, err := s.Get(ctx, "cl"); return err },
		"List":      func() error { _, _, err := s.List(ctx, ""); return err },
		"Count":     func() error { _, err := s.Count(ctx, ""); return err },
		"Put":       func() error { _, err := s.Put(ctx, "cl", nil, 0); return err },
		"Delete":    func() error { _, err := s.Delete(ctx, "cl"); return err },
		"Txn":       func() error { _, _, err := s.Txn(ctx, nil, nil); return err },
		"Grant":     func() error { _, err := s.Grant(ctx, time.Second); return err },
		"KeepAlive": func() error { _, err := s.KeepAlive(ctx, id); return err },
		"Revoke":    func() error { return s.Revoke(ctx, id) },
		"Compact":   func() error { return s.Compact(ctx, 1) },
		"Revision":  func() error { _, err := s.Revision(ctx); return err },
		"Close":     s.Close,
	}
	for name, call := range calls {
		wantErr(t, name+" after Close", call(), gcs.ErrClosed)
	}
	w := s.Watch(ctx, "", 0)
	r, ok := next(t, w)
	if !ok {
		t.Fatal("Watch after Close: channel closed without an error")
	}
	wantErr(t, "Watch after Close", r.Err, gcs.ErrClosed)
	closed(t, w)
}

// NextPut waits up to d for watch w to deliver a put of key and returns key, or "" and no
// error when none came in d; an error when the watch ended (closed, or its Err). Events of
// other keys are skipped. For tests that check what a watch gets.
func NextPut(w <-chan gcs.WatchResponse, key string, d time.Duration) (string, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case r, ok := <-w:
			if !ok {
				return "", errors.New("gcstest: the watch ended")
			}
			if r.Err != nil {
				return "", r.Err
			}
			for _, ev := range r.Events {
				if ev.Type == gcs.EventPut && ev.KV.Key == key {
					return key, nil
				}
			}
		case <-timer.C:
			return "", nil
		}
	}
}

// PutProto writes m, marshalled, under key (no lease), failing t on an error: how tests of
// the packages that read the GCS's records seed a store with them.
func PutProto(t testing.TB, s gcs.Store, key string, m proto.Message) {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(context.Background(), key, b, 0); err != nil {
		t.Fatal(err)
	}
}
