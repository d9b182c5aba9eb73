package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/sharedconfig/sharedconfig/internal/replicacache"
	"github.com/sharedconfig/sharedconfig/jetstream"
	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// cacheEnv runs commands in this process against a server of its own, with
// a cache directory of its own.
type cacheEnv struct {
	t     *testing.T
	cache string // $XDG_CACHE_HOME/sharedconfig
}

func newCacheEnv(t *testing.T) *cacheEnv {
	srv := jstest.Server(t)
	base := t.TempDir()
	for _, v := range []string{"XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"} {
		t.Setenv(v, filepath.Join(base, v))
	}
	t.Setenv("NATS_URL", srv.ClientURL())
	t.Setenv(noCacheEnv, "")
	return &cacheEnv{t: t, cache: filepath.Join(base, "XDG_CACHE_HOME", "sharedconfig")}
}

// run runs sharedconfig args and returns its stdout; status is its exit
// status, which must be want.
func (e *cacheEnv) run(want int, args ...string) string {
	e.t.Helper()
	var stdout, stderr bytes.Buffer
	if code := Main(append([]string{"-s", "cache", "--writer", "t"}, args...), strings.NewReader(""), &stdout, &stderr); code != want {
		e.t.Fatalf("%q: exit status %d, want %d; stderr: %s", args, code, want, stderr.String())
	}
	return stdout.String()
}

// file is the cache file of config name, which must exist.
func (e *cacheEnv) file(name string) string {
	e.t.Helper()
	files, _ := filepath.Glob(filepath.Join(e.cache, "SC_5_cache_"+name+"-*.cache"))
	if len(files) != 1 {
		e.t.Fatalf("cache files for %s: %q, want one", name, files)
	}
	return files[0]
}

// rewrite replaces old by new in the checkpoint of the cache file at path,
// and saves it as a valid file stamped as stamp (by default its own),
// without an index (so that a get reads the checkpoint).
func (e *cacheEnv) rewrite(path, old, new string, stamp *replicacache.Stamp) {
	e.t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	_, rest, _ := bytes.Cut(data, []byte("\n"))
	head, checkpoint, _ := bytes.Cut(rest, []byte("\n"))
	var own struct {
		replicacache.Stamp
		Revision uint64
		Length   int
	}
	if err := jsonUnmarshal(head, &own); err != nil {
		e.t.Fatal(err)
	}
	checkpoint = checkpoint[:own.Length] // without the index
	if stamp == nil {
		stamp = &own.Stamp
	}
	if !bytes.Contains(checkpoint, []byte(old)) {
		e.t.Fatalf("the cache file holds no %s: %s", old, checkpoint)
	}
	checkpoint = bytes.ReplaceAll(checkpoint, []byte(old), []byte(new))
	if err := replicacache.Save(path, *stamp, own.Revision, checkpoint, nil); err != nil {
		e.t.Fatal(err)
	}
}

// A one-shot command starts from the copy the last one left in the cache,
// and reads from the server only what was written since: a value changed
// in the file (which only its owner can write) shows until the key changes
// on the server. --no-cache and SHAREDCONFIG_NO_CACHE read it all.
func TestOneShotStartsFromTheCache(t *testing.T) {
	e := newCacheEnv(t)
	e.run(0, "put", "a", "1")
	e.run(0, "get", "a")
	path := e.file("someConfig")
	for p, want := range map[string]os.FileMode{path: 0o600, e.cache: 0o700} {
		if info, err := os.Stat(p); err != nil || info.Mode().Perm() != want {
			t.Fatalf("%s: %v, %v; want mode %s", p, info, err, want)
		}
	}
	e.rewrite(path, `"a":"1"`, `"a":"from the cache"`, nil)
	if out := e.run(0, "get", "a", "--raw"); out != "from the cache" {
		t.Fatalf("get a after a change in the cache file: %q; want the file's value", out)
	}
	e.run(0, "--no-cache", "put", "b", "2")
	if out := e.run(0, "get-all"); !strings.Contains(out, "from the cache") || !strings.Contains(out, "| 2 ") {
		t.Fatalf("get-all after a later put: %q; want the file's a and the server's b", out)
	}
	if out := e.run(0, "--no-cache", "get", "a", "--raw"); out != "1" {
		t.Fatalf("get --no-cache a: %q, want the server's 1", out)
	}
	t.Setenv(noCacheEnv, "1")
	if out := e.run(0, "get", "a", "--raw"); out != "1" {
		t.Fatalf("get a with %s=1: %q, want the server's 1", noCacheEnv, out)
	}
}

