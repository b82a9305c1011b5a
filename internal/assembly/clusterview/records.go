package clusterview

import (
	"fmt"
	"math"
	"net"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/pb"
)

// MaxResources bounds the resource entries of a node record or load report: a view turns
// them into sched.Resources one by one, which costs a copy of the entries so far each, so
// an unbounded list is quadratic (10,000 names would allocate gigabytes). Real nodes have a
// handful.
const MaxResources = 128

// checkResources says what is wrong with a list of resource quantities from the GCS: too
// many entries, an empty or repeated name, a negative amount where none may be (a node's
// total; its available amount may be negative for a while), or an amount past the range
// that sched's saturating arithmetic keeps (math.MinInt64).
func checkResources(what string, list []*pb.ResourceQty, negativeOK bool) error {
	if len(list) > MaxResources {
		return fmt.Errorf("%s has %d resources, more than %d", what, len(list), MaxResources)
	}
	seen := make(map[string]bool, len(list))
	for _, q := range list {
		name, amount := q.GetName(), q.GetAmount()
		switch {
		case name == "":
			return fmt.Errorf("%s has a resource without a name", what)
		case seen[name]:
			return fmt.Errorf("%s has resource %q twice", what, name)
		case amount == math.MinInt64 || (amount < 0 && !negativeOK):
			return fmt.Errorf("%s has %d of resource %q", what, amount, name)
		}
		seen[name] = true
	}
	return nil
}

// DecodeNode decodes the record of nodes/<id> (written by each node for itself; any client
// of the GCS can write one). It must be that node's record, with valid resources, a
// non-negative pid and store size, and a data address that is host:port when set.
func DecodeNode(id string, b []byte) (*pb.NodeInfo, error) {
	if id == "" {
		return nil, fmt.Errorf("clusterview: a node record without a node ID in its key")
	}
	info := &pb.NodeInfo{}
	if err := proto.Unmarshal(b, info); err != nil {
		return nil, fmt.Errorf("clusterview: decode the record of node %s: %w", id, err)
	}
	what := "clusterview: node " + id
	switch {
	case info.GetNodeId() != id:
		return nil, fmt.Errorf("clusterview: the record of node %s names node %q", id, info.GetNodeId())
	case info.GetPid() < 0:
		return nil, fmt.Errorf("%s has the negative pid %d", what, info.GetPid())
	case info.GetObjectStoreBytes() < 0:
		return nil, fmt.Errorf("%s has the negative object store size %d", what, info.GetObjectStoreBytes())
	}
	if a := info.GetDataSocket(); a != "" && (!strings.HasPrefix(a, "unix:/") || len(a) > 200) {
		return nil, fmt.Errorf("%s has the data socket %q (want unix:/path)", what, a)
	}
	if a := info.GetDataAddress(); a != "" {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("%s has the data address %q: %w", what, a, err)
		}
	}
	if err := checkResources(what, info.GetTotal(), false); err != nil {
		return nil, err
	}
	return info, nil
}

// DecodeLoad decodes the load report of load/<id> (written by each node for itself): that
// node's report, with valid resources and a non-negative queue length.
func DecodeLoad(id string, b []byte) (*pb.NodeLoad, error) {
	if id == "" {
		return nil, fmt.Errorf("clusterview: a load report without a node ID in its key")
	}
	l := &pb.NodeLoad{}
	if err := proto.Unmarshal(b, l); err != nil {
		return nil, fmt.Errorf("clusterview: decode the load report of node %s: %w", id, err)
	}
	what := "clusterview: the load report of node " + id
	switch {
	case l.GetNodeId() != id:
		return nil, fmt.Errorf("clusterview: the load report of node %s names node %q", id, l.GetNodeId())
	case l.GetQueued() < 0:
		return nil, fmt.Errorf("%s has %d tasks queued", what, l.GetQueued())
	}
	if err := checkResources(what, l.GetAvailable(), true); err != nil {
		return nil, err
	}
	return l, nil
}
