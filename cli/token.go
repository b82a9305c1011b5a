package cli

import (
	"fmt"
	"path/filepath"

	ucli "github.com/urfave/cli/v2"

	"github.com/ray-go/ray/internal/base/identity"
)

func tokenCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "token",
		Usage: "print or replace the join token of the head agent running on this machine (alone: as token show)",
		// `rayctl token --session-dir DIR` (the flag where start takes it) shows the token,
		// as `token show` does; before, it failed with "flag provided but not defined".
		Flags: []ucli.Flag{sessionDirFlag()},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return exitf(ExitError, "token: no subcommand %q: show (the default) or rotate", c.Args().First())
			}
			return tokenAction(c, false)
		},
		Subcommands: []*ucli.Command{
			{
				Name:   "show",
				Usage:  "print the current join token",
				Flags:  []ucli.Flag{sessionDirFlag()},
				Action: func(c *ucli.Context) error { return tokenAction(c, false) },
			},
			{
				Name: "rotate",
				Usage: "replace the join token with a new one and print it: the old one stops working at once; " +
					"agents, drivers and jobs already in the cluster keep their certificates",
				Flags:  []ucli.Flag{sessionDirFlag()},
				Action: func(c *ucli.Context) error { return tokenAction(c, true) },
			},
		},
	}
}

// tokenAction finds the live head of this machine's session dir and prints its token,
// after replacing it when rotate. The head's join endpoint reads the token file on every
// request, so the new token takes effect without a restart.
func tokenAction(c *ucli.Context, rotate bool) error {
	if c.NArg() > 0 {
		return exitf(ExitError, "token %s takes no arguments", c.Command.Name)
	}
	agents, err := localAgents(c.String("session-dir"))
	if err != nil {
		return err
	}
	var head *localAgent
	for i, la := range agents {
		if la.live && la.info != nil && la.info.Head && la.info.TokenFile != "" {
			head = &agents[i]
			break
		}
	}
	if head == nil {
		return exitf(ExitNothingRunning, "no secure head agent runs under %s: the token lives with the head (`rayctl start --head`); "+
			"run this on the head's machine, with its --session-dir", c.String("session-dir"))
	}
	path := head.info.TokenFile
	if rotate {
		ca, err := identity.LoadCA(filepath.Dir(path))
		if err != nil {
			return exitf(ExitError, "%v", err)
		}
		tok, err := identity.NewToken(ca)
		if err == nil {
			err = identity.SaveToken(path, tok)
		}
		if err != nil {
			return exitf(ExitError, "rotate the token: %v", err)
		}
		writeErr(c, "rayctl: the join token of the cluster at %s was replaced: the join endpoint refuses the old one from now on, "+
			"so nobody joins, and no rayctl command asks for a certificate, with it.\n"+
			"rayctl: it revokes no certificate issued with the old token: agents (a year), drivers (an hour, renewed without the token while they run) "+
			"and rayctl's cached client certificates (24 hours) keep working. If the old token leaked, list the certificates issued since then "+
			"with `rayctl cert list` (issued_at, name, role) and revoke each you do not trust with `rayctl cert revoke SERIAL`, on this machine.",
			head.info.Address)
	}
	tok, err := identity.ReadTokenFile(path)
	if err != nil {
		return exitf(ExitError, "%v", err)
	}
	fmt.Fprintln(c.App.Writer, tok)
	return nil
}