// A config destroyed and created again with another history (shorter, as
// long, longer) is read afresh, never mixed with the cached copy of the old
// one: not when the file is stamped with the old stream's creation time,
// nor when it claims the new one's (then the entry the copy stands on is
// not the new stream's).
func TestCacheOfADestroyedConfigIsNotUsed(t *testing.T) {
	for _, newPuts := range []int{1, 3, 6} {
		for _, restamp := range []bool{false, true} {
			e := newCacheEnv(t)
			name := "c" + string(rune('0'+newPuts))
			e.run(0, "-n", name, "put", "secret", "old-password")
			e.run(0, "-n", name, "put", "a", "1")
			e.run(0, "-n", name, "put", "b", "2")
			e.run(0, "-n", name, "get", "secret") // the cache at revision 4
			path := e.file(name)
			old, _ := os.ReadFile(path)
			e.run(0, "-n", name, "destroy", "--yes")
			for i := range newPuts {
				e.run(0, "-n", name, "--no-cache", "put", "new"+string(rune('0'+i)), "n")
			}
			if restamp {
				os.WriteFile(path, old, 0o600)
				e.run(0, "-n", name, "--no-cache", "get", "new0")
				e.restampLike(path, name)
			} else {
				os.WriteFile(path, old, 0o600)
			}
			e.run(1, "-n", name, "get", "secret", "--raw")
			e.run(1, "-n", name, "get", "secret")
			out := e.run(0, "-n", name, "get-all")
			if strings.Contains(out, "old-password") || strings.Contains(out, "| a ") || !strings.Contains(out, "new0") {
				t.Fatalf("%d new puts, restamped %v: get-all: %q; want the new config alone", newPuts, restamp, out)
			}
		}
	}
}

// restampLike stamps the cache file at path with the stream the server now
// holds for config name (its creation time), keeping its checkpoint.
func (e *cacheEnv) restampLike(path, name string) {
	e.t.Helper()
	data, _ := os.ReadFile(path)
	_, rest, _ := bytes.Cut(data, []byte("\n"))
	head, checkpoint, _ := bytes.Cut(rest, []byte("\n"))
	var stamp replicacache.Stamp
	var length struct{ Length int }
	if err := jsonUnmarshal(head, &stamp); err != nil || jsonUnmarshal(head, &length) != nil {
		e.t.Fatal(err)
	}
	checkpoint = checkpoint[:length.Length] // without the index
	// A fresh read of the new stream writes a file stamped for it.
	fresh := e.cache + "/fresh"
	os.MkdirAll(fresh, 0o700)
	e.t.Setenv("XDG_CACHE_HOME", fresh)
	e.run(0, "-n", name, "get", "new0")
	e.t.Setenv("XDG_CACHE_HOME", filepath.Dir(e.cache))
	files, _ := filepath.Glob(filepath.Join(fresh, "sharedconfig", "*.cache"))
	if len(files) != 1 {
		e.t.Fatalf("fresh cache files: %q", files)
	}
	newData, _ := os.ReadFile(files[0])
	_, newRest, _ := bytes.Cut(newData, []byte("\n"))
	newHead, _, _ := bytes.Cut(newRest, []byte("\n"))
	if err := jsonUnmarshal(newHead, &stamp); err != nil {
		e.t.Fatal(err)
	}
	if err := replicacache.Save(path, stamp, 4, checkpoint, nil); err != nil {
		e.t.Fatal(err)
	}
}

