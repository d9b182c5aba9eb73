package repl

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"
)

// The history file is private, keeps the last lines, and never takes a
// line that looks like it holds a secret.
func TestHistoryFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "sharedconfig", "history")
	h := OpenHistory(path, 3)
	if got := h.Lines(); len(got) != 0 {
		t.Fatalf("no file yet: %q", got)
	}
	for _, l := range []string{"PUT a, 1", "PUT db.password, hunter2", " GET hidden", "PUT api.Token, x", "GET a", ""} {
		if err := h.Add(l); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := h.Lines(), []string{"PUT a, 1", "GET a"}; !slices.Equal(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
	for i := range 10 {
		if err := h.Add("GET k" + strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := h.Lines(), []string{"GET k7", "GET k8", "GET k9"}; !slices.Equal(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
	all, _ := h.read()
	if len(all) > 6 {
		t.Errorf("the file holds %d lines; it is cut back to 3 past 6", len(all))
	}
}

// A history file, or the file a trim writes, that is a symbolic link (or
// any file not the user's own) is left alone: a history directory another
// user may write (a HOME kept across sudo) cannot make the shell append
// to, chmod or overwrite a file of that user's choosing.
func TestHistoryFollowsNoLink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "history")
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	h := OpenHistory(path, 2)
	_ = h.Add("GET a")
	if lines := h.Lines(); len(lines) != 0 {
		t.Errorf("the history read %q through a link", lines)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	// The user's own history, due for a trim, beside a planted .tmp link.
	if err := os.Symlink(victim, path+".tmp"); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"GET 1", "GET 2", "GET 3", "GET 4", "GET 5"} {
		_ = h.Add(l)
	}
	b, err := os.ReadFile(victim)
	fi, serr := os.Stat(victim)
	if err != nil || serr != nil || string(b) != "kept\n" || fi.Mode().Perm() != 0o644 {
		t.Fatalf("the file a link named holds %q, mode %v (%v, %v); want it untouched", b, fi.Mode().Perm(), err, serr)
	}
	if lines := h.Lines(); len(lines) == 0 || lines[len(lines)-1] != "GET 5" {
		t.Errorf("the history holds %q; want the user's own lines", lines)
	}
}

// A history file far larger than any history (a file written to by
// mistake, one of zeros) is read from its end only, in bounded memory,
// and the lines at its end come back; the next line cuts it back.
func TestHugeHistoryFileIsReadFromItsEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	const huge = 256 << 20 // sparse: it takes no disk
	if err := f.Truncate(huge); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("\nGET a\nGET b\n"), huge); err != nil {
		t.Fatal(err)
	}
	f.Close()
	h := OpenHistory(path, 3)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := h.Lines()
	runtime.ReadMemStats(&after)
	if want := []string{"GET a", "GET b"}; !slices.Equal(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*maxHistoryRead {
		t.Errorf("reading the history allocated %d MiB", alloc>>20)
	}
	if err := h.Add("GET c"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() > 1<<10 {
		t.Fatalf("after a line the file holds %v bytes (%v); want it cut back to its last lines", fi.Size(), err)
	}
	if got, want := h.Lines(), []string{"GET a", "GET b", "GET c"}; !slices.Equal(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
}
