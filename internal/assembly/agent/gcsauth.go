package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/identity"
)

// procTLSDirName is where a secure head keeps the driver certificate of the processes it
// starts (procCreds): the head's own certificate is the GCS's administrator, which no
// process running user code gets.
const procTLSDirName = "tls-jobs"

// syncUsersEvery is how often the head checks its GCS users against the certificates
// (besides at start and at every revocation): users of expired certificates go.
const syncUsersEvery = 10 * time.Minute

// enableAuth turns on the embedded GCS's authorization (a head with TLS): the roles of
// identity's table in the cluster's namespace, the root user, auth on; then a user for
// every certificate the head recorded (syncUsers), so that agents and drivers that joined
// before the head restarted, or before it had users at all, keep their access.
func (a *Agent) enableAuth(ctx context.Context) error {
	au, err := a.embedded.Auth()
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	roles := make(map[string][]identity.KeyRange, len(identity.GCSRoles))
	for _, r := range identity.GCSRoles {
		roles[r] = identity.GCSPermissions(r, a.cfg.Namespace)
	}
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if err := au.Enable(cctx, roles); err != nil {
		return fmt.Errorf("agent: turn on the GCS's authorization: %w", err)
	}
	a.auth = au
	return a.syncUsersOnce(cctx)
}

// issueProcCreds issues and records the driver certificate of the processes the head
// starts, and saves it in <SessionDir>/tls-jobs.
func (a *Agent) issueProcCreds(ctx context.Context, ca *identity.CA) error {
	c, err := ca.Issue(identity.Request{Name: "head-" + a.id + "-jobs", Role: identity.RoleDriver})
	if err != nil {
		return fmt.Errorf("agent: the certificate of the head's processes: %w", err)
	}
	if err := a.recordCert(ctx, c.Leaf()); err != nil {
		return err
	}
	files, err := c.Save(filepath.Join(a.cfg.SessionDir, procTLSDirName))
	if err != nil {
		return fmt.Errorf("agent: save the certificate of the head's processes: %w", err)
	}
	a.procCreds = files
	return nil
}

// syncUsersOnce makes the GCS's users match the certificates: a user with its role for
// every recorded certificate neither revoked nor expired, and no user for a revoked or
// expired one (so a revoked certificate's connections opened before its revocation are
// refused at their next request). Users of no record are left alone (a join records its
// certificate before it makes the user, and other tools may have users of their own).
func (a *Agent) syncUsersOnce(ctx context.Context) error {
	if a.auth == nil {
		return nil
	}
	kvs, _, err := a.store.List(ctx, gcs.CertsPrefix)
	if err != nil {
		return fmt.Errorf("agent: sync the GCS users: %w", err)
	}
	revokedList, _, err := gcs.ListRevoked(ctx, a.store)
	if err != nil {
		return fmt.Errorf("agent: sync the GCS users: %w", err)
	}
	revoked := make(map[string]bool, len(revokedList))
	for _, r := range revokedList {
		revoked[r.Serial] = true
	}
	now := time.Now()
	want := map[string]string{} // user -> role
	drop := map[string]bool{}
	for _, kv := range kvs {
		rec, err := gcs.DecodeCertRecord(kv.Value)
		if err != nil {
			continue
		}
		user := rec.User
		if user == "" {
			user = rec.Name // a record from before certificates had users: its name is the CN
		}
		role := identity.GCSRoleOf(rec.Role)
		switch {
		case user == "" || role == "":
		case revoked[rec.Serial] || now.After(rec.NotAfter):
			drop[user] = true
		default:
			want[user] = role
		}
	}
	list, err := a.auth.Users(ctx)
	if err != nil {
		return fmt.Errorf("agent: sync the GCS users: %w", err)
	}
	users := make(map[string]bool, len(list))
	for _, user := range list {
		users[user] = true
		if serial, ok := identity.SerialOfUser(user); ok && revoked[serial] {
			drop[user] = true
		}
	}
	for user := range drop {
		if !users[user] || want[user] != "" {
			continue
		}
		if err := a.auth.DeleteUser(ctx, user); err != nil {
			return err
		}
		a.log.Info("agent: deleted the GCS user of a revoked or expired certificate", "user", user)
	}
	for user, role := range want {
		if users[user] {
			continue // made with its role (PutUser); a role is never taken back
		}
		if err := a.auth.PutUser(ctx, user, role); err != nil {
			return err
		}
	}
	return nil
}

// syncUsers is syncUsersOnce with a timeout and its error logged.
func (a *Agent) syncUsers(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 4*opTimeout)
	defer cancel()
	if err := a.syncUsersOnce(cctx); err != nil && ctx.Err() == nil {
		a.log.Error("agent: sync the GCS users with the certificates", "err", err)
	}
}

// syncUsersLoop runs syncUsers every syncUsersEvery until the agent stops.
func (a *Agent) syncUsersLoop() {
	defer a.wg.Done()
	t := time.NewTicker(syncUsersEvery)
	defer t.Stop()
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-t.C:
			a.syncUsers(a.ctx)
		}
	}
}
