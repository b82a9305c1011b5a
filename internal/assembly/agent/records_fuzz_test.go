package agent

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ray-go/ray/internal/base/fuzzing"
	"github.com/ray-go/ray/internal/base/pb"
)

func mustMarshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// recordBound is the allocation bound of decoding one record of n bytes (with its ID).
func recordBound(n int) uint64 { return 64*uint64(n) + 64<<10 }

// checkPathElement fails t unless id names one entry of a directory.
func checkPathElement(t *testing.T, id string) {
	t.Helper()
	const dir = "/session/logs"
	for _, name := range []string{id, "job-" + id + ".log"} {
		if p := filepath.Join(dir, name); filepath.Dir(p) != dir {
			t.Fatalf("accepted the ID %q, which leaves %s: %s", id, dir, p)
		}
	}
}

func submissionSeeds() [][]any {
	const id = "0123456789abcdef"
	good := &pb.Submission{SubmissionId: id, Argv: []string{"/usr/bin/env", "-i", "x"}, WorkingDir: "/tmp", Env: []string{"A=1", "B="}, State: pb.JobInfo_PENDING}
	done := &pb.Submission{SubmissionId: id, Argv: []string{"/bin/true"}, State: pb.JobInfo_SUCCEEDED, JobId: "0a0b0c0d", Pid: 4242,
		LogPath: "/tmp/ray-go/agent-1/logs/job-0123456789abcdef.log", StartUnixMs: 1700000000000, EndUnixMs: 1700000001000, Message: "ok", StopRequested: true}
	rec := mustMarshal(good)
	return [][]any{
		{id, rec},
		{id, mustMarshal(done)},
		{id, mustMarshal(&pb.Submission{SubmissionId: id})}, // no entrypoint
		{id, mustMarshal(&pb.Submission{SubmissionId: id, Argv: []string{"relative/prog"}})},
		{id, mustMarshal(&pb.Submission{SubmissionId: id, Argv: []string{"/bin/true"}, Env: []string{"=x", "NOEQUALS"}})},
		{id, mustMarshal(&pb.Submission{SubmissionId: id, Argv: []string{"/bin/true"}, State: pb.JobInfo_State(99)})},
		{id, mustMarshal(&pb.Submission{SubmissionId: id, Argv: []string{"/bin/true"}, Pid: -1})},
		{"ffffffffffffffff", rec}, // the record of another submission
		{"../../../../tmp/x", mustMarshal(&pb.Submission{SubmissionId: "../../../../tmp/x", Argv: []string{"/bin/true"}})},
		{id, rec[:len(rec)-2]},                           // truncated
		{id, []byte{0x12, 0xff, 0xff, 0xff, 0xff, 0x0f}}, // argv with a 4 GiB length
		{id, []byte{}},
	}
}

func TestFuzzSubmissionCorpus(t *testing.T) {
	fuzzing.Corpus(t, "FuzzSubmission", submissionSeeds())
}

// FuzzSubmission feeds arbitrary submission records (submissions/<id>, written by any
// client of the GCS; the head agent runs what they say) and keys to DecodeSubmission and
// checkCommand. A record must be refused, or be the record of its key's submission, whose
// ID is one file name, in a known state; never panic; allocate in proportion to the
// record; and re-encode to a record that decodes the same. A command checkCommand accepts
// has an absolute program and KEY=VALUE environment entries.
func FuzzSubmission(f *testing.F) {
	_, _ = DecodeSubmission("x", submissionSeeds()[1][1].([]byte)) // protobuf's lazy set-up, outside the bound
	f.Fuzz(func(t *testing.T, id string, rec []byte) {
		var (
			sub *pb.Submission
			err error
		)
		fuzzing.CheckAlloc(t, recordBound(len(rec)+len(id)), "DecodeSubmission", func() { sub, err = DecodeSubmission(id, rec) })
		if err != nil {
			if !strings.HasPrefix(err.Error(), "agent: ") {
				t.Fatalf("error %q does not say where it comes from", err)
			}
			return
		}
		if sub.GetSubmissionId() != id || sub.GetPid() < 0 || sub.GetState().String() == "" ||
			pb.JobInfo_State_name[int32(sub.GetState())] == "" {
			t.Fatalf("accepted %v for submission %q", sub, id)
		}
		checkPathElement(t, id)
		again, err := DecodeSubmission(id, mustMarshal(sub))
		if err != nil || !proto.Equal(again, sub) {
			t.Fatalf("re-encoded submission %v decodes to %v, %v", sub, again, err)
		}
		if checkCommand(sub) != nil {
			return
		}
		argv := sub.GetArgv()
		if len(argv) == 0 || !filepath.IsAbs(argv[0]) {
			t.Fatalf("accepted the command %q", argv)
		}
		for _, kv := range sub.GetEnv() {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				t.Fatalf("accepted the environment entry %q", kv)
			}
		}
	})
}

