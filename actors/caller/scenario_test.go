package caller

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output in testdata/*.txt with the actual output")

// TestScenarios runs the scripts in testdata/*.txt. The format is that of
// actors/lifecycle's scenarios (a hand-rolled cousin of etcd-io/raft's datadriven tests):
//
//	# a comment; comments and blank lines between blocks are kept by -rewrite
//	Command key=value key="quoted value" flag
//	----
//	expected output, up to the next blank line or the end of the file
//
// Each command is one operation on the script's current Caller[string], whose calls are
// named by strings, except New, which starts a fresh one (a script may hold several).
// Times are durations after an arbitrary epoch (at=6s). The commands and their keys:
//
//	New [at-most-once] [retries=N] [resend-after=DURATION] [max-resend=N]
//	Add call=NAME
//	Send seq=N [at=DURATION]                        (at: 0s if not given)
//	Finish seq=N
//	Checkpoint
//	Take
//	ResendStale at=DURATION
//	Changed inc=N [placed] [at-most-once] [retries=N]
//	Bounce seqs=N,N,...
//	Die [msg=TEXT]
//
// A bare key means key=true. The output is the operation's answer on one line, then the
// Caller's state (Caller.String): seq, low, the incarnation, the options of an
// at-most-once actor, the unfinished calls (sent@TIME and its retries once sent) and the
// outbox. Take answers the entries with the Acked, First and Incarnation they are sent
// with. Every operation is also checked against the contract of checkStep and
// checkState, whatever the script expects.
//
// go test ./actors/caller -run TestScenarios -rewrite regenerates the expected output;
// review the diff before committing it.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenarios in testdata")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runScript(t, f) })
	}
}

type block struct {
	prefix   []string // comments and blank lines before the command
	line     int      // of the command
	cmd      string
	expected []string
}

func parseScript(t *testing.T, path string) (blocks []block, trailer []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var prefix []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			prefix = append(prefix, l)
			continue
		}
		b := block{prefix: prefix, line: i + 1, cmd: strings.TrimSpace(l)}
		prefix = nil
		if i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("%s:%d: want ---- after the command", path, i+1)
		}
		for i += 2; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			b.expected = append(b.expected, lines[i])
		}
		if i < len(lines) {
			i-- // leave the blank line to the next block's prefix
		}
		blocks = append(blocks, b)
	}
	return blocks, prefix
}

func runScript(t *testing.T, path string) {
	blocks, trailer := parseScript(t, path)
	var (
		c   *Caller[string]
		out strings.Builder
	)
	for _, b := range blocks {
		for _, p := range b.prefix {
			out.WriteString(p + "\n")
		}
		where := fmt.Sprintf("%s:%d", path, b.line)
		name, args, err := parseCommand(b.cmd)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		var got []string
		if name == "New" {
			cfg, err := configFromArgs(args)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			c = New[string](cfg)
			if err := checkState(c); err != nil {
				t.Errorf("%s: invariant: %v", where, err)
			}
			got = []string{c.String()}
		} else {
			if c == nil {
				t.Fatalf("%s: %s before New", where, name)
			}
			o, err := opFromArgs(name, args)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			res, err := apply(c, o)
			if err != nil {
				t.Errorf("%s: invariant: %v", where, err)
			}
			got = []string{res, c.String()}
		}
		if !*rewrite && !reflect.DeepEqual(got, b.expected) {
			t.Errorf("%s: %s\n got:\n\t%s\nwant:\n\t%s", where, b.cmd,
				strings.Join(got, "\n\t"), strings.Join(b.expected, "\n\t"))
		}
		out.WriteString(b.cmd + "\n----\n")
		for _, l := range got {
			out.WriteString(l + "\n")
		}
	}
	for _, p := range trailer {
		out.WriteString(p + "\n")
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// parseCommand splits `Name k=v k="v w" flag` into the name and its arguments.
func parseCommand(line string) (string, map[string]string, error) {
	var toks []string
	for i := 0; i < len(line); {
		if line[i] == ' ' || line[i] == '\t' {
			i++
			continue
		}
		j := i
		for j < len(line) && line[j] != ' ' && line[j] != '\t' {
			if line[j] == '"' { // a quoted value runs to its closing quote
				k := j + 1
				for k < len(line) && line[k] != '"' {
					if line[k] == '\\' {
						k++
					}
					k++
				}
				if k >= len(line) {
					return "", nil, fmt.Errorf("unterminated quote in %q", line)
				}
				j = k
			}
			j++
		}
		toks = append(toks, line[i:j])
		i = j
	}
	if len(toks) == 0 {
		return "", nil, fmt.Errorf("empty command")
	}
	args := map[string]string{}
	for _, tok := range toks[1:] {
		k, v, ok := strings.Cut(tok, "=")
		if !ok {
			v = "true"
		} else if strings.HasPrefix(v, `"`) {
			uv, err := strconv.Unquote(v)
			if err != nil {
				return "", nil, fmt.Errorf("bad quoted value %s: %v", v, err)
			}
			v = uv
		}
		if _, dup := args[k]; dup {
			return "", nil, fmt.Errorf("key %q given twice", k)
		}
		args[k] = v
	}
	return toks[0], args, nil
}

// argReader takes typed values out of a command's arguments and reports unknown keys.
type argReader struct {
	args map[string]string
	err  error
}

func (r *argReader) fail(k, v string, err error) {
	if r.err == nil {
		r.err = fmt.Errorf("%s=%q: %v", k, v, err)
	}
}

func (r *argReader) str(k string, required bool) string {
	v, ok := r.args[k]
	if !ok && required && r.err == nil {
		r.err = fmt.Errorf("missing %s=", k)
	}
	delete(r.args, k)
	return v
}

func (r *argReader) uint(k string, required bool) uint64 {
	v := r.str(k, required)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		r.fail(k, v, err)
	}
	return n
}

func (r *argReader) int(k string) int {
	v := r.str(k, false)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		r.fail(k, v, err)
	}
	return n
}

func (r *argReader) duration(k string, required bool) time.Duration {
	v := r.str(k, required)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		r.fail(k, v, err)
	}
	return d
}

func (r *argReader) bool(k string) bool {
	v := r.str(k, false)
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.fail(k, v, err)
	}
	return b
}

func (r *argReader) seqs(k string) []uint64 {
	v := r.str(k, true)
	if v == "" {
		return nil
	}
	var out []uint64
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			r.fail(k, v, err)
		}
		out = append(out, n)
	}
	return out
}

func (r *argReader) done() error {
	if r.err != nil {
		return r.err
	}
	for k := range r.args {
		return fmt.Errorf("unknown key %q", k)
	}
	return nil
}

func configFromArgs(args map[string]string) (Config, error) {
	r := &argReader{args: args}
	cfg := Config{AtMostOnce: r.bool("at-most-once"), MaxTaskRetries: r.int("retries"),
		ResendAfter: r.duration("resend-after", false), MaxResend: r.int("max-resend")}
	return cfg, r.done()
}

func opFromArgs(name string, args map[string]string) (op, error) {
	r := &argReader{args: args}
	o := op{name: name}
	switch name {
	case "Add":
		o.call = r.str("call", true)
	case "Send":
		o.seq, o.at = r.uint("seq", true), r.duration("at", false)
	case "Finish":
		o.seq = r.uint("seq", true)
	case "Checkpoint", "Take":
	case "ResendStale":
		o.at = r.duration("at", true)
	case "Changed":
		o.record = Record{Incarnation: r.uint("inc", true), Placed: r.bool("placed"),
			AtMostOnce: r.bool("at-most-once"), MaxTaskRetries: r.int("retries")}
	case "Bounce":
		o.seqs = r.seqs("seqs")
	case "Die":
		o.msg = r.str("msg", false)
	default:
		return o, fmt.Errorf("unknown command %q", name)
	}
	return o, r.done()
}
