package repl

import (
	"os"
	"path/filepath"
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
