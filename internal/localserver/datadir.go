package localserver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// pidFile names the process that serves a data directory. The lock itself
// is on the directory, which cannot be deleted while the server runs.
const pidFile = "server.pid"

// ErrUnsafeDataDir: a data directory someone else could control.
var ErrUnsafeDataDir = errors.New("unsafe data directory")

// PrepareDataDir creates dir (mode 0700) if it is missing and checks that
// it is this user's own: a directory, not a symbolic link, owned by the
// user. For a private server (its keys live there) no one else may write in
// it either, or they could swap the keys.
func PrepareDataDir(dir string, private bool) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("data directory %s is a symbolic link; use the directory itself: %w", dir, ErrUnsafeDataDir)
	case !fi.IsDir():
		return fmt.Errorf("data directory %s is not a directory", dir)
	}
	if err := checkOwned(dir, fi); err != nil {
		return err
	}
	if private && fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("data directory %s can be written by others (mode %v; chmod 700 it): %w", dir, fi.Mode().Perm(), ErrUnsafeDataDir)
	}
	return nil
}

// checkOwned refuses a file that belongs to another user.
func checkOwned(path string, fi os.FileInfo) error {
	if uid, ok := owner(fi); ok && uid != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to you (uid %d): %w", path, uid, os.Geteuid(), ErrUnsafeDataDir)
	}
	return nil
}

// openOwned opens a file in a data directory, refusing a symbolic link and
// a file that belongs to another user.
func openOwned(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|noFollow, perm)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s is a symbolic link: %w", path, ErrUnsafeDataDir)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkOwned(path, fi)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// lockDir locks the data directory itself (a file in it could be deleted,
// letting a second server in) and writes this process's id next to it.
func lockDir(dir string) (*os.File, error) {
	d, err := openDir(dir)
	if err != nil {
		return nil, fmt.Errorf("data directory lock: %w", err)
	}
	if err := flock(d); err != nil {
		d.Close()
		if pid := ServerPID(dir); pid != 0 {
			return nil, fmt.Errorf("%s (pid %d): %w", dir, pid, ErrDataDirLocked)
		}
		return nil, fmt.Errorf("%s: %w", dir, ErrDataDirLocked)
	}
	f, err := openOwned(filepath.Join(dir, pidFile), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("data directory: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteString(strconv.Itoa(os.Getpid()) + "\n"); err != nil {
		d.Close()
		return nil, fmt.Errorf("data directory: %w", err)
	}
	return d, nil
}

// ServerPID is the process id of the server that last locked the data
// directory (it may have exited since), or 0.
func ServerPID(dir string) int {
	f, err := openOwned(filepath.Join(dir, pidFile), os.O_RDONLY, 0)
	if err != nil {
		return 0
	}
	defer f.Close()
	b := make([]byte, 32)
	n, _ := f.Read(b)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	return pid
}

// ServerLogFile is where a server started in the background on dir logs.
const ServerLogFile = "server.log"

// OpenServerLog opens dir's server.log for appending, refusing a symbolic
// link or a file of another user.
func OpenServerLog(dir string) (*os.File, error) {
	return openOwned(filepath.Join(dir, ServerLogFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
}

// portFile records the loopback port of a data directory's private server,
// so that each directory has a port of its own and its shells find it.
const portFile = "server.port"

// RecordedPort returns the port recorded in dir, or 0 if none is.
func RecordedPort(dir string) (int, error) {
	path := filepath.Join(dir, portFile)
	f, err := openOwned(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("data directory: %w", err)
	}
	defer f.Close()
	b := make([]byte, 32)
	n, _ := f.Read(b)
	port, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil || port < 1 || port > 65535 {
		return 0, fmt.Errorf("%s does not hold a port number: delete it, and the next shell records a new one", path)
	}
	return port, nil
}

// ClaimPort records port in dir unless one is recorded already, and
// returns the one recorded: of shells that start at once on a new data
// directory, the first to record wins. The record appears whole (a link to
// a written file), so no reader sees it half written.
func ClaimPort(dir string, port int) (int, error) {
	tmp, err := os.CreateTemp(dir, portFile+".*")
	if err != nil {
		return 0, fmt.Errorf("data directory: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(strconv.Itoa(port) + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("data directory: %w", err)
	}
	if err := os.Link(tmp.Name(), filepath.Join(dir, portFile)); err != nil && !errors.Is(err, fs.ErrExist) {
		return 0, fmt.Errorf("data directory: %w", err)
	}
	return RecordedPort(dir)
}

// recordPort records the port a private server listens on, replacing what
// was recorded: the server holds the directory's lock, so it is the one.
func recordPort(dir string, port int) error {
	f, err := openOwned(filepath.Join(dir, portFile), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	defer f.Close()
	_, err = f.WriteString(strconv.Itoa(port) + "\n")
	return err
}