// A cache file another user owns, or others can write, or that is damaged
// or another config's, is not used, and is replaced by a good one.
func TestUntrustedCacheFileIsReplaced(t *testing.T) {
	spoil := map[string]func(e *cacheEnv, path string){
		"mode 0666": func(e *cacheEnv, path string) { os.Chmod(path, 0o666) },
		"another user's": func(e *cacheEnv, path string) {
			if os.Getuid() != 0 {
				e.t.Skip("only root can give a file to another user")
			}
			os.Chown(path, 4242, 4242)
		},
		"cut short": func(e *cacheEnv, path string) {
			data, _ := os.ReadFile(path)
			os.WriteFile(path, data[:len(data)-3], 0o600)
		},
		"garbage": func(e *cacheEnv, path string) { os.WriteFile(path, []byte("\x00\xff garbage {"), 0o600) },
		"empty":   func(e *cacheEnv, path string) { os.WriteFile(path, nil, 0o600) },
		"another config's": func(e *cacheEnv, path string) {
			e.run(0, "-n", "other", "put", "a", "evil")
			e.run(0, "-n", "other", "get", "a")
			data, _ := os.ReadFile(e.file("other"))
			os.WriteFile(path, data, 0o600)
		},
	}
	for name, spoilIt := range spoil {
		t.Run(name, func(t *testing.T) {
			e := newCacheEnv(t)
			e.run(0, "put", "a", "1")
			e.run(0, "put", "b", "2")
			e.run(0, "get", "a")
			path := e.file("someConfig")
			e.rewrite(path, `"a":"1"`, `"a":"evil"`, nil)
			spoilIt(e, path)
			if out := e.run(0, "get", "a", "--raw"); out != "1" {
				t.Fatalf("get a with a cache file %s: %q, want the server's 1", name, out)
			}
			info, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			if info.Mode().Perm() != 0o600 || int(info.Sys().(*syscall.Stat_t).Uid) != os.Getuid() {
				t.Fatalf("the file after the get: mode %s, uid %d; want a new 0600 file of this user", info.Mode().Perm(), info.Sys().(*syscall.Stat_t).Uid)
			}
			if _, _, err := replicacache.Load(path, replicacache.Stamp{}); err == nil {
				t.Fatal("loaded for no stream")
			}
			if out := e.run(0, "get", "b", "--raw"); out != "2" {
				t.Fatalf("get b from the new file: %q", out)
			}
		})
	}
}

func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// A config destroyed and created again, whose new stream ends at the
// revision of the old copy with a message that carries the ID of the
// copy's entry (anyone who may publish on the subject chooses IDs), is
// not taken for the old one by get --raw: the server's time on the entry
// differs.
func TestGetRawDoesNotTrustACopiedEntryID(t *testing.T) {
	e := newCacheEnv(t)
	e.run(0, "-n", "c", "put", "secret", "old-password")
	e.run(0, "-n", "c", "put", "a", "1")
	e.run(0, "-n", "c", "get-all") // the copy stands at revision 3
	path := e.file("c")
	old, _ := os.ReadFile(path)
	var h struct{ Revision uint64 }
	_, rest, _ := bytes.Cut(old, []byte("\n"))
	head, _, _ := bytes.Cut(rest, []byte("\n"))
	if err := json.Unmarshal(head, &h); err != nil || h.Revision != 3 {
		t.Fatalf("cache header %s: %v; want revision 3", head, err)
	}
	_, checkpoint, _ := bytes.Cut(rest, []byte("\n"))
	_, afterMagic, _ := bytes.Cut(checkpoint, []byte("\n"))
	cpHead, _, _ := bytes.Cut(afterMagic, []byte("\n"))
	var pos struct{ ID string }
	if err := json.Unmarshal(cpHead, &pos); err != nil || pos.ID == "" {
		t.Fatalf("checkpoint header %s: %v", cpHead, err)
	}
	e.run(0, "-n", "c", "destroy", "--yes")
	e.run(0, "-n", "c", "--no-cache", "put", "new0", "n") // revisions 1 and 2
	nc, err := nats.Connect(os.Getenv("NATS_URL"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := natsjs.New(nc)
	msg := nats.NewMsg(jetstream.Subject("cache", "c"))
	msg.Header.Set(natsjs.MsgIDHeader, pos.ID)
	msg.Data = []byte("forged")
	if ack, err := js.PublishMsg(context.Background(), msg); err != nil || ack.Sequence != 3 {
		t.Fatalf("forged publish: %v, %+v; want sequence 3", err, ack)
	}
	os.WriteFile(path, old, 0o600)
	e.run(1, "-n", "c", "get", "secret", "--raw")
}
