package cli

import (
	"bytes"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

// TestHelpPlaceholders renders the help of every command and checks each flag's line: urfave/cli
// takes the first `quoted` word of a Usage as the flag's placeholder, so a Usage quoting a
// command ("as `rayctl start --head` printed it") printed "--token rayctl start --head".
// A placeholder is one word (or none, for a bool flag).
func TestHelpPlaceholders(t *testing.T) {
	var walk func(path []string, cmds []*ucli.Command)
	checked := 0
	walk = func(path []string, cmds []*ucli.Command) {
		for _, cmd := range cmds {
			p := append(append([]string(nil), path...), cmd.Name)
			if len(cmd.Subcommands) > 0 {
				walk(p, cmd.Subcommands)
			}
			var out, errb bytes.Buffer
			if code := Main(append(append([]string{"rayctl"}, p...), "--help"), &out, &errb); code != 0 {
				t.Errorf("rayctl %s --help: exit %d %s", strings.Join(p, " "), code, errb.String())
				continue
			}
			help := out.String()
			for _, f := range cmd.Flags {
				if v, ok := f.(ucli.VisibleFlag); ok && !v.IsVisible() {
					continue
				}
				name := f.Names()[0]
				prefix := "--" + name
				if len(name) == 1 {
					prefix = "-" + name
				}
				var line string
				for _, l := range strings.Split(help, "\n") {
					if l = strings.TrimSpace(l); strings.HasPrefix(l, prefix+" ") || strings.HasPrefix(l, prefix+",") || l == prefix {
						line = l
						break
					}
				}
				if line == "" {
					t.Errorf("rayctl %s --help has no line for %s:\n%s", strings.Join(p, " "), prefix, help)
					continue
				}
				// "--name PLACEHOLDER, -n PLACEHOLDER  usage": the names and their placeholders
				// end at the first double space.
				head, _, _ := strings.Cut(line, "  ")
				if i := strings.Index(head, " [ "); i > 0 { // a slice flag: "--env value [ --env value ]"
					head = head[:i]
				}
				for _, part := range strings.Split(head, ", ") {
					if words := strings.Fields(part); len(words) > 2 {
						t.Errorf("rayctl %s: flag %s shows the placeholder %q (a backticked phrase in its Usage?)",
							strings.Join(p, " "), name, strings.Join(words[1:], " "))
					}
				}
				checked++
			}
		}
	}
	walk(nil, New(nil, nil).Commands)
	if checked < 50 {
		t.Fatalf("only %d flags checked", checked)
	}
}

// TestStateKinds: list, get and summary name every kind they take in their help and in
// their usage errors alike (summary's help left out placement-groups, which it takes).
func TestStateKinds(t *testing.T) {
	for _, cmd := range []string{"list", "get", "summary"} {
		var out, errb bytes.Buffer
		Main([]string{"rayctl", cmd, "--help"}, &out, &errb)
		usage, _, _ := strings.Cut(strings.SplitN(out.String(), "USAGE:", 2)[1], "\n\n")
		errb.Reset()
		args := []string{"rayctl", cmd, "nosuch"}
		if cmd == "get" {
			args = append(args, "0123456789")
		}
		Main(args, &out, &errb)
		for _, k := range kinds {
			name := k.name
			if cmd == "get" {
				name = k.one
			}
			if !strings.Contains(usage, name) {
				t.Errorf("rayctl %s --help: no %s in %q", cmd, name, usage)
			}
			if !strings.Contains(errb.String(), name) {
				t.Errorf("rayctl %s nosuch: no %s in %q", cmd, name, errb.String())
			}
		}
	}
}
