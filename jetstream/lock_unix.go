//go:build unix

package jetstream

import (
	"os"
	"syscall"
)

// flock takes an exclusive advisory lock that the kernel drops when the
// process dies, so a crashed server never leaves the directory locked.
func flock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
