package dashboard

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/gcs/gcstest"
	"github.com/ray-go/ray/internal/base/pb"
)

// TestAPIDemands: the overview's data has what waits for resources, as rayctl status's
// Demands (clusterstate.Read): a placement group not placed and tasks queued at a node;
// the overview draws them in its Demands table.
func TestAPIDemands(t *testing.T) {
	s, _, _ := cluster(t)
	gcstest.PutProto(t, s, gcs.PlacementGroupKey("g1"), &pb.PlacementGroupInfo{Id: "g1", JobId: "01000000", Strategy: "PACK",
		State: "PENDING", CreatedUnixMs: time.Now().UnixMilli(), Detail: "no room",
		Bundles: []*pb.PlacementBundle{{Resources: []*pb.ResourceQty{{Name: "CPU", Amount: 8 * 10000}}}}})
	gcstest.PutProto(t, s, gcs.NodeKey("w1"), &pb.NodeInfo{NodeId: "w1", AgentId: "a1", Role: "worker", JobId: "01000000"})
	gcstest.PutProto(t, s, gcs.LoadKey("w1"), &pb.NodeLoad{NodeId: "w1", Queued: 3, Demands: []*pb.ResourceDemand{
		{Shape: []*pb.ResourceQty{{Name: "CPU", Amount: 10000}}, Owner: "o/1", Tasks: 3}}})
	_, srv := newServer(t, Config{Store: s})
	_, body := get(t, http.DefaultClient, srv.URL+"/api/cluster")
	var ov struct {
		Demands struct {
			PlacementGroups []struct {
				ID     string `json:"placement_group_id"`
				Reason string `json:"reason"`
			} `json:"placement_groups"`
			Tasks []struct {
				Shape    map[string]float64 `json:"shape"`
				Tasks    int                `json:"tasks"`
				AgentIDs []string           `json:"agent_ids"`
			} `json:"tasks"`
		} `json:"demands"`
	}
	if err := json.Unmarshal([]byte(body), &ov); err != nil {
		t.Fatalf("/api/cluster: %v %s", err, body)
	}
	d := ov.Demands
	if len(d.PlacementGroups) != 1 || d.PlacementGroups[0].ID != "g1" || d.PlacementGroups[0].Reason != "no room" ||
		len(d.Tasks) != 1 || d.Tasks[0].Shape["CPU"] != 1 || d.Tasks[0].Tasks != 3 || len(d.Tasks[0].AgentIDs) != 1 || d.Tasks[0].AgentIDs[0] != "a1" {
		t.Fatalf("/api/cluster's demands: %+v\n%s", d, body)
	}
	_, page := get(t, http.DefaultClient, srv.URL+"/")
	_, js := get(t, http.DefaultClient, srv.URL+"/static/app.js")
	if !strings.Contains(page, `id="demands-table"`) || !strings.Contains(js, `fill("#demands-table"`) || !strings.Contains(js, "st.demands") {
		t.Fatal("the overview has no Demands table drawn from /api/cluster's demands")
	}
}
