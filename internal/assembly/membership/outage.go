package membership

import (
	"log/slog"
	"sync"
	"time"
)

// outageRemind is how often an outage of the GCS is logged again while it lasts.
const outageRemind = 30 * time.Second

// outage is what the provider's log says of the GCS not answering: its retry loops (the
// registration, the lease's check, the members' listing) fail together during an outage,
// and each used to log every failed attempt (every second, or every back-off). It logs
// one warning when the outage starts (which call failed, with what, the GCS's address,
// that the provider keeps retrying), a reminder with the outage's length every remind
// while it lasts, and one line when a call succeeds again ("GCS reachable again after
// 41s"). A leaf: its lock guards only its own fields.
type outage struct {
	log    *slog.Logger
	gcs    slog.Attr // the GCS's address, for the log (empty: not known)
	remind time.Duration
	now    func() time.Time

	mu       sync.Mutex
	since    time.Time // when the first call of the outage failed; zero: no outage
	reminded time.Time // the last warning or reminder
}

func newOutage(log *slog.Logger, addr string) *outage {
	o := &outage{log: log, remind: outageRemind, now: time.Now}
	if addr != "" {
		o.gcs = slog.String("gcs", addr)
	}
	return o
}

// failed notes that the GCS call op failed with err (the caller retries it).
func (o *outage) failed(op string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	switch {
	case o.since.IsZero():
		o.since, o.reminded = now, now
		o.log.Warn("membership: the GCS does not answer; retrying until it does",
			o.gcs, slog.String("op", op), slog.Any("error", err))
	case now.Sub(o.reminded) >= o.remind:
		o.reminded = now
		o.log.Warn("membership: the GCS still does not answer; retrying",
			o.gcs, slog.Duration("for", now.Sub(o.since).Round(time.Second)), slog.String("op", op), slog.Any("error", err))
	}
}

// answered notes that a GCS call succeeded: the end of an outage, if there was one.
func (o *outage) answered() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.since.IsZero() {
		return
	}
	d := o.now().Sub(o.since).Round(time.Second)
	o.since = time.Time{}
	o.log.Info("membership: GCS reachable again after "+d.String(), o.gcs, slog.Duration("outage", d))
}
