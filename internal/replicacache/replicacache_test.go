package replicacache_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/internal/replicacache"
)

var stamp = replicacache.Stamp{Server: "cluster:c1", Stream: "SC_7_example_someConfig", Created: time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)}

func saved(t *testing.T, checkpoint string) (path string) {
	t.Helper()
	path = replicacache.Path(filepath.Join(t.TempDir(), "sharedconfig"), stamp)
	if err := replicacache.Save(path, stamp, 7, []byte(checkpoint), nil); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSaveThenLoad(t *testing.T) {
	path := saved(t, "the checkpoint\nwith lines")
	got, rev, err := replicacache.Load(path, stamp)
	if err != nil || string(got) != "the checkpoint\nwith lines" || rev != 7 {
		t.Fatalf("Load: %q at %d, %v", got, rev, err)
	}
	for p, want := range map[string]fs.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s has mode %s, want %s", p, info.Mode().Perm(), want)
		}
	}
	if _, _, err := replicacache.Load(filepath.Join(filepath.Dir(path), "other.cache"), stamp); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load of no file: %v, want ErrNotExist", err)
	}
}

// A file for another stream, another incarnation of the stream, or another
// server is not used.
func TestAnotherStreamsFileIsNotUsed(t *testing.T) {
	path := saved(t, "checkpoint")
	for name, other := range map[string]replicacache.Stamp{
		"stream":  {Server: stamp.Server, Stream: "SC_7_example_other", Created: stamp.Created},
		"created": {Server: stamp.Server, Stream: stamp.Stream, Created: stamp.Created.Add(time.Nanosecond)},
		"server":  {Server: "server:NOTHER", Stream: stamp.Stream, Created: stamp.Created},
	} {
		if got, _, err := replicacache.Load(path, other); !errors.Is(err, replicacache.ErrUntrusted) {
			t.Errorf("another %s: Load gave %q, %v; want ErrUntrusted", name, got, err)
		}
	}
}

// Every prefix of a file, and other bytes, are refused without a panic.
func TestDamagedFileIsNotUsed(t *testing.T) {
	path := saved(t, "checkpoint")
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := [][]byte{[]byte("garbage"), bytes.Replace(whole, []byte(`"length":10`), []byte(`"length":-1`), 1), append(bytes.Clone(whole), 'x')}
	for i := range len(whole) {
		bad = append(bad, whole[:i])
	}
	for _, b := range bad {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if got, _, err := replicacache.Load(path, stamp); !errors.Is(err, replicacache.ErrUntrusted) {
			t.Errorf("a file of %q: Load gave %q, %v; want ErrUntrusted", b, got, err)
		}
	}
}

// A file others can write or read, another user's file, a link, or a file
// in a directory others can write in is not used; the next Save replaces a
// file that is not used.
func TestFileOthersCouldWriteIsNotUsed(t *testing.T) {
	cases := map[string]func(t *testing.T, path string){
		"mode 0666": func(t *testing.T, path string) { chmod(t, path, 0o666) },
		"mode 0644": func(t *testing.T, path string) { chmod(t, path, 0o644) },
		"mode 0620": func(t *testing.T, path string) { chmod(t, path, 0o620) },
		"a link": func(t *testing.T, path string) {
			target := path + ".target"
			if err := os.Rename(path, target); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		},
		"directory 0777": func(t *testing.T, path string) { chmod(t, filepath.Dir(path), 0o777) },
		"another user's": func(t *testing.T, path string) {
			if os.Getuid() != 0 {
				t.Skip("only root can give a file to another user")
			}
			if err := os.Chown(path, 4242, 4242); err != nil {
				t.Fatal(err)
			}
		},
		"another user's directory": func(t *testing.T, path string) {
			if os.Getuid() != 0 {
				t.Skip("only root can give a directory to another user")
			}
			if err := os.Chown(filepath.Dir(path), 4242, 4242); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			path := saved(t, "checkpoint")
			spoil(t, path)
			if got, _, err := replicacache.Load(path, stamp); !errors.Is(err, replicacache.ErrUntrusted) {
				t.Fatalf("Load gave %q, %v; want ErrUntrusted", got, err)
			}
			if name == "directory 0777" || name == "another user's directory" {
				if err := replicacache.Save(path, stamp, 7, []byte("new"), nil); !errors.Is(err, replicacache.ErrUntrusted) {
					t.Fatalf("Save into that directory: %v, want ErrUntrusted", err)
				}
				return
			}
			if err := replicacache.Save(path, stamp, 7, []byte("new"), nil); err != nil {
				t.Fatal(err)
			}
			if got, _, err := replicacache.Load(path, stamp); err != nil || string(got) != "new" {
				t.Fatalf("after a new Save, Load gave %q, %v", got, err)
			}
		})
	}
}

func chmod(t *testing.T, path string, mode fs.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// Processes saving and loading at once each see a whole file, one of the
// saves.
func TestConcurrentSavesLeaveWholeFiles(t *testing.T) {
	path := saved(t, "first")
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := range 20 {
				if err := replicacache.Save(path, stamp, 7, bytes.Repeat(fmt.Appendf(nil, "%d.%d;", i, j), 1000+i*100), nil); err != nil {
					errs <- err
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 20 {
				got, _, err := replicacache.Load(path, stamp)
				if err != nil {
					errs <- err
					continue
				}
				if string(got) == "first" {
					continue
				}
				var i, j int
				if _, err := fmt.Sscanf(string(got), "%d.%d;", &i, &j); err != nil || !bytes.Equal(got, bytes.Repeat(fmt.Appendf(nil, "%d.%d;", i, j), 1000+i*100)) {
					errs <- fmt.Errorf("a load saw a mixed or partial file of %d bytes", len(got))
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("the directory holds %d files after the saves, want 1", len(entries))
	}
}

// FuzzLoad: no bytes in a cache file make Load panic.
func FuzzLoad(f *testing.F) {
	dir := filepath.Join(f.TempDir(), "sharedconfig")
	path := replicacache.Path(dir, stamp)
	if err := replicacache.Save(path, stamp, 7, []byte("checkpoint"), nil); err != nil {
		f.Fatal(err)
	}
	whole, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(whole)
	f.Add([]byte("sharedconfig-cache 2\n{\"length\":1e99}\n"))
	f.Add([]byte("sharedconfig-cache 2\nnull\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, _ = replicacache.Load(path, stamp)
	})
}

// A save removes the temporary files that processes killed while saving
// left behind, and not one that may be a save under way.
func TestSaveRemovesWhatKilledSavesLeft(t *testing.T) {
	path := saved(t, "first")
	dir := filepath.Dir(path)
	old, recent := filepath.Join(dir, ".saving-1"), filepath.Join(dir, ".saving-2")
	for _, name := range []string{old, recent} {
		if err := os.WriteFile(name, []byte("half a copy"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	hourAgo := time.Now().Add(-time.Hour)
	if err := os.Chtimes(old, hourAgo, hourAgo); err != nil {
		t.Fatal(err)
	}
	if err := replicacache.Save(path, stamp, 8, []byte("second"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the hour-old temporary file: %v; want it removed", err)
	}
	if _, err := os.Stat(recent); err != nil {
		t.Errorf("the recent temporary file: %v; want it kept", err)
	}
}
