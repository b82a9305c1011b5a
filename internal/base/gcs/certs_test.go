package gcs_test

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
)

// WatchRevoked hands over the whole revoked/ list at the start and after every change,
// until its context ends.
func TestWatchRevoked(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := memstore.New(memstore.Options{})
	defer s.Close()
	revoke := func(serial string) {
		b, _ := json.Marshal(gcs.RevokedRecord{Serial: serial, RevokedAt: time.Now()})
		if _, err := s.Put(ctx, gcs.RevokedKey(serial), b, 0); err != nil {
			t.Fatal(err)
		}
	}
	revoke("aa")
	if _, err := s.Put(ctx, gcs.RevokedKey("bb"), []byte("not json"), 0); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		gcs.WatchRevoked(ctx, s, 0, 10*time.Millisecond, func(list []gcs.RevokedRecord) {
			var serials []string
			for _, r := range list {
				serials = append(serials, r.Serial)
			}
			sort.Strings(serials)
			got <- strings.Join(serials, ",")
		})
	}()
	expect := func(want string) {
		t.Helper()
		for {
			select {
			case g := <-got:
				if g == want {
					return
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("no list %q", want)
			}
		}
	}
	expect("aa,bb") // an undecodable record still names its serial
	revoke("cc")
	expect("aa,bb,cc")
	if _, err := s.Delete(ctx, gcs.RevokedKey("aa")); err != nil {
		t.Fatal(err)
	}
	expect("bb,cc")
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("WatchRevoked did not return after its context ended")
	}
}
