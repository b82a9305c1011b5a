package caller

import (
	"flag"
	"fmt"
	"github.com/ray-go/ray/internal/base/scenario"
	"testing"
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
//	Cancel seq=N
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
	scenario.Run(t, "testdata/*.txt", scenario.Options{Rewrite: *rewrite}, func(t *testing.T) scenario.Step {
		var c *Caller[string]
		return func(where, name string, args map[string]string) []string {
			if name == "New" {
				cfg, err := configFromArgs(args)
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				c = New[string](cfg)
				if err := checkState(c); err != nil {
					t.Errorf("%s: invariant: %v", where, err)
				}
				return []string{c.String()}
			}
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
			return []string{res, c.String()}
		}
	})
}

func configFromArgs(args map[string]string) (Config, error) {
	r := scenario.NewArgs(args)
	cfg := Config{AtMostOnce: r.Bool("at-most-once"), MaxTaskRetries: r.Int("retries"),
		ResendAfter: r.Duration("resend-after", false), MaxResend: r.Int("max-resend")}
	return cfg, r.Done()
}

func opFromArgs(name string, args map[string]string) (op, error) {
	r := scenario.NewArgs(args)
	o := op{name: name}
	switch name {
	case "Add":
		o.call = r.Str("call", true)
	case "Send":
		o.seq, o.at = r.Uint("seq", true), r.Duration("at", false)
	case "Finish", "Cancel":
		o.seq = r.Uint("seq", true)
	case "Checkpoint", "Take":
	case "ResendStale":
		o.at = r.Duration("at", true)
	case "Changed":
		o.record = Record{Incarnation: r.Uint("inc", true), Placed: r.Bool("placed"),
			AtMostOnce: r.Bool("at-most-once"), MaxTaskRetries: r.Int("retries")}
	case "Bounce":
		o.seqs = r.Uints("seqs")
	case "Die":
		o.msg = r.Str("msg", false)
	default:
		return o, fmt.Errorf("unknown command %q", name)
	}
	return o, r.Done()
}
