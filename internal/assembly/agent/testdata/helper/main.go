// Command helper is a stand-in for a worker process or a submitted driver in the agent's
// tests: it records its arguments and environment, prints, spawns a child, crashes or
// sleeps until SIGTERM, as its flags say.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	record := flag.String("record", "", "write args, env and pid as JSON to this directory (<pid>.json)")
	print := flag.String("print", "", "print this line")
	printBytes := flag.Int("print-bytes", 0, "print this many bytes of 'x'")
	exitAfter := flag.Duration("exit-after", -1, "exit after this long (negative: wait for SIGTERM)")
	code := flag.Int("code", 0, "exit code")
	child := flag.Bool("child", false, "start a child (this program with -ignore-term) and record its pid")
	ignoreTerm := flag.Bool("ignore-term", false, "ignore SIGTERM")
	flag.Parse()

	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	term := make(chan os.Signal, 1)
	if !*ignoreTerm {
		signal.Notify(term, syscall.SIGTERM)
	}
	rec := map[string]any{"pid": os.Getpid(), "args": os.Args[1:], "cwd": must(os.Getwd())}
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "RAY_") || strings.HasPrefix(k, "HELPER_") || k == "PWD" {
			env[k] = v
		}
	}
	rec["env"] = env
	if *child {
		cmd := exec.Command(os.Args[0], "-ignore-term")
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		rec["child"] = cmd.Process.Pid
	}
	if *record != "" {
		b, _ := json.Marshal(rec)
		tmp := filepath.Join(*record, strconv.Itoa(os.Getpid())+".tmp")
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := os.Rename(tmp, strings.TrimSuffix(tmp, ".tmp")+".json"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	if *print != "" {
		fmt.Println(*print)
	}
	if *printBytes > 0 {
		os.Stdout.Write([]byte(strings.Repeat("x", *printBytes)))
	}
	after := time.After(time.Hour) // a select on nothing would be a deadlock to the runtime
	if *exitAfter >= 0 {
		after = time.After(*exitAfter)
	}
	select {
	case <-term:
		if *record != "" {
			_ = os.WriteFile(filepath.Join(*record, strconv.Itoa(os.Getpid())+".term"), nil, 0o644)
		}
		os.Exit(143)
	case <-after:
		os.Exit(*code)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
