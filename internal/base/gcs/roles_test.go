package gcs

import (
	"testing"

	"github.com/ray-go/ray/internal/base/identity"
)

// The GCS role table of package identity names this schema's prefixes (it ranks below
// this package and spells them itself): every prefix it protects is one of the schema.
func TestRoleTablePrefixes(t *testing.T) {
	schema := map[string]bool{CertsPrefix: true, RevokedPrefix: true, SubmissionsPrefix: true, JobsPrefix: true,
		StateRequestsPrefix: true, "joblogs/": true /* internal/assembly/agent.LogsPrefix */, "logreq/": true /* agent.LogRequestsPrefix */, BlobsPrefix: true}
	got := identity.GCSProtectedPrefixes()
	if len(got) != len(schema) {
		t.Errorf("the table protects %v; this test knows %d prefixes", got, len(schema))
	}
	for _, p := range got {
		if !schema[p] {
			t.Errorf("the table names %q, which is no prefix of the schema", p)
		}
	}
	// What matters most, spelled out.
	for _, c := range []struct {
		role, key string
		want      identity.Access
	}{
		{identity.GCSRoleNode, RevokedKey("1f"), identity.ReadOnly},
		{identity.GCSRoleNode, CertKey("1f"), identity.ReadOnly},
		{identity.GCSRoleNode, SubmissionKey("s"), identity.ReadOnly},
		{identity.GCSRoleNode, JobKey("j"), identity.ReadOnly},
		{identity.GCSRoleDriver, JobKey("j"), identity.ReadWrite},
		{identity.GCSRoleDriver, SubmissionKey("s"), identity.ReadOnly},
		{identity.GCSRoleClient, SubmissionKey("s"), identity.ReadWrite},
		{identity.GCSRoleClient, RevokedKey("1f"), identity.ReadOnly},
		{identity.GCSRoleNode, NodeKey("n"), identity.ReadWrite},
		{identity.GCSRoleNode, StateRequestKey("q"), identity.ReadWrite},
		{identity.GCSRoleClient, "logreq/q", identity.ReadWrite},
		{identity.GCSRoleClient, BlobsPrefix + "m/x", identity.ReadWrite},
	} {
		if got := identity.GCSAccess(c.role, c.key); got != c.want {
			t.Errorf("%s on %s: %v, want %v", c.role, c.key, got, c.want)
		}
	}
}
