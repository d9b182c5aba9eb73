//go:build unix

package cmd

import (
	"os"
	"os/exec"
	"syscall"
)

// startDetached starts a process in a new session, with no terminal, so
// that closing the shell's terminal does not stop it.
func startDetached(exe string, args []string, log *os.File) (*os.Process, error) {
	c := exec.Command(exe, args...)
	c.Stdout, c.Stderr = log, log
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		return nil, err
	}
	return c.Process, nil
}
