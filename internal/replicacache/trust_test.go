package replicacache_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/internal/replicacache"
)

// A trust file is saved whole, mode 0600, and read back; one others may
// read or write, or that is not a trust file, is not used.
func TestTrustFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sharedconfig")
	path := replicacache.TrustPath(replicacache.Path(dir, stamp))
	if filepath.Ext(path) != ".trust" {
		t.Fatalf("trust path %s", path)
	}
	want := replicacache.Trust{MostMS: 750, At: time.Date(2026, 12, 2, 4, 0, 0, 5, time.UTC), MadeUp: []string{"a1", "b2"}}
	if err := replicacache.SaveTrust(path, want); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("saved: %v, %v; want mode 0600", info, err)
	}
	if got, err := replicacache.LoadTrust(path); err != nil || got.MostMS != want.MostMS || !got.At.Equal(want.At) || !slices.Equal(got.MadeUp, want.MadeUp) {
		t.Fatalf("loaded %+v, %v; want %+v", got, err, want)
	}
	os.Chmod(path, 0o644)
	if _, err := replicacache.LoadTrust(path); !errors.Is(err, replicacache.ErrUntrusted) {
		t.Errorf("a file others may read: %v; want ErrUntrusted", err)
	}
	tooMany := `{"most_ms":1,"at":"2026-12-02T04:00:00Z","made_up":[` + strings.Repeat(`"x",`, 40) + `"x"]}`
	for _, data := range []string{"", "{}", `{"most_ms":-1,"at":"2026-12-02T04:00:00Z"}`, "not json", tooMany} {
		os.WriteFile(path, []byte(data), 0o600)
		os.Chmod(path, 0o600)
		if _, err := replicacache.LoadTrust(path); err == nil {
			t.Errorf("%q was taken for a trust file", data)
		}
	}
}
