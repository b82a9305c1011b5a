package agent

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/identity"
)

// procTLSDirName is where a secure head keeps the driver certificate of the processes it
// starts (procCreds): the head's own certificate is the GCS's administrator, which no
// process running user code gets.
const procTLSDirName = "tls-jobs"

// Collection of the certificates' records and users (collectCertsOnce): every
// CertCollectEvery (besides at start and at every revocation) the head matches its GCS
// users to the certificates (syncUsersOnce: users of expired certificates go), then
// deletes the records of certificates expired for longer than CertRetention, so that the
// GCS holds the records of the certificates in use and of the recently expired, however
// many drivers and rayctl commands came and went.
const (
	DefaultCertCollectEvery = 10 * time.Minute
	DefaultCertRetention    = time.Hour
	// collectPerRound bounds the keys and users one round deletes (the rest waits for the
	// next round): a round is a few hundred small requests at most.
	collectPerRound = 256
)

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
		if gcsDir := filepath.Join(a.cfg.SessionDir, "gcs"); a.restartedGCS && errors.Is(err, context.DeadlineExceeded) || a.restartedGCS && strings.Contains(err.Error(), "timed out") {
			// Over data of an earlier start, a GCS that opened but never answers lost
			// its write-ahead log (a removed or truncated wal/: etcd then has no
			// leader to commit through).
			return fmt.Errorf("agent: turn on the GCS's authorization: %w: the GCS opened its data in %s but does not answer, "+
				"as when its write-ahead log (member/wal) is missing or truncated; restore that directory from a backup, or "+
				"remove %s to start a new cluster (its jobs, detached actors and issued certificates are then gone)", err, gcsDir, a.cfg.SessionDir)
		}
		return fmt.Errorf("agent: turn on the GCS's authorization: %w", err)
	}
	a.auth = au
	return a.syncUsersOnce(cctx)
}

// issueProcCreds issues and records the driver certificate of the processes the head
// starts, and saves it in <SessionDir>/tls-jobs.
func (a *Agent) issueProcCreds(ctx context.Context, ca *identity.CA) (*x509.Certificate, error) {
	c, err := ca.Issue(identity.Request{Name: "head-" + a.id + "-jobs", Role: identity.RoleDriver})
	if err != nil {
		return nil, fmt.Errorf("agent: the certificate of the head's processes: %w", err)
	}
	if err := a.recordCert(ctx, c.Leaf()); err != nil {
		return nil, err
	}
	files, err := c.Save(filepath.Join(a.cfg.SessionDir, procTLSDirName))
	if err != nil {
		return nil, fmt.Errorf("agent: save the certificate of the head's processes: %w", err)
	}
	a.procCreds = files
	return c.Leaf(), nil
}

