//go:build !unix

package jetstream

import (
	"errors"
	"os"
)

// flock: locking the data directory is implemented for Unix systems only.
// Refusing to start is safer than two servers sharing one store.
func flock(*os.File) error {
	return errors.New("locking the data directory is not supported on this system")
}
