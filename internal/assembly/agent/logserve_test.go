package agent

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ray-go/ray/internal/base/fuzzing"
	"github.com/ray-go/ray/internal/base/gcs/memstore"
)

func TestTailStart(t *testing.T) {
	for _, c := range []struct {
		in        string
		n         int
		whole     bool
		want      string
		truncated bool
	}{
		{"a\nb\nc\n", 2, true, "b\nc\n", false},
		{"a\nb\nc", 2, true, "b\nc", false},
		{"a\nb\nc\n", 5, true, "a\nb\nc\n", false},
		{"a\nb\nc\n", 1, true, "c\n", false},
		{"", 3, true, "", false},
		{"rt of a\nb\nc\n", 5, false, "b\nc\n", true}, // a cut first line is dropped
		{"no newline at all", 2, false, "no newline at all", true},
		{"x\n\n\n", 2, true, "\n\n", false}, // empty lines count
	} {
		start, tr := TailStart([]byte(c.in), c.n, c.whole)
		if got := c.in[start:]; got != c.want || tr != c.truncated {
			t.Errorf("TailStart(%q, %d, %v) = %q, %v; want %q, %v", c.in, c.n, c.whole, got, tr, c.want, c.truncated)
		}
	}
}

func TestReadLogFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w.log")
	var content bytes.Buffer
	for i := range 100 {
		content.WriteString(strings.Repeat("x", i%7) + "line\n")
	}
	if err := os.WriteFile(path, content.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	read := func(req LogRequest) *LogReply {
		t.Helper()
		rep := &LogReply{Path: path}
		if err := readLogFile(rep, &req); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	all := read(LogRequest{})
	if !all.Found || all.Size != int64(content.Len()) || all.Offset != 0 || !bytes.Equal(all.Data, content.Bytes()) {
		t.Fatalf("whole file: %+v", all)
	}
	part := read(LogRequest{Offset: 10, Max: 20})
	if part.Offset != 10 || !bytes.Equal(part.Data, content.Bytes()[10:30]) {
		t.Fatalf("offset 10, max 20: %+v", part)
	}
	past := read(LogRequest{Offset: 1 << 40})
	if past.Offset != all.Size || len(past.Data) != 0 {
		t.Fatalf("offset past the end: %+v", past)
	}
	tail := read(LogRequest{Tail: 3})
	lines := strings.Split(content.String(), "\n")
	if want := strings.Join(lines[len(lines)-4:], "\n"); string(tail.Data) != want || tail.Truncated ||
		tail.Offset+int64(len(tail.Data)) != all.Size {
		t.Fatalf("tail 3: %q (offset %d, truncated %v), want %q", tail.Data, tail.Offset, tail.Truncated, want)
	}
	short := read(LogRequest{Tail: 1000, Max: 50})
	if !short.Truncated || len(short.Data) > 50 || short.Offset+int64(len(short.Data)) != all.Size ||
		!strings.HasSuffix(content.String(), string(short.Data)) || content.Bytes()[short.Offset-1] != '\n' {
		t.Fatalf("tail 1000 in 50 bytes: %q (offset %d, truncated %v)", short.Data, short.Offset, short.Truncated)
	}

	// No file: not found, no error. A symbolic link is refused.
	rep := &LogReply{Path: filepath.Join(dir, "none.log")}
	if err := readLogFile(rep, &LogRequest{}); err != nil || rep.Found {
		t.Fatalf("missing file: %+v, %v", rep, err)
	}
	link := filepath.Join(dir, "link.log")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	rep = &LogReply{Path: link}
	if err := readLogFile(rep, &LogRequest{}); err == nil || !strings.Contains(err.Error(), "not a regular file") || len(rep.Data) != 0 {
		t.Fatalf("symlink: %+v, %v", rep, err)
	}
}

// An agent answers the requests addressed to it through the GCS, for its session's
// worker logs only: a job ID that is not a plain name is refused, and a request for
// another agent gets no answer.
func TestServeWorkerLogs(t *testing.T) {
	a := startAgent(t, Config{Head: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const job = "0a0b0c0d"
	if err := os.WriteFile(WorkerLogPath(a.cfg.SessionDir, job), []byte("one\ntwo\nthree\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := ReadWorkerLog(ctx, a.Store(), LogRequest{Agent: a.ID(), Job: job, Tail: 2}, 10*time.Second)
	if err != nil || rep.Err != "" || !rep.Found || string(rep.Data) != "two\nthree\n" || rep.Size != 14 || rep.Host == "" {
		t.Fatalf("tail 2: %+v (%q), %v", rep, rep.Data, err)
	}
	rep, err = ReadWorkerLog(ctx, a.Store(), LogRequest{Agent: a.ID(), Job: job, Offset: 4}, 10*time.Second)
	if err != nil || string(rep.Data) != "two\nthree\n" || rep.Offset != 4 {
		t.Fatalf("offset 4: %+v, %v", rep, err)
	}
	rep, err = ReadWorkerLog(ctx, a.Store(), LogRequest{Agent: a.ID(), Job: "ffffffff"}, 10*time.Second)
	if err != nil || rep.Found || rep.Err != "" {
		t.Fatalf("a job without a log: %+v, %v", rep, err)
	}
	for _, bad := range []string{"..", "../" + job, "a/b", ""} {
		rep, err = ReadWorkerLog(ctx, a.Store(), LogRequest{Agent: a.ID(), Job: bad}, 10*time.Second)
		if err != nil || rep.Err == "" || rep.Found || len(rep.Data) != 0 {
			t.Fatalf("job %q: %+v, %v", bad, rep, err)
		}
	}
	if _, err := ReadWorkerLog(ctx, a.Store(), LogRequest{Agent: "nobody", Job: job}, 300*time.Millisecond); !errors.Is(err, ErrNoLogAnswer) {
		t.Fatalf("a request for another agent: %v, want ErrNoLogAnswer", err)
	}
	// The lease went: no request or answer is left behind.
	for _, prefix := range []string{LogRequestsPrefix, LogRepliesPrefix} {
		if kvs, _, err := a.Store().List(ctx, prefix); err != nil || len(kvs) != 0 {
			t.Errorf("%s left: %d keys, %v", prefix, len(kvs), err)
		}
	}
}

func TestReadWorkerLogTimesOut(t *testing.T) {
	s := memstore.New(memstore.Options{})
	defer s.Close()
	_, err := ReadWorkerLog(context.Background(), s, LogRequest{Agent: "x", Job: "y"}, 50*time.Millisecond)
	if !errors.Is(err, ErrNoLogAnswer) {
		t.Fatalf("%v, want ErrNoLogAnswer", err)
	}
}

func logReplySeeds() [][]any {
	return [][]any{
		{EncodeLogReply(&LogReply{Found: true, Path: "/s/logs/worker-a.log", Host: "h", Size: 10, Offset: 4, Data: []byte("abcdef")})},
		{EncodeLogReply(&LogReply{Err: "agent: the job ID \"..\" is not a file name"})},
		{EncodeLogReply(&LogReply{Found: true, Size: 3, Truncated: true})},
		{[]byte{0, 0, 0, 2, '{', '}'}},
		{[]byte{0, 0, 0, 9, '{', '}'}},
		{[]byte{0, 0, 0, 2, '[', ']'}},
		{[]byte(`{"size":-1}`)},
	}
}

func TestFuzzLogReplyCorpus(t *testing.T) { fuzzing.Corpus(t, "FuzzLogReply", logReplySeeds()) }

func FuzzLogReply(f *testing.F) {
	_, _ = DecodeLogReply(logReplySeeds()[0][0].([]byte))
	f.Fuzz(func(t *testing.T, b []byte) {
		var (
			r   *LogReply
			err error
		)
		fuzzing.CheckAlloc(t, 16*uint64(len(b))+64<<10, "DecodeLogReply", func() { r, err = DecodeLogReply(b) })
		if err != nil {
			if !strings.HasPrefix(err.Error(), "agent: ") {
				t.Fatalf("error %q does not say where it comes from", err)
			}
			return
		}
		if r.Size < 0 || r.Offset < 0 || len(r.Data) > LogReadMax {
			t.Fatalf("accepted %+v", r)
		}
		again, err := DecodeLogReply(EncodeLogReply(r))
		if err != nil || again.Size != r.Size || again.Offset != r.Offset || !bytes.Equal(again.Data, r.Data) ||
			again.Err != r.Err || again.Path != r.Path || again.Found != r.Found || again.Truncated != r.Truncated {
			t.Fatalf("re-encoded %+v decodes to %+v, %v", r, again, err)
		}
	})
}
