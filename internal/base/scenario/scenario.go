// Package scenario runs the scripts of the pure packages' scenario tests (actors/lifecycle,
// actors/caller, lineage): a hand-rolled cousin of the datadriven tests of etcd-io/raft.
//
//	# a comment; comments and blank lines between blocks are kept by -rewrite
//	Command key=value key="quoted value" flag
//	----
//	expected output, up to the next blank line or the end of the file
//
// A bare key means key=true. Each package defines its commands and what they print; this
// package parses the scripts, compares what each command printed with what the script
// expects, and with rewrite writes the actual output back (review the diff before
// committing it). It is test support: only _test files import it.
package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Step carries out one command of a script and returns what it prints. where is the
// script's file and line, for messages; a command the script got wrong is reported with
// t.Fatalf by the step itself.
type Step func(where, name string, args map[string]string) []string

// Options are what differs between the packages' scripts.
type Options struct {
	// Rewrite writes each script back with the actual output (the tests' -rewrite flag).
	Rewrite bool
	// Subject makes the first bare word after a command its subject, under the key "_"
	// (`Record t4 args=t3`), rather than a flag.
	Subject bool
}

// Run runs every script matching glob as a subtest named after its file (failing t if
// there is none); start makes the step function of one script, with its own fresh state.
func Run(t *testing.T, glob string, opt Options, start func(t *testing.T) Step) {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no scenarios match %s", glob)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), filepath.Ext(f)), func(t *testing.T) {
			runScript(t, f, opt, start(t))
		})
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

func runScript(t *testing.T, path string, opt Options, step Step) {
	blocks, trailer := parseScript(t, path)
	var out strings.Builder
	for _, b := range blocks {
		for _, p := range b.prefix {
			out.WriteString(p + "\n")
		}
		where := fmt.Sprintf("%s:%d", path, b.line)
		name, args, err := ParseCommand(b.cmd, opt.Subject)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		got := step(where, name, args)
		if !opt.Rewrite && !reflect.DeepEqual(got, b.expected) {
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
	if opt.Rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// ParseCommand splits `Name k=v k="v w" flag` into the name and its arguments; with
// subject, the first bare word is the value of "_" (see Options.Subject).
func ParseCommand(line string, subject bool) (string, map[string]string, error) {
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
	for i, tok := range toks[1:] {
		k, v, ok := strings.Cut(tok, "=")
		if !ok && subject && i == 0 {
			k, v = "_", tok
		} else if !ok {
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

// Args takes typed values out of a command's arguments; Done reports the first bad or
// missing value, or a key no one took.
type Args struct {
	args map[string]string
	err  error
}

// NewArgs reads args (which it consumes).
func NewArgs(args map[string]string) *Args { return &Args{args: args} }

func (r *Args) fail(k, v string, err error) { r.Fail(fmt.Errorf("%s=%q: %v", k, v, err)) }

// Fail records err as what Done returns, unless an earlier error is recorded.
func (r *Args) Fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// Str is k's value ("" if absent).
func (r *Args) Str(k string, required bool) string {
	v, ok := r.args[k]
	if !ok && required && r.err == nil {
		r.err = fmt.Errorf("missing %s=", k)
	}
	delete(r.args, k)
	return v
}

// Uint is k's value as an unsigned number (0 if absent).
func (r *Args) Uint(k string, required bool) uint64 {
	v := r.Str(k, required)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		r.fail(k, v, err)
	}
	return n
}

// Int is k's value as a number (0 if absent).
func (r *Args) Int(k string) int {
	v := r.Str(k, false)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		r.fail(k, v, err)
	}
	return n
}

// Duration is k's value as a time.Duration (0 if absent).
func (r *Args) Duration(k string, required bool) time.Duration {
	v := r.Str(k, required)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		r.fail(k, v, err)
	}
	return d
}

// Bool is k's value as a boolean (false if absent; a bare key is true).
func (r *Args) Bool(k string) bool {
	v := r.Str(k, false)
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.fail(k, v, err)
	}
	return b
}

// List is k's comma-separated values (nil if absent).
func (r *Args) List(k string) []string {
	v := r.Str(k, false)
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// Uints is k's comma-separated unsigned numbers (k required).
func (r *Args) Uints(k string) []uint64 {
	v := r.Str(k, true)
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

// Done is the first bad or missing value, else an error naming a key no one took.
func (r *Args) Done() error {
	if r.err != nil {
		return r.err
	}
	for k := range r.args {
		return fmt.Errorf("unknown key %q", k)
	}
	return nil
}
