package cli

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/ray-go/ray/internal/base/gcs"
	"github.com/ray-go/ray/internal/base/identity"
)

func certCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "cert",
		Usage: "list the certificates the cluster's CA issued, or revoke one",
		Subcommands: []*ucli.Command{
			{
				Name:   "list",
				Usage:  "list the certificates the head issued (agents, drivers, rayctl clients) and whether they are revoked",
				Flags:  stateFlags(),
				Action: certList,
			},
			{
				Name: "revoke",
				Usage: "revoke a certificate (SERIAL as `rayctl cert list` prints it): every process of the cluster refuses it " +
					"on new node-to-node connections, and the GCS refuses new connections that present it",
				ArgsUsage: "SERIAL",
				Flags: append(stateFlags(), &ucli.BoolFlag{Name: "force",
					Usage: "revoke the head's own certificate too (the head's node and rayctl on its machine use it)"}),
				Action: certRevoke,
			},
		},
	}
}

// certList prints certs/ joined with revoked/: one record per certificate, newest first.
func certList(c *ucli.Context) error {
	if c.NArg() > 0 {
		return exitf(ExitError, "cert list takes no arguments")
	}
	format, err := stateFormat(c)
	if err != nil {
		return err
	}
	store, _, err := connect(c)
	if err != nil {
		return err
	}
	defer store.Close()
	ctx, cancel := opCtx(c)
	defer cancel()
	kvs, _, err := store.List(ctx, gcs.CertsPrefix)
	if err != nil {
		return exitf(ExitError, "read the certificates: %v", err)
	}
	revoked, _, err := gcs.ListRevoked(ctx, store)
	if err != nil {
		return exitf(ExitError, "read the revoked certificates: %v", err)
	}
	when := map[string]time.Time{}
	for _, r := range revoked {
		when[r.Serial] = r.RevokedAt
	}
	var certs []gcs.CertRecord
	for _, kv := range kvs {
		rec, err := gcs.DecodeCertRecord(kv.Value)
		if err != nil {
			writeErr(c, "rayctl: %s: %v (skipped)", kv.Key, err)
			continue
		}
		certs = append(certs, rec)
	}
	sort.Slice(certs, func(i, j int) bool { return certs[i].IssuedAt.After(certs[j].IssuedAt) })
	now := time.Now()
	recs := make([]record, 0, len(certs))
	for _, cr := range certs {
		state := "VALID"
		at, isRevoked := when[cr.Serial]
		switch {
		case isRevoked:
			state = "REVOKED"
		case now.After(cr.NotAfter):
			state = "EXPIRED"
		}
		r := record{{"serial", cr.Serial}, {"state", state}, {"name", cr.Name}, {"role", cr.Role}, {"agent_id", cr.AgentID},
			{"issued_at", cr.IssuedAt.Format(time.RFC3339)}, {"not_after", cr.NotAfter.Format(time.RFC3339)}}
		if isRevoked {
			r = append(r, field{"revoked_at", at.Format(time.RFC3339)})
		}
		recs = append(recs, r)
	}
	return printRecords(c.App.Writer, format, []string{"serial", "state", "name", "role", "agent_id", "issued_at", "not_after"}, recs)
}

// certRevoke writes revoked/<serial>. A serial the head has no record of is revoked all
// the same (with a warning): it may come from before the head kept records.
func certRevoke(c *ucli.Context) error {
	if c.NArg() != 1 {
		return exitf(ExitError, "cert revoke takes one argument: the certificate's serial number (`rayctl cert list` prints them)")
	}
	n, err := identity.ParseSerial(c.Args().First())
	if err != nil {
		return exitf(ExitError, "%v", err)
	}
	serial := identity.SerialText(n)
	store, addr, err := connect(c)
	if err != nil {
		return err
	}
	defer store.Close()
	ctx, cancel := opCtx(c)
	defer cancel()
	name := "a certificate the head has no record of"
	var notAfter time.Time // the head drops the revocation some time after it
	if kv, ok, err := store.Get(ctx, gcs.CertKey(serial)); err != nil {
		return exitf(ExitError, "read the certificate's record: %v", err)
	} else if ok {
		rec, err := gcs.DecodeCertRecord(kv.Value)
		if err == nil {
			if rec.Role == identity.RoleHead && !c.Bool("force") {
				return exitf(ExitError, "%s is the head's certificate (%s): the head's node and rayctl on its machine use it (it is the GCS's administrator); pass --force to revoke it anyway", serial, rec.Name)
			}
			name = fmt.Sprintf("%s, %s", rec.Name, rec.Role)
			notAfter = rec.NotAfter
		}
	} else {
		writeErr(c, "rayctl: warning: the cluster has no record of certificate %s; revoking it anyway", serial)
	}
	b, _ := json.Marshal(gcs.RevokedRecord{Serial: serial, RevokedAt: time.Now().UTC(), NotAfter: notAfter})
	_, err = store.Put(ctx, gcs.RevokedKey(serial), b, 0)
	if d := denied(err, "revoke "+serial, "revoking a certificate needs the head's credentials: run `rayctl cert revoke` on the head's machine "+
		"(the token gives rayctl a client certificate, and an agent's a node certificate: neither may revoke)"); d != nil {
		return d
	}
	if err != nil {
		return exitf(ExitError, "revoke %s: %v", serial, err)
	}
	fmt.Fprintf(c.App.Writer, "revoked %s (%s) in the cluster at %s\n", serial, name, addr[0])
	return nil
}