// retireReplacedHeadCerts revokes the certificates that earlier heads on this session
// directory issued themselves and that this start replaced: the head's certificate (the
// GCS's administrator) and the driver certificate of the processes it started
// (head-<id>-jobs), all but current, and deletes their GCS users. Without
// it every restart would leave two more certificates valid for their year, copies of
// which (tls/, tls-jobs/) could still read and write the GCS. The processes of the
// earlier head ended with it; the head's machine's rayctl reads the new ones.
func (a *Agent) retireReplacedHeadCerts(ctx context.Context, current ...*x509.Certificate) error {
	keep := make(map[string]bool, len(current))
	for _, c := range current {
		keep[identity.SerialText(c.SerialNumber)] = true
	}
	a.certsMu.Lock()
	defer a.certsMu.Unlock()
	recs, revoked, err := a.readCertState(ctx)
	if err != nil {
		return fmt.Errorf("agent: the certificates of the head's earlier starts: %w", err)
	}
	now := time.Now()
	n := 0
	for _, rec := range recs {
		own := rec.Role == identity.RoleHead || (rec.Role == identity.RoleDriver && isHeadJobsName(rec.Name))
		if !own || keep[rec.Serial] || revoked[rec.Serial] || now.After(rec.NotAfter) {
			continue
		}
		b, _ := json.Marshal(gcs.RevokedRecord{Serial: rec.Serial, RevokedAt: now.UTC(), NotAfter: rec.NotAfter})
		if _, err := a.store.Put(ctx, gcs.RevokedKey(rec.Serial), b, 0); err != nil {
			return fmt.Errorf("agent: revoke certificate %s of an earlier start of the head (%s): %w", rec.Serial, rec.Name, err)
		}
		if u := userOf(rec); a.auth != nil && u != "" {
			if err := a.auth.DeleteUser(ctx, u); err != nil {
				return fmt.Errorf("agent: revoke certificate %s of an earlier start of the head (%s): %w", rec.Serial, rec.Name, err)
			}
		}
		n++
	}
	if n > 0 {
		a.log.Info("agent: revoked the certificates of the head's earlier starts", "revoked", n)
	}
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
	a.certsMu.Lock()
	defer a.certsMu.Unlock()
	recs, revoked, err := a.readCertState(ctx)
	if err != nil {
		return fmt.Errorf("agent: sync the GCS users: %w", err)
	}
	revokedUsers := revokedUsersOf(recs, revoked)
	now := time.Now()
	want := map[string]string{} // user -> role
	drop := map[string]bool{}
	for _, rec := range recs {
		user := userOf(rec)
		role := identity.GCSRoleOf(rec.Role)
		switch {
		case user == "" || role == "":
		case revokedUsers[user]:
			drop[user] = true
			// A renewed driver certificate shares its user with the ones before it:
			// revoking one revokes them all, the nodes' handshakes included.
			if !revoked[rec.Serial] && !now.After(rec.NotAfter) {
				b, _ := json.Marshal(gcs.RevokedRecord{Serial: rec.Serial, RevokedAt: now.UTC(), NotAfter: rec.NotAfter})
				if _, err := a.store.Put(ctx, gcs.RevokedKey(rec.Serial), b, 0); err != nil {
					return fmt.Errorf("agent: revoke %s, of the revoked user %s: %w", rec.Serial, user, err)
				}
				a.log.Warn("agent: revoked a certificate of the GCS user of a revoked one", "serial", rec.Serial, "user", user)
			}
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
		if revokedUsers[user] {
			drop[user] = true
		}
	}
	for user := range drop {
		if !users[user] || (want[user] != "" && !revokedUsers[user]) {
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

// syncUsersLoop runs syncUsers and a collection every CertCollectEvery until the agent
// stops.
func (a *Agent) syncUsersLoop() {
	defer a.wg.Done()
	t := time.NewTicker(a.cfg.CertCollectEvery)
	defer t.Stop()
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-t.C:
			a.syncUsers(a.ctx)
			cctx, cancel := context.WithTimeout(a.ctx, 4*opTimeout)
			n, err := a.collectCertsOnce(cctx, time.Now())
			cancel()
			switch {
			case err != nil && a.ctx.Err() == nil:
				a.log.Error("agent: collect the records of expired certificates", "err", err)
			case n > 0:
				a.log.Info("agent: collected the records of expired certificates", "deleted", n)
			}
		}
	}
}

// collectCertsOnce deletes, at most collectPerRound of them, the records of the
// certificates expired at now for longer than CertRetention: their GCS user (unless a
// certificate of the same user is still valid: a driver's renewed one), then certs/
// <serial>; and revoked/<serial> once the revoked certificate has expired (an expired
// certificate is refused anyway, by etcd and by every node's handshake), kept at least
// identity.ClockSkew past its expiry for the nodes whose clock is behind. A revocation
// whose certificate's expiry is unknown (no record: another PKI's certificate, or one
// issued before the head kept records) is kept. It returns how many records it deleted.
func (a *Agent) collectCertsOnce(ctx context.Context, now time.Time) (int, error) {
	a.certsMu.Lock()
	defer a.certsMu.Unlock()
	kvs, _, err := a.store.List(ctx, gcs.CertsPrefix)
	if err != nil {
		return 0, fmt.Errorf("agent: collect certificates: %w", err)
	}
	revokedList, _, err := gcs.ListRevoked(ctx, a.store)
	if err != nil {
		return 0, fmt.Errorf("agent: collect certificates: %w", err)
	}
	retention := a.cfg.CertRetention
	certs := make(map[string]gcs.CertRecord, len(kvs))
	valid := map[string]bool{} // users of a certificate not expired at now
	for _, kv := range kvs {
		rec, err := gcs.DecodeCertRecord(kv.Value)
		serial, _ := gcs.TrimKey(gcs.CertsPrefix, kv.Key)
		if err != nil || rec.Serial != serial {
			continue // not ours to judge: left for an operator
		}
		certs[serial] = rec
		if !now.After(rec.NotAfter) {
			valid[userOf(rec)] = true
		}
	}
	budget := collectPerRound
	deleted := 0
	revoked := make(map[string]bool, len(revokedList))
	for _, r := range revokedList {
		revoked[r.Serial] = true
		notAfter := r.NotAfter
		if c, ok := certs[r.Serial]; ok && notAfter.IsZero() {
			notAfter = c.NotAfter
		}
		if notAfter.IsZero() || !now.After(notAfter.Add(max(retention, identity.ClockSkew))) || budget == 0 {
			continue
		}
		budget--
		if _, err := a.store.Delete(ctx, gcs.RevokedKey(r.Serial)); err != nil {
			return deleted, fmt.Errorf("agent: collect the revocation of %s: %w", r.Serial, err)
		}
		deleted++
		delete(revoked, r.Serial)
	}
	for serial, rec := range certs {
		if budget == 0 {
			break
		}
		// A revoked certificate's record goes after its revocation's (which needs its
		// expiry): in this round if that one went, else in a later one.
		if !now.After(rec.NotAfter.Add(retention)) || revoked[serial] {
			continue
		}
		budget--
		if user := userOf(rec); a.auth != nil && user != "" && !valid[user] {
			if err := a.auth.DeleteUser(ctx, user); err != nil {
				return deleted, fmt.Errorf("agent: collect certificate %s: %w", serial, err)
			}
		}
		if _, err := a.store.Delete(ctx, gcs.CertKey(serial)); err != nil {
			return deleted, fmt.Errorf("agent: collect certificate %s: %w", serial, err)
		}
		deleted++
	}
	return deleted, nil
}

// readCertState reads the certificates' records (certs/; undecodable ones are skipped)
// and the revoked serials (revoked/).
func (a *Agent) readCertState(ctx context.Context) ([]gcs.CertRecord, map[string]bool, error) {
	kvs, _, err := a.store.List(ctx, gcs.CertsPrefix)
	if err != nil {
		return nil, nil, fmt.Errorf("read the certificates: %w", err)
	}
	revokedList, _, err := gcs.ListRevoked(ctx, a.store)
	if err != nil {
		return nil, nil, fmt.Errorf("read the revocations: %w", err)
	}
	revoked := make(map[string]bool, len(revokedList))
	for _, r := range revokedList {
		revoked[r.Serial] = true
	}
	recs := make([]gcs.CertRecord, 0, len(kvs))
	for _, kv := range kvs {
		if rec, err := gcs.DecodeCertRecord(kv.Value); err == nil {
			recs = append(recs, rec)
		}
	}
	return recs, revoked, nil
}

// revokedUsersOf returns the GCS users shut out by the revoked serials: the user of a
// revoked certificate's record (a driver's renewed certificates share theirs), and a user
// whose name ends with a revoked serial.
func revokedUsersOf(recs []gcs.CertRecord, revoked map[string]bool) map[string]bool {
	out := map[string]bool{}
	for _, rec := range recs {
		if revoked[rec.Serial] && rec.User != "" {
			out[rec.User] = true
		}
	}
	for _, rec := range recs {
		if serial, ok := identity.SerialOfUser(rec.User); ok && revoked[serial] {
			out[rec.User] = true
		}
	}
	return out
}

// mayRenew is the join endpoint's question before it renews a driver's certificate
// (valid, of the CA: its handshake checked): not if it or a certificate of its GCS user
// was revoked, nor if its user is gone. It reads the revoked set and the records of the
// revoked serials only (certs/<serial>: a revoked certificate's record names its user),
// not every certificate's record, and asks for its one user.
func (a *Agent) mayRenew(cert *x509.Certificate) error {
	ctx, cancel := context.WithTimeout(a.ctx, opTimeout)
	defer cancel()
	user := identity.GCSUser(cert)
	first, ok := identity.SerialOfUser(user)
	if !ok {
		return fmt.Errorf("%w: %s", identity.ErrRevoked, user)
	}
	revokedList, _, err := gcs.ListRevoked(ctx, a.store)
	if err != nil {
		return fmt.Errorf("read the revocations: %w", err)
	}
	for _, r := range revokedList {
		if r.Serial == first || r.Serial == identity.SerialText(cert.SerialNumber) {
			return fmt.Errorf("%w: %s", identity.ErrRevoked, user)
		}
	}
	// A renewed driver's certificates share their user: one of them revoked revokes it.
	for _, r := range revokedList {
		kv, found, err := a.store.Get(ctx, gcs.CertKey(r.Serial))
		if err != nil {
			return fmt.Errorf("read the certificate %s: %w", r.Serial, err)
		}
		if !found {
			continue
		}
		if rec, err := gcs.DecodeCertRecord(kv.Value); err == nil && rec.User == user {
			return fmt.Errorf("%w: %s", identity.ErrRevoked, user)
		}
	}
	if a.auth != nil {
		ok, err := a.auth.HasUser(ctx, user)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("the GCS user %s is gone (revoked, or its certificate expired)", user)
		}
	}
	return nil
}

// releaseDriver forgets, when its driver has ended, a driver's certificates: every
// certs/ record of GCS user (a renewed driver has several), then the user, so that the
// GCS holds no more of a driver than its job's record from its end on, not for its
// certificate's lifetime and retention (collectCertsOnce). Records of revoked serials
// stay until their revocation is collected (it needs their expiry). It refuses a user
// with a record of another role than a driver's, and the head's own driver certificates
// (head-<id>-jobs: every process the head starts shares one). No record: nothing to do.
// why says who asked, for the log. It returns how many records it deleted.
func (a *Agent) releaseDriver(ctx context.Context, user, why string) (int, error) {
	if user == "" {
		return 0, errors.New("agent: release a driver's certificate: no GCS user")
	}
	a.certsMu.Lock()
	defer a.certsMu.Unlock()
	recs, revoked, err := a.readCertState(ctx)
	if err != nil {
		return 0, fmt.Errorf("agent: release the certificate of %s: %w", user, err)
	}
	var serials []string
	for _, rec := range recs {
		if userOf(rec) != user {
			continue
		}
		if rec.Role != identity.RoleDriver || isHeadJobsName(rec.Name) {
			return 0, fmt.Errorf("agent: the certificate of %s is not a driver's own (%s %q): kept", user, rec.Role, rec.Name)
		}
		if !revoked[rec.Serial] {
			serials = append(serials, rec.Serial)
		}
	}
	if len(serials) == 0 {
		return 0, nil
	}
	deleted := 0
	for _, serial := range serials {
		if _, err := a.store.Delete(ctx, gcs.CertKey(serial)); err != nil {
			return deleted, fmt.Errorf("agent: release certificate %s of %s: %w", serial, user, err)
		}
		deleted++
	}
	// The user after its records: a sync after this finds no record of it, and leaves a
	// user that the deletion below missed to the next release or collection.
	if a.auth != nil {
		if err := a.auth.DeleteUser(ctx, user); err != nil {
			return deleted, fmt.Errorf("agent: release the certificate of %s: %w", user, err)
		}
	}
	a.log.Info("agent: forgot the certificate of an ended driver", "user", user, "records", deleted, "why", why)
	return deleted, nil
}

// releaseCert is the join endpoint's JoinPolicy.Release: a driver that ended gives its
// certificate up.
func (a *Agent) releaseCert(cert *x509.Certificate) error {
	ctx, cancel := context.WithTimeout(a.ctx, 2*opTimeout)
	defer cancel()
	_, err := a.releaseDriver(ctx, identity.GCSUser(cert), "the driver released it")
	return err
}

// isHeadJobsName reports whether name is that of a head's certificate for the processes
// it starts (issueProcCreds).
func isHeadJobsName(name string) bool {
	return strings.HasPrefix(name, "head-") && strings.HasSuffix(name, "-jobs")
}

// userOf is a certificate record's GCS user.
func userOf(rec gcs.CertRecord) string {
	if rec.User == "" {
		return rec.Name // a record from before certificates had users: its name is the CN
	}
	return rec.User
}
