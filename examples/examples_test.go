// Package examples holds one runnable program per folder (go run ./examples/NAME); this
// test builds every one of them and runs it, so an example that stops compiling or
// working fails the tests.
package examples

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// args are the flags each example runs with here (small inputs, so the whole test stays
// within minutes), and a line its output must contain. Every folder with a main.go runs,
// with no flags if it is not listed.
var args = map[string]struct {
	flags []string
	want  string
}{
	"quickstart":   {nil, ""},
	"actors":       {nil, ""},
	"cluster":      {[]string{"-tasks", "4", "-points", "20000", "-mib", "2"}, ""},
	"data-etl":     {[]string{"-rows", "4000", "-files", "2"}, ""},
	"data-groupby": {[]string{"-rows", "4000"}, "revenue per country"},
	"data-csv":     {[]string{"-rows", "4000"}, "readings per country, warmest first"},
	"rl-es":        {[]string{"-workers", "2"}, "solved true"},
	"rl-ppo":       {[]string{"-workers", "2"}, "solved true"},
}

func TestExamplesRun(t *testing.T) {
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(e.Name(), "main.go")); e.IsDir() && err == nil {
			names = append(names, e.Name())
		}
	}
	if len(names) < len(args) {
		t.Fatalf("found examples %v, want at least %d", names, len(args))
	}
	bin := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin+string(filepath.Separator), "./...")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/...: %v\n%s", err, out)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			a := args[name]
			rctx, rcancel := context.WithTimeout(ctx, 3*time.Minute)
			defer rcancel()
			cmd := exec.CommandContext(rctx, filepath.Join(bin, name), a.flags...)
			cmd.Env = append(os.Environ(), "RAY_ADDRESS=") // the embedded local cluster
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s %s: %v after %v\n%s", name, strings.Join(a.flags, " "), err, time.Since(start).Round(time.Millisecond), out.String())
			}
			if !strings.Contains(out.String(), a.want) {
				t.Fatalf("%s: the output lacks %q:\n%s", name, a.want, out.String())
			}
			t.Logf("%s ran in %v", name, time.Since(start).Round(time.Millisecond))
		})
	}
}
