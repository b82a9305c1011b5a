package cli

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/ray-go/ray/internal/base/fuzzing"
	"github.com/ray-go/ray/internal/base/workerenv"
)

func mustJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

const fuzzAgentID = "00112233aabbccdd"

func agentFileSeeds() [][]any {
	dir := "/tmp/ray-go/agent-" + fuzzAgentID
	secure := agentFile{AgentID: fuzzAgentID, Pid: 4242, Address: "10.0.0.1:6379", Head: true, Dir: dir, StartedUnixMs: 1700000000000,
		GCSCA: dir + "/tls/ca.crt", GCSCert: dir + "/tls/node.crt", GCSKey: dir + "/tls/node.key", TokenFile: dir + "/ca/token", JoinAddress: "10.0.0.1:6380"}
	return [][]any{
		{mustJSON(secure)},
		{mustJSON(agentFile{AgentID: fuzzAgentID, Pid: 1, Address: "h1:1,h2:2", Dir: dir, Insecure: true})},
		{mustJSON(agentFile{AgentID: "another", Pid: 1, Address: "h:1", Insecure: true})},
		{mustJSON(agentFile{AgentID: fuzzAgentID, Pid: -1, Address: "h:1", Insecure: true})},
		{mustJSON(agentFile{AgentID: fuzzAgentID, Pid: 1 << 40, Address: "h:1", Insecure: true})},
		{mustJSON(agentFile{AgentID: fuzzAgentID, Pid: 1, Address: " , ", Insecure: true})},
		{mustJSON(agentFile{AgentID: fuzzAgentID, Pid: 1, Address: "h:1", GCSCA: "ca.crt", GCSCert: "/c", GCSKey: "/k"})},
		{mustJSON(agentFile{AgentID: fuzzAgentID, Pid: 1, Address: "h:1", GCSKey: "/k"})},
		{mustJSON(agentFile{AgentID: fuzzAgentID, Pid: 1, Address: "h:1", Insecure: true, JoinAddress: "nowhere"})},
		{[]byte(`null`)},
		{[]byte(`{"agent_id":"` + fuzzAgentID + `","pid":1e3,"address":"h:1"}`)},
		{[]byte(`{"agent_id":` + strings.Repeat("[", 100))},
		{[]byte{}},
	}
}

func TestFuzzAgentFileCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzAgentFile", agentFileSeeds()) }

// FuzzAgentFile feeds arbitrary agent.json files (in the shared session directory; rayctl
// connects to the address they give with the credential files they name, and prints a
// head's token file) to decodeAgentFile. A file must be refused, or name its agent, a pid
// rayctl may check, a cluster address, absolute credential paths (all three or none);
// never panic; allocate in proportion to the file; and round-trip.
func FuzzAgentFile(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		var (
			af  *agentFile
			err error
		)
		fuzzing.CheckAlloc(t, 64*uint64(len(b))+64<<10, "decodeAgentFile", func() { af, err = decodeAgentFile(fuzzAgentID, b) })
		if err != nil {
			return
		}
		if af.AgentID != fuzzAgentID || af.Pid <= 0 || af.Pid > maxPid || len(workerenv.SplitAddress(af.Address)) == 0 {
			t.Fatalf("accepted %+v", af)
		}
		for _, p := range []string{af.GCSCA, af.GCSCert, af.GCSKey, af.TokenFile} {
			if p != "" && !filepath.IsAbs(p) {
				t.Fatalf("accepted the relative path %q in %+v", p, af)
			}
		}
		if (af.GCSCA == "") != (af.GCSKey == "") || (af.GCSCert == "") != (af.GCSKey == "") {
			t.Fatalf("accepted some credential files but not all: %+v", af)
		}
		again, err := decodeAgentFile(fuzzAgentID, mustJSON(af))
		if err != nil || !reflect.DeepEqual(again, af) {
			t.Fatalf("re-encoded %+v decodes to %+v, %v", af, again, err)
		}
	})
}

func TestAgentFileErrors(t *testing.T) {
	seeds := agentFileSeeds()
	for i, want := range map[int]string{2: `names agent "another"`, 3: "pid -1", 4: "pid 1099511627776", 5: "no cluster address",
		6: "relative path", 7: "but not all", 8: `join address "nowhere"`, 9: "not a JSON object", 10: "agent.json", 11: "agent.json", 12: "not a JSON object"} {
		if _, err := decodeAgentFile(fuzzAgentID, seeds[i][0].([]byte)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("seed %d: %v, want an error saying %q", i, err, want)
		}
	}
}

func agentErrorSeeds() [][]any {
	return [][]any{
		{mustJSON(agentError{Message: "the GCS port 6379 is in use", Code: ExitPortInUse})},
		{mustJSON(agentError{Message: "x", Code: 0})},
		{mustJSON(agentError{Message: "x", Code: -9})},
		{mustJSON(agentError{Message: "x", Code: 256})},
		{mustJSON(agentError{Message: "  ", Code: 1})},
		{[]byte(`"just a string"`)},
		{[]byte(`{"message":"x","code":1.5}`)},
		{[]byte{}},
	}
}

func TestFuzzAgentErrorCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzAgentError", agentErrorSeeds()) }

// FuzzAgentError feeds arbitrary agent.err files (rayctl start exits with the code one
// gives and prints its message) to decodeAgentError: refused, or a message and an exit
// code from 1 to 125; never a panic; bounded allocation; round-trip.
func FuzzAgentError(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		var (
			ae  *agentError
			err error
		)
		fuzzing.CheckAlloc(t, 64*uint64(len(b))+64<<10, "decodeAgentError", func() { ae, err = decodeAgentError(b) })
		if err != nil {
			return
		}
		if ae.Code < 1 || ae.Code > 125 || strings.TrimSpace(ae.Message) == "" {
			t.Fatalf("accepted %+v", ae)
		}
		again, err := decodeAgentError(mustJSON(ae))
		if err != nil || *again != *ae {
			t.Fatalf("re-encoded %+v decodes to %+v, %v", ae, again, err)
		}
	})
}

func pidSeeds() [][]any {
	return [][]any{
		{[]byte("4242\n")},
		{[]byte("1")},
		{[]byte(" 77 \n\n")},
		{[]byte("0\n")},
		{[]byte("-1\n")},
		{[]byte("4194305\n")},
		{[]byte("99999999999999999999999\n")},
		{[]byte("+12")},
		{[]byte("12abc")},
		{[]byte{}},
	}
}

func TestFuzzPidFileCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzPidFile", pidSeeds()) }

// FuzzPidFile feeds arbitrary agent.pid files (rayctl stop signals the pid one gives, once
// /proc says it is a rayctl agent) to parsePidFile: refused, or a pid from 1 to maxPid that
// reads back from its decimal form; never a panic.
func FuzzPidFile(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		pid, err := parsePidFile(b)
		if err != nil {
			if pid != 0 {
				t.Fatalf("refused %q but returned the pid %d", b, pid)
			}
			return
		}
		if pid <= 0 || pid > maxPid {
			t.Fatalf("accepted the pid %d from %q", pid, b)
		}
		if again, err := parsePidFile([]byte(strconv.Itoa(pid) + "\n")); err != nil || again != pid {
			t.Fatalf("pid %d reads back as %d, %v", pid, again, err)
		}
	})
}

func TestPidFileErrors(t *testing.T) {
	for _, s := range []string{"0", "-1", "4194305", "99999999999999999999999", "12abc", ""} {
		if _, err := parsePidFile([]byte(s)); err == nil || !strings.Contains(err.Error(), "not a pid between 1 and 4194304") {
			t.Errorf("%q: %v", s, err)
		}
	}
}
