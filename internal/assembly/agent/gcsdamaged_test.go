package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDamagedGCSDataSaysWhatToDo: a head started again over GCS data whose write-ahead log
// was overwritten with garbage fails saying the GCS data in its directory cannot be opened
// and what to do (restore it, or remove the agent directory), not only etcd's "walpb: crc
// mismatch".
func TestDamagedGCSDataSaysWhatToDo(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Head: true, SessionDir: dir, Resources: map[string]float64{"CPU": 1}, ObjectStoreBytes: 1 << 28,
		Environ: os.Environ(), Logger: testLogger(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	wals, _ := filepath.Glob(filepath.Join(dir, "gcs", "member", "wal", "*.wal"))
	if len(wals) == 0 {
		t.Fatalf("no write-ahead log under %s", filepath.Join(dir, "gcs"))
	}
	f, err := os.OpenFile(wals[len(wals)-1], os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(strings.Repeat("\xa5", 4000)), 2000); err != nil {
		t.Fatal(err)
	}
	f.Close()
	a, err = Start(ctx, cfg)
	if err == nil {
		_ = a.Stop(ctx)
		t.Fatal("a head over a damaged write-ahead log started")
	}
	for _, want := range []string{"GCS data in " + filepath.Join(dir, "gcs") + " cannot be opened", "restore", "remove " + dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("start over damaged GCS data: %v, want it to say %q", err, want)
		}
	}
}
