//go:build !unix

package cmd

import (
	"os"
	"os/exec"
)

// startDetached starts a process in the background.
func startDetached(exe string, args []string, log *os.File) (*os.Process, error) {
	c := exec.Command(exe, args...)
	c.Stdout, c.Stderr = log, log
	if err := c.Start(); err != nil {
		return nil, err
	}
	return c.Process, nil
}