// TestSubmissionErrors: a submission that cannot be used says why.
func TestSubmissionErrors(t *testing.T) {
	seeds := submissionSeeds()
	for _, c := range []struct {
		seed int
		want string // from DecodeSubmission, or else checkCommand
	}{
		{2, "no entrypoint"},
		{3, `program "relative/prog" is not an absolute path`},
		{4, `environment entry "=x" is not KEY=VALUE`},
		{5, "unknown state 99"},
		{6, "negative pid -1"},
		{7, `names submission "0123456789abcdef"`},
		{8, "contains '/'"},
		{9, "decode submission"},
		{10, "decode submission"},
	} {
		id, rec := seeds[c.seed][0].(string), seeds[c.seed][1].([]byte)
		sub, err := DecodeSubmission(id, rec)
		if err == nil {
			err = checkCommand(sub)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("seed %d: %v, want an error saying %q", c.seed, err, c.want)
		}
	}
}

func jobSeeds() [][]any {
	const id = "0a0b0c0d"
	good := &pb.JobInfo{JobId: id, State: pb.JobInfo_RUNNING, Executable: "/usr/local/bin/driver", Sha256: strings.Repeat("ab", 32),
		Goos: "linux", Goarch: "amd64", DriverNode: "n1", DriverHost: "h", DriverPid: 99, StartUnixMs: 1700000000000,
		SubmissionId: "0123456789abcdef", Entrypoint: "/usr/local/bin/driver -x", Namespace: "ns", Args: []string{"-x"}}
	rec := mustMarshal(good)
	return [][]any{
		{id, rec},
		{id, mustMarshal(&pb.JobInfo{JobId: id, State: pb.JobInfo_FAILED, Message: "driver exited", EndUnixMs: 1})},
		{"..", mustMarshal(&pb.JobInfo{JobId: "..", State: pb.JobInfo_RUNNING})}, // workers/.. is the session directory
		{"", mustMarshal(&pb.JobInfo{State: pb.JobInfo_RUNNING})},
		{"11111111", rec}, // the record of another job
		{id, mustMarshal(&pb.JobInfo{JobId: id, State: pb.JobInfo_State(-3)})},
		{id, mustMarshal(&pb.JobInfo{JobId: id, DriverPid: -5})},
		{id, rec[:len(rec)-1]},
		{id, []byte{0x82, 0x01, 0xff, 0xff, 0xff, 0xff, 0x0f}}, // args with a 4 GiB length
		{id, []byte{}},
	}
}

func TestFuzzJobRecordCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzJobRecord", jobSeeds()) }

// FuzzJobRecord feeds arbitrary job records (jobs/<id>, written by drivers; every agent
// starts worker processes for the RUNNING ones, in workers/<id>/) to DecodeJob. A record
// must be refused, or be its key's job, whose ID is one file name, in a known state; never
// panic; allocate in proportion to the record; and re-encode to a record that decodes the
// same.
func FuzzJobRecord(f *testing.F) {
	_, _ = DecodeJob("x", jobSeeds()[0][1].([]byte))
	f.Fuzz(func(t *testing.T, id string, rec []byte) {
		var (
			info *pb.JobInfo
			err  error
		)
		fuzzing.CheckAlloc(t, recordBound(len(rec)+len(id)), "DecodeJob", func() { info, err = DecodeJob(id, rec) })
		if err != nil {
			return
		}
		if info.GetJobId() != id || info.GetDriverPid() < 0 || pb.JobInfo_State_name[int32(info.GetState())] == "" {
			t.Fatalf("accepted %v for job %q", info, id)
		}
		checkPathElement(t, id)
		again, err := DecodeJob(id, mustMarshal(info))
		if err != nil || !proto.Equal(again, info) {
			t.Fatalf("re-encoded job %v decodes to %v, %v", info, again, err)
		}
	})
}

