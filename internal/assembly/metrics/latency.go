package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ray-go/ray/internal/base/gcs"
)

// Latency is the histogram of GCS write latency (ray_gcs_storage_operation_latency_ms, by
// Operation: Put, Delete, Txn) of the stores TimedStore wraps.
type Latency struct {
	hist *prometheus.HistogramVec
}

// NewLatency returns an empty Latency.
func NewLatency() *Latency {
	return &Latency{hist: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ray_gcs_storage_operation_latency_ms",
		Help:    "Latency of this process's GCS writes in milliseconds, by Operation (Put, Delete, Txn).",
		Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000},
	}, []string{"Operation"})}
}

// TimedStore returns s with its writes timed into l. The writes it times are the
// caller's own: an agent's are a handful a second (records, leases' keys, job logs).
func (l *Latency) TimedStore(s gcs.Store) gcs.Store {
	return &timedStore{Store: s, put: l.hist.WithLabelValues("Put"), del: l.hist.WithLabelValues("Delete"), txn: l.hist.WithLabelValues("Txn")}
}

type timedStore struct {
	gcs.Store
	put, del, txn prometheus.Observer
}

func observe(o prometheus.Observer, start time.Time) {
	o.Observe(float64(time.Since(start).Microseconds()) / 1000)
}

func (t *timedStore) Put(ctx context.Context, key string, value []byte, lease gcs.LeaseID) (int64, error) {
	defer observe(t.put, time.Now())
	return t.Store.Put(ctx, key, value, lease)
}

func (t *timedStore) Delete(ctx context.Context, key string) (int64, error) {
	defer observe(t.del, time.Now())
	return t.Store.Delete(ctx, key)
}

func (t *timedStore) Txn(ctx context.Context, cmps []gcs.Cmp, ops []gcs.Op) (bool, int64, error) {
	defer observe(t.txn, time.Now())
	return t.Store.Txn(ctx, cmps, ops)
}
