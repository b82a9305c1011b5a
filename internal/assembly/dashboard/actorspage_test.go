package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/ray-go/ray/actors/lifecycle"
	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/gcstest"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestActorsPage: /api/actors returns one page (the live actors first, then the dead ones
// that died last), with how many there are, and filters on the server; a cluster with
// thousands of dead actors does not send them all every refresh.
func TestActorsPage(t *testing.T) {
	s, _, _ := cluster(t) // one ALIVE actor, counter-1
	for i := range 1500 {
		gcstest.PutProto(t, s, gcs.ActorKey(fmt.Sprintf("d%04d", i)), &pb.ActorInfo{ActorId: []byte{9, byte(i >> 8), byte(i)}, Class: "Gone",
			Phase: int32(lifecycle.Dead), JobId: "01000000",
			History: []*pb.ActorTransition{{Phase: int32(lifecycle.Dead), UnixMs: 1_000_000 + int64(i)}}})
	}
	_, srv := newServer(t, Config{Store: s})
	page := func(q string) ActorList {
		t.Helper()
		resp, body := get(t, http.DefaultClient, srv.URL+"/api/actors"+q)
		var l ActorList
		if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &l) != nil {
			t.Fatalf("/api/actors%s: %d %.300s", q, resp.StatusCode, body)
		}
		return l
	}
	l := page("")
	if len(l.Actors) != defaultActorLimit || l.Total != 1501 || l.Matched != 1501 || l.Dead != 1500 {
		t.Fatalf("/api/actors: %d actors, total %d, matched %d, dead %d; want %d of 1501, 1500 dead", len(l.Actors), l.Total, l.Matched, l.Dead, defaultActorLimit)
	}
	if l.Actors[0].Name != "counter-1" || l.Actors[1].History[0].UnixMs != 1_000_000+1499 || l.Actors[2].History[0].UnixMs != 1_000_000+1498 {
		t.Fatalf("/api/actors starts with %+v, %+v: want the live actor, then the last to die", l.Actors[0], l.Actors[1])
	}
	if l := page("?limit=10&filter=COUNTER"); len(l.Actors) != 1 || l.Matched != 1 || l.Total != 1501 || l.Actors[0].Name != "counter-1" {
		t.Fatalf("/api/actors?filter=COUNTER: %+v", l)
	}
	if resp, _ := get(t, http.DefaultClient, srv.URL+"/api/actors?limit=x"); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("/api/actors?limit=x: %d, want 400", resp.StatusCode)
	}
}
