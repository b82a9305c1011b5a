package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/identity"
)

// DefaultDashboardPort is the port of the head's web dashboard that `rayctl start --head`
// asks for (Ray's dashboard port).
const DefaultDashboardPort = 8265

// DashboardOff as Config.DashboardPort serves no dashboard.
const DashboardOff = -1

// ErrDashboardPortInUse: Config.DashboardPort is taken (the error is an ErrPortInUse too).
var ErrDashboardPortInUse error = inUse("agent: dashboard port in use")

// Dashboard is the web dashboard a head serves on Config.DashboardPort. Package
// internal/assembly/dashboard implements it; it ranks above this package (it reads the
// cluster's state with this package's decoders), so the CLI hands it over as
// Config.NewDashboard.
type Dashboard interface {
	// ServeHTTP serves every path of the dashboard's port, /metrics too (with
	// DashboardConfig.Metrics), each behind the cluster's token.
	http.Handler
	// Run samples what the dashboard's charts show until ctx is done.
	Run(ctx context.Context)
}

// DashboardConfig is what a head gives its dashboard.
type DashboardConfig struct {
	Store gcs.Store
	// Metrics is the head's GET /metrics handler and Gatherer what it serves (the charts
	// sample it).
	Metrics  http.Handler
	Gatherer prometheus.Gatherer
	// TokenFile is where the cluster's join token is kept (for messages), and Token reads
	// it, per request (rotation applies at once) through the directory the head opened at
	// start: the dashboard asks for it. "" and nil only on an insecure cluster: no token
	// is asked.
	TokenFile string
	Token     func() (identity.Token, error)
	Logger    *slog.Logger
	// Address is the cluster's (its GCS endpoints, comma-separated: what drivers and
	// rayctl take with --address).
	Address string
}

// serveDashboard starts the head's dashboard on Host:DashboardPort, when configured.
func (a *Agent) serveDashboard() error {
	cfg := a.cfg
	if !cfg.Head || cfg.NewDashboard == nil || cfg.DashboardPort == DashboardOff {
		return nil
	}
	tokenFile := ""
	var token func() (identity.Token, error)
	if !cfg.Insecure {
		if a.join == nil {
			// A head on an external etcd has no join token to ask for.
			a.log.Warn("agent: no dashboard: it asks for the cluster's join token, and a head on an external etcd has none")
			return nil
		}
		tokenFile, token = TokenPath(cfg.SessionDir), a.tokenDir.Read
	}
	if cfg.DashboardTLS && a.headCreds == nil {
		return errors.New("agent: --dashboard-tls needs the cluster's identity (its CA and the head's certificate): not with --insecure")
	}
	addr := net.JoinHostPort(cfg.host(), strconv.Itoa(cfg.DashboardPort))
	l, err := net.Listen("tcp", addr)
	if err != nil && cfg.DashboardPort != 0 && cfg.DashboardPortFallback && isAddrInUse(err) {
		a.log.Warn("agent: the dashboard port is taken; serving the dashboard on a free port instead", "port", cfg.DashboardPort)
		l, err = net.Listen("tcp", net.JoinHostPort(cfg.host(), "0"))
	}
	if err != nil {
		if isAddrInUse(err) {
			return fmt.Errorf("%w: the dashboard port %d on %s is already in use (pass another --dashboard-port, 0 for a free one, or -1 for none): %v",
				ErrDashboardPortInUse, cfg.DashboardPort, cfg.host(), err)
		}
		return fmt.Errorf("agent: listen for the dashboard on %s: %w", addr, err)
	}
	h, g, err := a.metricsHandler()
	if err == nil {
		var d Dashboard
		if d, err = cfg.NewDashboard(DashboardConfig{Store: a.store, Metrics: h, Gatherer: g, TokenFile: tokenFile, Token: token, Logger: a.log, Address: a.Address()}); err == nil {
			a.dashboard = d
			a.dashboardSrv = newHTTPServer(d)
			a.dashboardAddr = l.Addr().String()
			if cfg.DashboardTLS {
				// The head's certificate and the CA (ServerTLS sends both); browsers send no
				// client certificate: the token is the dashboard's credential.
				tc := a.headCreds.ServerTLS()
				tc.ClientAuth, tc.ClientCAs = tls.NoClientCert, nil
				tc.NextProtos = []string{"h2", "http/1.1"}
				l = tls.NewListener(l, tc)
			}
			a.serve(a.dashboardSrv, l, "dashboard")
			return nil
		}
	}
	_ = l.Close()
	return fmt.Errorf("agent: the dashboard: %w", err)
}

// runDashboard starts the dashboard's sampling, once the agent's records are in the GCS
// (its first sample shows this node).
func (a *Agent) runDashboard() {
	if a.dashboard == nil {
		return
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		a.dashboard.Run(a.ctx)
	}()
}

// DashboardAddress returns the host:port of the head's dashboard ("" when it serves none).
func (a *Agent) DashboardAddress() string { return a.dashboardAddr }
