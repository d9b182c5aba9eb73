// Package replicacache keeps, in the user's cache directory, the copy of a
// config a process read (a statesync checkpoint: the state, its revision and
// the ID of the entry there), so that the next process on the same config
// starts from it and reads only the entries written since, instead of the
// whole config.
//
// A file is used only if it is this user's own and no one else can write it
// (mode 0600 in a 0700 directory), if it is whole, and if it was written for
// the same server and the same stream, created at the same time: anything
// else is ignored (and the next save replaces it). Even then it is not
// trusted with the config: the synchronizer checks that the stream still
// holds the entry the copy was read up to before it takes in anything after
// it (statesync.Synchronizer.Resume), so a stream deleted and created again
// is loaded afresh.
package replicacache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Stamp says which stream a file holds a copy of.
type Stamp struct {
	// Server names the server or cluster (one JetStream) the stream is on.
	Server string `json:"server"`
	// Stream is the stream's name.
	Stream string `json:"stream"`
	// Created is when the server created the stream: a stream deleted and
	// created again under its name has another.
	Created time.Time `json:"created"`
	// DirectGets: the stream answered direct gets of its last entry (one
	// replica, direct gets allowed) when the copy was saved, so a reader
	// may ask for it so (see Peek). Not part of the file's identity.
	DirectGets bool `json:"direct_gets,omitempty"`
}

// header is a file's first line after the magic: the stamp, the revision
// the checkpoint stands at (so that a process can tell whether its copy is
// newer without decoding the file), and the checkpoint's length and the
// index's (so that a file cut short is refused here).
type header struct {
	Stamp
	Revision    uint64 `json:"revision"`
	Length      int    `json:"length"`
	IndexLength int    `json:"index_length,omitempty"`
}

// magic opens every cache file. A file of another version is not used
// (and the next save replaces it).
const magic = "sharedconfig-cache 2\n"

// maxFile bounds what Load reads: a file larger than this is no copy of a
// config this program wrote.
const maxFile = 1 << 30

// Dir is where the files are: sharedconfig in the user's cache directory
// ($XDG_CACHE_HOME, or ~/.cache, on Linux).
func Dir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "sharedconfig"), nil
}

// Path is the file for stream on server in dir: the stream's name (it tells
// a person which config it is) and a digest of the server.
func Path(dir string, s Stamp) string {
	sum := sha256.Sum256([]byte(s.Server))
	name := s.Stream
	if len(name) > 200 { // a file name has at most 255 bytes
		long := sha256.Sum256([]byte(name))
		name = name[:100] + "-" + hex.EncodeToString(long[:8])
	}
	return filepath.Join(dir, name+"-"+hex.EncodeToString(sum[:8])+".cache")
}

// ErrUntrusted: the file exists but is not one to use; the reason follows.
var ErrUntrusted = errors.New("cache file not used")

// Load returns the checkpoint in the file at path, and the revision Save
// was given with it, if the file can be trusted to be this user's copy of
// the stream want names. A file that does not exist is fs.ErrNotExist; one
// that cannot be trusted, ErrUntrusted with the reason.
func Load(path string, want Stamp) (checkpoint []byte, revision uint64, err error) {
	f, size, err := open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, 0, err
	}
	if int64(len(data)) != size {
		return nil, 0, fmt.Errorf("%w: %s changed while it was read", ErrUntrusted, path)
	}
	h, n, err := parseHeader(path, data, size, want, false)
	if err != nil {
		return nil, 0, err
	}
	return data[n : n+h.Length], h.Revision, nil
}

// open opens the file at path for reading if it can be trusted to be this
// user's own (see the package's doc), and returns its size.
func open(path string) (*os.File, int64, error) {
	if err := checkDir(filepath.Dir(path)); err != nil {
		return nil, 0, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, 0, fmt.Errorf("%w: %s is a symbolic link", ErrUntrusted, path)
		}
		return nil, 0, err
	}
	info, err := f.Stat()
	if err == nil {
		err = checkOwn(path, info, 0o077)
	}
	if err == nil && info.Size() > maxFile {
		err = fmt.Errorf("%w: %s is larger than any copy of a config", ErrUntrusted, path)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, info.Size(), nil
}