func TestJobRecordErrors(t *testing.T) {
	seeds := jobSeeds()
	for i, want := range map[int]string{2: `job ID ".." is not a file name`, 3: "job ID is empty", 4: `names job "0a0b0c0d"`,
		5: "unknown state -3", 6: "negative driver pid", 7: "decode job", 8: "decode job"} {
		if _, err := DecodeJob(seeds[i][0].(string), seeds[i][1].([]byte)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("seed %d: %v, want an error saying %q", i, err, want)
		}
	}
	// A relative executable path is never run from where it points: the agent fetches the
	// binary by its hash instead.
	if (hashCache{}).local(&pb.JobInfo{Goos: "linux", Goarch: "amd64", Executable: "bin/driver", Sha256: strings.Repeat("0", 64)}) {
		t.Error("a relative executable path counted as present")
	}
	if why := platformProblem(&pb.JobInfo{Goos: runtime.GOOS, Goarch: runtime.GOARCH, Sha256: "../x"}); !strings.Contains(why, "not a sha256") {
		t.Errorf("a job whose hash is no sha256: %q", why)
	}
}

func agentSeeds() [][]any {
	const id = "00112233aabbccdd"
	good := &pb.AgentInfo{AgentId: id, Hostname: "h1", Pid: 7, Total: []*pb.ResourceQty{{Name: "CPU", Amount: 40000}}, ObjectStoreBytes: 1 << 30,
		SessionDir: "/tmp/ray-go/agent-" + id, Goos: "linux", Goarch: "amd64", Head: true, GcsEndpoints: []string{"127.0.0.1:6379"}, StartedUnixMs: 1}
	rec := mustMarshal(good)
	return [][]any{
		{id, rec},
		{id, mustMarshal(&pb.AgentInfo{AgentId: id})},
		{"x/y", mustMarshal(&pb.AgentInfo{AgentId: "x/y"})},
		{"other", rec},
		{id, mustMarshal(&pb.AgentInfo{AgentId: id, Pid: -1})},
		{id, mustMarshal(&pb.AgentInfo{AgentId: id, ObjectStoreBytes: -1})},
		{id, rec[:5]},
		{id, []byte{}},
	}
}

func TestFuzzAgentRecordCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzAgentRecord", agentSeeds()) }

// FuzzAgentRecord feeds arbitrary agent records (agents/<id>, written by every agent;
// the head agent, rayctl job submit and rayctl status read them) to DecodeAgentInfo. A
// record must be refused or be its key's agent with a non-negative pid and store size;
// never panic; allocate in proportion to the record; and round-trip.
func FuzzAgentRecord(f *testing.F) {
	_, _ = DecodeAgentInfo("x", agentSeeds()[0][1].([]byte))
	f.Fuzz(func(t *testing.T, id string, rec []byte) {
		var (
			info *pb.AgentInfo
			err  error
		)
		fuzzing.CheckAlloc(t, recordBound(len(rec)+len(id)), "DecodeAgentInfo", func() { info, err = DecodeAgentInfo(id, rec) })
		if err != nil {
			return
		}
		if info.GetAgentId() != id || info.GetPid() < 0 || info.GetObjectStoreBytes() < 0 {
			t.Fatalf("accepted %v for agent %q", info, id)
		}
		checkPathElement(t, id)
		again, err := DecodeAgentInfo(id, mustMarshal(info))
		if err != nil || !proto.Equal(again, info) {
			t.Fatalf("re-encoded agent %v decodes to %v, %v", info, again, err)
		}
	})
}

