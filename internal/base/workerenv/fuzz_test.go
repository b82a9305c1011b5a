package workerenv

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ray-go/ray/internal/base/fuzzing"
)

func envSeeds() [][]any {
	return [][]any{
		{"10.0.0.1:6379,10.0.0.2:6379", "0a0b0c0d", `{"CPU":2,"accel":0.5}`, "1073741824", true},
		{"h:1", "j", "", "", false},
		{"h:1", "j", `{"CPU":-1}`, "1", true},
		{"h:1", "j", `{"":1}`, "1", true},
		{"h:1", "j", `{"CPU":1e400}`, "1", true},
		{"h:1", "j", `[1,2]`, "1", true},
		{"h:1", "j", `null`, "-5", true},
		{"h:1", "j", `{}`, "99999999999999999999", true},
		{" , ", "j", "", "", true},
		{"h:1", "", "", "", true},
	}
}

func TestFuzzFromEnvCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzFromEnv", envSeeds()) }

// environ makes the getenv of an environment list.
func environ(env []string) func(string) string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

// FuzzFromEnv feeds arbitrary worker environments (set by the agent that starts the
// process) to FromEnv. It must fail, or give a worker with an address, a job, named
// non-negative resources and a non-negative store size; never panic; allocate in
// proportion to the environment; and what Environ writes of the worker must read back the
// same.
func FuzzFromEnv(f *testing.F) {
	f.Fuzz(func(t *testing.T, address, job, resources, storeBytes string, insecure bool) {
		env := map[string]string{Mode: ModeWorker, Address: address, Job: job, Resources: resources, ObjectStoreBytes: storeBytes}
		if insecure {
			env[Insecure] = "1"
		} else {
			env[GCSCA], env[GCSCert], env[GCSKey] = "/tls/ca.crt", "/tls/node.crt", "/tls/node.key"
		}
		var (
			w   Worker
			err error
		)
		n := uint64(len(address) + len(job) + len(resources) + len(storeBytes))
		fuzzing.CheckAlloc(t, 64*n+64<<10, "FromEnv", func() { w, _, err = FromEnv(func(k string) string { return env[k] }) })
		if err != nil {
			return
		}
		if len(w.Address) == 0 || w.Job == "" || w.ObjectStoreBytes < 0 {
			t.Fatalf("accepted %+v", w)
		}
		for name, v := range w.Resources {
			if name == "" || v < 0 {
				t.Fatalf("accepted the resource %q=%v", name, v)
			}
		}
		again, ok, err := FromEnv(environ(w.Environ()))
		if !ok || err != nil || !reflect.DeepEqual(again, w) {
			t.Fatalf("%+v reads back as %+v, %v", w, again, err)
		}
	})
}

func TestFromEnvErrors(t *testing.T) {
	seeds := envSeeds()
	for i, want := range map[int]string{2: `resource "CPU" has the amount -1`, 3: `resource "" has`, 4: "RAY_GO_RESOURCES", 5: "RAY_GO_RESOURCES",
		6: "want a number of bytes", 7: "want a number of bytes", 8: "needs RAY_ADDRESS", 9: "needs RAY_ADDRESS"} {
		s := seeds[i]
		env := map[string]string{Mode: ModeWorker, Address: s[0].(string), Job: s[1].(string), Resources: s[2].(string), ObjectStoreBytes: s[3].(string), Insecure: "1"}
		if _, _, err := FromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("seed %d: %v, want an error saying %q", i, err, want)
		}
	}
}
