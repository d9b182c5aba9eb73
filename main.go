// Command sharedconfig is a shell on a key/value config shared by many
// processes and kept consistent on NATS JetStream. See README.md.
package main

import (
	"os"

	"github.com/sharedconfig/sharedconfig/cmd"
)

func main() { os.Exit(cmd.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
