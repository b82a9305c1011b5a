package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

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
	if err := tokenUnreadable(c.String("session-dir")); err != nil {
		return err
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
	if errors.Is(err, fs.ErrPermission) {
		return notHeadUser(path, c.String("session-dir"))
	}
	if err != nil {
		return exitf(ExitError, "%v", err)
	}
	fmt.Fprintln(c.App.Writer, tok)
	return nil
}

// tokenUnreadable says, when this user may not look into the session dir or an agent's
// directory in it (the head's files are its user's alone: 0700), that only the head's
// user can read the token and how to get it; before, `token show` run as another user
// said that no head ran there, or only "permission denied". Nil when nothing is in the
// way (or the session dir does not exist).
func tokenUnreadable(sessionDir string) error {
	entries, err := os.ReadDir(sessionDir)
	if errors.Is(err, fs.ErrPermission) {
		return notHeadUser(sessionDir, sessionDir)
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), agentDirPref) {
			continue
		}
		dir := filepath.Join(sessionDir, e.Name())
		f, err := os.Open(filepath.Join(dir, pidFileName))
		if err == nil {
			f.Close()
			continue
		}
		if errors.Is(err, fs.ErrPermission) {
			if _, derr := os.ReadDir(dir); errors.Is(derr, fs.ErrPermission) {
				return notHeadUser(dir, sessionDir)
			}
			return notHeadUser(filepath.Join(dir, pidFileName), sessionDir)
		}
	}
	return nil
}

// notHeadUser is the error of a head's file or directory (path) this user may not read.
func notHeadUser(path, sessionDir string) error {
	// What this user cannot see into: path, or the directory above it that hides it.
	fi, err := os.Stat(path)
	for p := path; errors.Is(err, fs.ErrPermission) && filepath.Dir(p) != p; {
		p = filepath.Dir(p)
		if fi, err = os.Stat(p); err == nil {
			path = p
		}
	}
	owner := "its owner"
	ownerName := ""
	if err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			if int(st.Uid) == os.Getuid() {
				return exitf(ExitError, "cannot read the join token: %s is yours but its mode %04o does not let you read it: chmod %s %s",
					path, fi.Mode().Perm(), map[bool]string{true: "700", false: "600"}[fi.IsDir()], path)
			}
			ownerName = userName(int(st.Uid))
			owner = fmt.Sprintf("user %s (mode %04o)", ownerName, fi.Mode().Perm())
		}
	}
	sudo := "as the user that started the head"
	if ownerName != "" {
		sudo = fmt.Sprintf("as %s (e.g. `sudo -u %s rayctl token show --session-dir %s`)", ownerName, ownerName, sessionDir)
	}
	return exitf(ExitCredentials, "cannot read the join token: %s belongs to %s, and only the user that started the head may read the head's files "+
		"(you are %s). Run `rayctl token show` on the head's machine %s, or ask whoever runs the cluster for the token",
		path, owner, userName(os.Getuid()), sudo)
}

// userName is the name of uid, or "uid N".
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return u.Username
	}
	return "uid " + strconv.Itoa(uid)
}
