package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDamagedIdentityRefused: an agent directory of the session dir whose identity.json is
// empty or not JSON (what a crash or a full disk leaves) makes `rayctl start` refuse,
// naming the file and saying to restore it or remove the directory; it started a new
// agent (for a head: a new CA, token and empty GCS) without a word, leaving the cluster
// behind. A sound identity of the same role is brought back as before.
func TestDamagedIdentityRefused(t *testing.T) {
	for name, content := range map[string]string{"empty": "", "truncated": `{"agent_id": "ab`, "not JSON": "\x00\x00\x00"} {
		t.Run(name, func(t *testing.T) {
			sess := t.TempDir()
			dir := filepath.Join(sess, agentDirPref+"0123456789abcdef")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			f := filepath.Join(dir, identityFileName)
			if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			id, err := previousAgent(sess, true, "")
			if err == nil || id != "" {
				t.Fatalf("previousAgent with a damaged identity.json: %q, %v; want an error", id, err)
			}
			for _, want := range []string{"damaged", f, "restore", "remove " + dir} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error %q does not say %q", err, want)
				}
			}
			r := run(t, nil, "start", "--head", "--session-dir", sess, "--num-cpus", "1", "--metrics-port", "-1", "--dashboard-port", "-1")
			if r.code == 0 {
				run(t, nil, "stop", "--force", "--session-dir", sess)
				t.Fatalf("rayctl start --head over a damaged identity.json started: %+v", r)
			}
			if !strings.Contains(r.stderr, "damaged") || !strings.Contains(r.stderr, f) {
				t.Errorf("rayctl start --head over a damaged identity.json: %+v, want it to name the file as damaged", r)
			}
		})
	}
	// A sound one of the same role comes back.
	sess := t.TempDir()
	dir := filepath.Join(sess, agentDirPref+"0123456789abcdef")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(filepath.Join(dir, identityFileName), agentIdentity{AgentID: "0123456789abcdef", Head: true}); err != nil {
		t.Fatal(err)
	}
	if id, err := previousAgent(sess, true, ""); err != nil || id != "0123456789abcdef" {
		t.Fatalf("previousAgent with a sound identity: %q, %v", id, err)
	}
	if id, err := previousAgent(sess, false, "127.0.0.1:1"); err != nil || id != "" {
		t.Fatalf("previousAgent of another role: %q, %v; want none", id, err)
	}
}
