package tasks

import (
	"github.com/ray-go/ray/internal/base/pb"
	"github.com/ray-go/ray/tasks/sched"
)

// ResourcesToPB converts resources to their wire form.
func ResourcesToPB(r sched.Resources) []*pb.ResourceQty {
	if r.IsZero() {
		return nil
	}
	var out []*pb.ResourceQty
	r.Each(func(name string, q sched.Quantity) {
		out = append(out, &pb.ResourceQty{Name: name, Amount: int64(q)})
	})
	return out
}

// ResourcesFromPB converts the wire form back.
func ResourcesFromPB(list []*pb.ResourceQty) sched.Resources {
	var r sched.Resources
	for _, q := range list {
		r = r.With(q.Name, sched.Quantity(q.Amount))
	}
	return r
}
