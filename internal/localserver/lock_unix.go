//go:build unix

package localserver

import (
	"os"
	"syscall"
)

// noFollow makes opening a symbolic link fail.
const noFollow = syscall.O_NOFOLLOW

// openDir opens a directory itself, not a link to one, for locking.
func openDir(dir string) (*os.File, error) {
	return os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
}

// flock takes an exclusive advisory lock that the kernel drops when the
// process dies, so a crashed server never leaves the directory locked.
func flock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// owner is the uid that owns a file.
func owner(fi os.FileInfo) (uid int, known bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
