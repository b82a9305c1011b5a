package agent

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDamagedGCSDataSaysWhatToDo: a head started again over GCS data whose write-ahead log
// was overwritten with garbage, or removed, fails saying its GCS data in that directory
// cannot be used and what to do (restore it, or remove the agent directory), not only
// etcd's "walpb: crc mismatch" or "etcdserver: request timed out".
func TestDamagedGCSDataSaysWhatToDo(t *testing.T) {
	for name, damage := range map[string]func(t *testing.T, gcsDir string){
		"overwritten": func(t *testing.T, gcsDir string) {
			wals, _ := filepath.Glob(filepath.Join(gcsDir, "member", "wal", "*.wal"))
			if len(wals) == 0 {
				t.Fatalf("no write-ahead log under %s", gcsDir)
			}
			b, err := os.ReadFile(wals[0])
			if err != nil {
				t.Fatal(err)
			}
			end := len(bytes.TrimRight(b, "\x00")) // the records; the rest is preallocated
			if end < 256 {
				t.Fatalf("the write-ahead log holds %d bytes of records", end)
			}
			for i := end / 2; i < end; i++ {
				b[i] = 0xa5
			}
			if err := os.WriteFile(wals[0], b, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"removed": func(t *testing.T, gcsDir string) {
			if err := os.RemoveAll(filepath.Join(gcsDir, "member", "wal")); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := Config{Head: true, SessionDir: dir, Resources: map[string]float64{"CPU": 1}, ObjectStoreBytes: 1 << 28,
				Environ: os.Environ(), Logger: testLogger(t)}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			a, err := Start(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			gcsDir := filepath.Join(dir, "gcs")
			damage(t, gcsDir)
			a, err = Start(ctx, cfg)
			if err == nil {
				_ = a.Stop(ctx)
				t.Fatal("a head over damaged GCS data started")
			}
			for _, want := range []string{gcsDir, "restore that directory", "remove " + dir} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("start over damaged GCS data: %v, want it to say %q", err, want)
				}
			}
		})
	}
}
