// Command rayctl starts, stops and inspects ray-go clusters and submits jobs to them. See
// package github.com/ray-go/ray/cli for the commands and the exit codes.
package main

import (
	"os"

	"github.com/ray-go/ray/cli"
)

func main() { os.Exit(cli.Main(os.Args, os.Stdout, os.Stderr)) }