func jobWorkerSeeds() [][]any {
	rec := mustMarshal(&pb.JobWorker{JobId: "j1", AgentId: "a1", State: pb.JobWorker_RUNNING, Pid: 10, NodeId: "n1", Message: "m", LogPath: "/l"})
	return [][]any{
		{rec},
		{mustMarshal(&pb.JobWorker{JobId: "j1", AgentId: "a1", State: pb.JobWorker_UNSUPPORTED, Message: "built for plan9/arm"})},
		{mustMarshal(&pb.JobWorker{JobId: "j2", AgentId: "a1"})},
		{mustMarshal(&pb.JobWorker{JobId: "j1", AgentId: "a1", State: pb.JobWorker_State(7)})},
		{mustMarshal(&pb.JobWorker{JobId: "j1", AgentId: "a1", Pid: -2})},
		{rec[:3]},
		{[]byte{}},
	}
}

func TestFuzzJobWorkerRecordCorpus(t *testing.T) {
	fuzzing.Corpus(t, "FuzzJobWorkerRecord", jobWorkerSeeds())
}

// FuzzJobWorkerRecord feeds arbitrary worker records (jobworkers/j1/a1, written by the
// agent and by the worker process it started) to decodeJobWorker: refused, or the record of
// that worker in a known state with a non-negative pid; never a panic; bounded
// allocation; round-trip.
func FuzzJobWorkerRecord(f *testing.F) {
	_, _ = decodeJobWorker("j1", "a1", jobWorkerSeeds()[0][0].([]byte))
	f.Fuzz(func(t *testing.T, rec []byte) {
		var (
			w   *pb.JobWorker
			err error
		)
		fuzzing.CheckAlloc(t, recordBound(len(rec)), "decodeJobWorker", func() { w, err = decodeJobWorker("j1", "a1", rec) })
		if err != nil {
			return
		}
		if w.GetJobId() != "j1" || w.GetAgentId() != "a1" || w.GetPid() < 0 || pb.JobWorker_State_name[int32(w.GetState())] == "" {
			t.Fatalf("accepted %v", w)
		}
		again, err := decodeJobWorker("j1", "a1", mustMarshal(w))
		if err != nil || !proto.Equal(again, w) {
			t.Fatalf("re-encoded worker %v decodes to %v, %v", w, again, err)
		}
	})
}

func logEndSeeds() [][]any {
	good, _ := json.Marshal(LogEnd{Bytes: 1234, Truncated: true, LogPath: "/tmp/ray-go/agent-1/logs/job-1.log", Host: "h1"})
	return [][]any{
		{good},
		{[]byte(`{"host":"h"}`)},
		{[]byte(`{"bytes":-1}`)},
		{[]byte(`{"bytes":1e400}`)},
		{[]byte(`null`)},
		{[]byte(`[]`)},
		{good[:len(good)-1]},
		{[]byte{}},
	}
}

func TestFuzzLogEndCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzLogEnd", logEndSeeds()) }

// FuzzLogEnd feeds arbitrary end markers (joblogs/<id>/end, written by the head agent;
// rayctl job logs reads them) to decodeLogEnd: refused, or a marker with a non-negative
// byte count that re-encodes to the same marker; never a panic; bounded allocation.
func FuzzLogEnd(f *testing.F) {
	f.Fuzz(func(t *testing.T, rec []byte) {
		var (
			le  *LogEnd
			err error
		)
		fuzzing.CheckAlloc(t, recordBound(len(rec)), "decodeLogEnd", func() { le, err = decodeLogEnd(rec) })
		if err != nil {
			return
		}
		if le.Bytes < 0 {
			t.Fatalf("accepted %+v", le)
		}
		b, err := json.Marshal(le)
		if err != nil {
			t.Fatal(err)
		}
		again, err := decodeLogEnd(b)
		if err != nil || !reflect.DeepEqual(again, le) {
			t.Fatalf("re-encoded marker %+v decodes to %+v, %v", le, again, err)
		}
	})
}

func TestLogEndErrors(t *testing.T) {
	for _, c := range []struct{ rec, want string }{
		{`{"bytes":-1}`, "-1 bytes"}, {`null`, "not a JSON object"}, {`[]`, "not a JSON object"}, {`{"bytes":"x"}`, "decode"},
	} {
		if _, err := decodeLogEnd([]byte(c.rec)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.rec, err, c.want)
		}
	}
}
