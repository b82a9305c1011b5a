package ray

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/ray-go/ray/internal/base/identity"
	"github.com/ray-go/ray/internal/base/workerenv"
)

// driverCredentials finds a joining driver's GCS credentials, in this order: insecure
// (WithInsecure, RAY_GO_INSECURE: nil), credential files (RAY_GO_GCS_CA, _CERT, _KEY: what
// an agent gives the drivers `rayctl job submit` runs, or an external etcd's), a join token
// (WithToken, RAY_GO_TOKEN, RAY_GO_TOKEN_FILE: a certificate from the head). Nothing: an
// error that says what to set. joinAddr is the head's join endpoint when the certificate
// came from it (a driver's: short-lived, renewed there while the driver runs; also the
// files of a submitted driver, with RAY_GO_JOIN_ADDRESS), else empty.
func driverCredentials(ctx context.Context, cfg initConfig, addr []string) (creds *identity.Credentials, joinAddr string, err error) {
	if cfg.insecure || workerenv.IsTrue(os.Getenv(workerenv.Insecure)) {
		return nil, "", nil
	}
	files := identity.Files{CA: os.Getenv(workerenv.GCSCA), Cert: os.Getenv(workerenv.GCSCert), Key: os.Getenv(workerenv.GCSKey)}
	if !files.IsZero() {
		c, err := identity.Load(files)
		if err != nil {
			return nil, "", rayErrorf("ray: Init: %w: %s, %s, %s: %w", ErrNoCredentials, workerenv.GCSCA, workerenv.GCSCert, workerenv.GCSKey, err)
		}
		// A driver `rayctl job submit` runs has a certificate of its own, short-lived: it
		// renews it at the join endpoint the head names, and gives it up at Shutdown.
		if join := os.Getenv(workerenv.JoinAddress); join != "" && c.Role() == identity.RoleDriver {
			return c, join, nil
		}
		return c, "", nil
	}
	var tok identity.Token
	switch text, file := cfg.token, os.Getenv(workerenv.TokenFile); {
	case text == "" && os.Getenv(workerenv.Token) != "":
		tok, err = identity.ParseToken(os.Getenv(workerenv.Token))
	case text != "":
		tok, err = identity.ParseToken(text)
	case file != "":
		tok, err = identity.ReadTokenFile(file)
	case identity.PlainText(addr[0], time.Second):
		return nil, "", rayErrorf("ray: Init: %w: the cluster at %s speaks plain text (its head was started with --insecure): set %s=1 or pass ray.WithInsecure()",
			ErrNoCredentials, addr[0], workerenv.Insecure)
	default:
		return nil, "", rayErrorf("ray: Init: %w: joining the cluster at %s needs its join token: set %s to the token `rayctl start --head` printed "+
			"(or %s to a file holding it, or pass ray.WithToken); `rayctl token show` on the head prints it. "+
			"A cluster started with --insecure needs %s=1 instead", ErrNoCredentials, addr[0], workerenv.Token, workerenv.TokenFile, workerenv.Insecure)
	}
	if err != nil {
		return nil, "", rayErrorf("ray: Init: %w: %w", ErrNoCredentials, err)
	}
	joinAddr = os.Getenv(workerenv.JoinAddress)
	if joinAddr == "" {
		if joinAddr, err = identity.JoinAddress(addr[0]); err != nil {
			return nil, "", rayErrorf("ray: Init: %w", err)
		}
	}
	host, _ := os.Hostname()
	c, err := identity.Join(ctx, identity.JoinRequest{Address: joinAddr, Token: tok, Role: identity.RoleDriver,
		Name: fmt.Sprintf("driver-%s-%d", host, os.Getpid())})
	if err != nil {
		if errors.Is(err, identity.ErrJoinUnreachable) {
			return nil, "", rayErrorf("ray: Init: join the cluster at %s: the head's join endpoint is unreachable (%s says where it is if not at the GCS port + 1): %w",
				addr[0], workerenv.JoinAddress, err)
		}
		return nil, "", rayErrorf("ray: Init: %w: %w", ErrNoCredentials, err)
	}
	return c, joinAddr, nil
}

// renewal renews a joined driver's certificate at half its lifetime until the driver shuts
// down (identity.Renew): the certificate the head gives a driver is short-lived
// (identity.DriverCertValidity), so that the head can forget it soon after the driver
// ends. A renewal that fails is tried again every tenth of the lifetime (at most a
// minute) until the certificate expires; one the head refuses (the certificate was
// revoked) is not tried again: the driver's GCS and node connections are refused already.
type renewal struct {
	cancel   context.CancelFunc
	done     chan struct{}
	joinAddr string
	creds    *identity.Credentials
	logger   *slog.Logger
}

func startRenewal(joinAddr string, creds *identity.Credentials, logger *slog.Logger) *renewal {
	if logger == nil {
		logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &renewal{cancel: cancel, done: make(chan struct{}), joinAddr: joinAddr, creds: creds, logger: logger}
	go func() {
		defer close(r.done)
		for {
			leaf := creds.Leaf()
			wait := time.Until(identity.RenewAt(leaf))
			retry := min(leaf.NotAfter.Sub(leaf.NotBefore)/10, time.Minute)
			for {
				t := time.NewTimer(max(wait, 0))
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
				err := identity.Renew(ctx, joinAddr, creds, 0)
				if err == nil {
					logger.Debug("ray: driver certificate renewed", "not_after", creds.Leaf().NotAfter)
					break
				}
				if ctx.Err() != nil {
					return
				}
				if errors.Is(err, identity.ErrRenewRefused) || time.Now().After(leaf.NotAfter) {
					logger.Error("ray: the driver's certificate cannot be renewed: its connections to the cluster will be refused", "err", err)
					return
				}
				logger.Warn("ray: renew the driver's certificate; trying again", "err", err, "in", retry)
				wait = retry
			}
		}
	}()
	return r
}

// stop ends the renewal and waits for it (nil: nothing to stop).
func (r *renewal) stop() {
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
}

// releaseTimeout bounds Shutdown's release of the driver's certificate.
const releaseTimeout = 5 * time.Second

// release gives the driver's certificate up once the driver has ended (after its node
// stopped: nothing uses it any more): the head forgets its records and GCS user at once
// (identity.Release) instead of about two lifetimes later. A release that fails is
// logged: the head collects the certificate after its expiry anyway. nil: nothing to do.
func (r *renewal) release(ctx context.Context) {
	if r == nil {
		return
	}
	if err := identity.Release(ctx, r.joinAddr, r.creds, releaseTimeout); err != nil {
		r.logger.Warn("ray: give the driver's certificate up at the head (it forgets it at its expiry instead)", "err", err)
	}
}
