//go:build !unix

package localserver

import (
	"errors"
	"os"
)

const noFollow = 0

func openDir(dir string) (*os.File, error) { return os.Open(dir) }

// flock: locking the data directory is implemented for Unix systems only.
// Refusing to start is safer than two servers sharing one store.
func flock(*os.File) error {
	return errors.New("locking the data directory is not supported on this system")
}

// owner: file owners are not checked on this system.
func owner(os.FileInfo) (uid int, known bool) { return 0, false }
