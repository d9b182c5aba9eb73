//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package repl

import (
	"os"
	"syscall"
)

// noFollow makes opening a symbolic link fail; opening a FIFO does not
// wait for a writer.
const noFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// ownRegular: fi is a regular file of this user's, with no other name.
func ownRegular(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return fi.Mode().IsRegular() && ok && int(st.Uid) == os.Geteuid() && st.Nlink == 1
}
