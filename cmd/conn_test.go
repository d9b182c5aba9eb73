package cmd

import (
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Without $HOME the data directory comes from the password database, never
// from a shared place such as /tmp that another user could prepare.
func TestDefaultDataDirWithoutHome(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the layout checked here is Linux's")
	}
	u, err := user.Current()
	if err != nil || !filepath.IsAbs(u.HomeDir) {
		t.Skipf("no home directory in the password database: %v", err)
	}
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "")
	got, err := defaultDataDir()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(u.HomeDir, ".local", "share", "sharedconfig"); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if strings.HasPrefix(got, os.TempDir()) {
		t.Errorf("%s is in the shared temporary directory", got)
	}
	// A relative XDG_DATA_HOME is ignored, as the XDG spec says.
	t.Setenv("XDG_DATA_HOME", "relative")
	if got2, _ := defaultDataDir(); got2 != got {
		t.Errorf("with a relative XDG_DATA_HOME: got %s, want %s", got2, got)
	}
}