// parseHeader checks the start of a file of size bytes (at least its
// first two lines) against want, and returns its header and where the
// checkpoint starts. The lengths it gives must add up to the file's size.
func parseHeader(path string, start []byte, size int64, want Stamp, anyCreated bool) (header, int, error) {
	rest, ok := bytes.CutPrefix(start, []byte(magic))
	if !ok {
		return header{}, 0, fmt.Errorf("%w: %s is not a sharedconfig cache file of this version", ErrUntrusted, path)
	}
	line, _, ok := bytes.Cut(rest, []byte{'\n'})
	if !ok {
		return header{}, 0, fmt.Errorf("%w: %s ends in its header", ErrUntrusted, path)
	}
	var got header
	if err := json.Unmarshal(line, &got); err != nil {
		return header{}, 0, fmt.Errorf("%w: %s: its header: %w", ErrUntrusted, path, err)
	}
	n := len(magic) + len(line) + 1
	if got.Length < 0 || got.IndexLength < 0 || got.Length > maxFile || got.IndexLength > maxFile ||
		int64(n)+int64(got.Length)+int64(got.IndexLength) != size {
		return header{}, 0, fmt.Errorf("%w: %s holds %d bytes after its header, not the %d+%d it was written with", ErrUntrusted, path,
			size-int64(n), got.Length, got.IndexLength)
	}
	if got.Server != want.Server || got.Stream != want.Stream || !got.Created.Equal(want.Created) && !anyCreated {
		return header{}, 0, fmt.Errorf("%w: %s holds stream %s created %s on %q, not this one", ErrUntrusted, path,
			got.Stream, got.Created.Format(time.RFC3339Nano), got.Server)
	}
	return got, n, nil
}

// checkDir refuses a directory that is not this user's, or that others may
// write in (they could put a file there, or swap one).
func checkDir(dir string) error {
	info, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrUntrusted, dir)
	}
	return checkOwn(dir, info, 0o022)
}

// checkOwn refuses a file or directory another user owns, or whose mode
// has any of the bits in forbidden.
func checkOwn(path string, info fs.FileInfo, forbidden fs.FileMode) error {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%w: cannot tell who owns %s", ErrUntrusted, path)
	}
	if int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%w: %s belongs to user %d, not to this user (%d)", ErrUntrusted, path, st.Uid, os.Getuid())
	}
	if info.Mode().Perm()&forbidden != 0 {
		return fmt.Errorf("%w: %s has mode %s: others may read or write it", ErrUntrusted, path, info.Mode().Perm())
	}
	if !info.IsDir() && !info.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrUntrusted, path)
	}
	return nil
}

// Save writes checkpoint, at revision, stamped s, and its index (from
// NewIndex; nil for none), to the file at path, creating its directory
// (0700) if need be. The file (0600) is written under another
// name and renamed into place, so that a process reading it, or another
// saving at once, sees a whole file, this one or another's.
func Save(path string, s Stamp, revision uint64, checkpoint, index []byte) error {
	head, err := json.Marshal(header{Stamp: s, Revision: revision, Length: len(checkpoint), IndexLength: len(index)})
	if err != nil {
		return err
	}
	return writeWhole(path, []byte(magic), head, []byte{'\n'}, checkpoint, index)
}

// writeWhole writes parts to the file at path, in the user's own
// directory (0700, made if need be), mode 0600, under another name first
// and then renamed into place, so that a process reading it, or another
// writing at once, sees a whole file, this one or another's.
func writeWhole(path string, parts ...[]byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := checkDir(dir); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".saving-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a rename, nothing is left to remove
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	for _, b := range parts {
		if _, err := tmp.Write(b); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	removeLeftovers(dir, time.Now().Add(-leftoverAge))
	return nil
}

// leftoverAge: a temporary file this old is no save under way (a save of
// the largest copy takes seconds) but one a killed process left.
const leftoverAge = 10 * time.Minute

// removeLeftovers removes the temporary files in dir last written before
// cutoff, which processes killed while saving left behind.
func removeLeftovers(dir string, cutoff time.Time) {
	names, _ := filepath.Glob(filepath.Join(dir, ".saving-*"))
	for _, name := range names {
		if fi, err := os.Lstat(name); err == nil && fi.Mode().IsRegular() && fi.ModTime().Before(cutoff) {
			os.Remove(name)
		}
	}
}

// NoDirectGets marks the cache file at path, if it is want's, as one whose
// stream does not serve direct gets (Stamp.DirectGets false), keeping the
// rest: a reader asked and had no answer (the stream stopped allowing them,
// or this user may not ask), and the next must not wait for one again.
func NoDirectGets(path string, want Stamp) error {
	f, size, err := open(path)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	f.Close()
	if err != nil {
		return err
	}
	if int64(len(data)) != size {
		return fmt.Errorf("%w: %s changed while it was read", ErrUntrusted, path)
	}
	h, n, err := parseHeader(path, data, size, want, true)
	if err != nil || !h.DirectGets {
		return err
	}
	body := data[n:]
	return Save(path, Stamp{Server: h.Server, Stream: h.Stream, Created: h.Created}, h.Revision, body[:h.Length], body[h.Length:h.Length+h.IndexLength])
}
