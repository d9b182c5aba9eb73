package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
)

// permsEnv runs commands in this process as users of a server with
// authorization, with a cache directory of the test's own.
type permsEnv struct {
	t   *testing.T
	url func(user string) string
}

func newPermsEnv(t *testing.T, o *server.Options, perms map[string]*server.Permissions) *permsEnv {
	base := t.TempDir()
	for _, v := range []string{"XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"} {
		t.Setenv(v, filepath.Join(base, v))
	}
	t.Setenv(noCacheEnv, "")
	return &permsEnv{t: t, url: jstest.Users(t, o, perms)}
}

// run runs sharedconfig args as user, with stdin, and returns its exit
// status, stdout and stderr, and how long it took.
func (e *permsEnv) run(user, stdin string, args ...string) (code int, stdout, stderr string, took time.Duration) {
	e.t.Helper()
	var out, errs bytes.Buffer
	start := time.Now()
	code = Main(append([]string{"--server", e.url(user), "-s", "perm", "--writer", user}, args...), strings.NewReader(stdin), &out, &errs)
	return code, out.String(), errs.String(), time.Since(start)
}

// quick runs sharedconfig args as user and fails the test unless it exits
// 0 within 2s (the timeout is 5s) and says nothing on stderr.
func (e *permsEnv) quick(user, stdin string, args ...string) string {
	e.t.Helper()
	code, stdout, stderr, took := e.run(user, stdin, args...)
	if code != 0 || stderr != "" || took > 2*time.Second {
		e.t.Fatalf("%s %q: exit status %d in %v, stderr %q; want 0 at once, and nothing on stderr", user, args, code, took, stderr)
	}
	return stdout
}

// cacheHead is the head of the cache file of perm/someConfig (its stamp).
func (e *permsEnv) cacheHead() string {
	e.t.Helper()
	files, _ := filepath.Glob(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "sharedconfig", "SC_4_perm_someConfig-*.cache"))
	if len(files) != 1 {
		e.t.Fatalf("cache files: %q, want one", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		e.t.Fatal(err)
	}
	lines := strings.SplitN(string(data), "\n", 3)
	if len(lines) < 3 {
		e.t.Fatalf("the cache file is %d bytes", len(data))
	}
	return lines[1]
}

// script is what a shell runs in the permission tests: following, a
// write, a refresh, every read, a lease, a compaction.
const script = `FOLLOW ON
PUT b, 2
REFRESH
GET_ALL
GET a
LOG
HISTORY a
REGISTER_LEASE l, 10s
PUT_WITH_LEASE m, 1, l
LEASES
COMPACT
STATUS
`

// A user who may not ask for direct gets, on a stream that serves them,
// uses sharedconfig as any other: every command at once, and nothing said
// of the refused requests.
func TestCommandsWithoutDirectGetPermission(t *testing.T) {
	e := newPermsEnv(t, &server.Options{}, map[string]*server.Permissions{"u": {
		Publish:   &server.SubjectPermission{Allow: []string{"$JS.API.>", "sharedconfig.>"}, Deny: []string{"$JS.API.DIRECT.GET.>"}},
		Subscribe: &server.SubjectPermission{Allow: []string{"sharedconfig.>", "_INBOX.>"}},
	}})
	e.quick("admin", "", "put", "a", "0")
	e.quick("admin", "", "get-all") // a copy in the cache, saved by a user who may ask for direct gets
	e.quick("u", "", "put", "a", "1")
	e.quick("admin", "", "put", "a", "2") // the user's copy is behind
	if out := e.quick("u", "", "get", "a", "--raw"); out != "2" {
		t.Errorf("get a --raw: %q, want 2", out)
	}
	e.quick("admin", "", "put", "a", "3")
	e.quick("admin", "", "get-all") // saves a copy (a put leaves none of its own write)
	if !strings.Contains(e.cacheHead(), `"direct_gets":true`) {
		t.Fatal("the admin's copy in the cache does not say the stream serves direct gets")
	}
	e.quick("admin", "", "put", "a", "4")
	if out := e.quick("u", "", "get-all"); !strings.Contains(out, "| 4 ") {
		t.Errorf("get-all: %q, want a at 4", out)
	}
	if head := e.cacheHead(); strings.Contains(head, "direct_gets") {
		t.Errorf("the copy a user who may not ask for direct gets left says the stream serves them: %s", head)
	}
	if out := e.quick("u", script); !strings.Contains(out, "Property 'b' added") || !strings.Contains(out, "Compacted") {
		t.Errorf("the shell said %q", out)
	}
}

// A user granted exactly the permissions docs/operations.md lists can use
// every command: with direct gets, and without (they are optional).
func TestDocumentedPermissionsAreEnough(t *testing.T) {
	documented := jstest.DocumentedPermissions(t)
	e := newPermsEnv(t, &server.Options{}, map[string]*server.Permissions{"doc": documented, "nodirect": jstest.WithoutDirectGets(documented)})
	for _, user := range []string{"doc", "nodirect"} {
		t.Run(user, func(t *testing.T) {
			e.t = t
			n := []string{"-n", user}
			e.quick(user, "", append(n, "put", "a", "1")...)
			// Each read after another's write catches up.
			for i, read := range [][]string{{"get", "a"}, {"get", "a", "--raw"}, {"get-all"}} {
				e.quick("admin", "", append(n, "put", "x", strconv.Itoa(i))...)
				e.quick(user, "", append(n, read...)...)
			}
			if out := e.quick(user, script, n...); !strings.Contains(out, "Compacted") {
				t.Errorf("the shell said %q", out)
			}
			e.quick(user, "", append(n, "exec", "REMOVE a")...)
			if out := e.quick(user, "", "list"); !strings.Contains(out, user) {
				t.Errorf("list: %q", out)
			}
			exported := e.quick(user, "", append(n, "export")...)
			e.quick(user, exported, append(n, "import", "--replace", "-")...)
			e.quick(user, "", append(n, "destroy", "--yes")...)
		})
	}
}

// A permission sharedconfig needs and does not have is said in one line
// that names it, at once, not after the timeout as a server that does not
// answer or a leader being elected.
func TestMissingPermissionIsOneLine(t *testing.T) {
	all := &server.SubjectPermission{Allow: []string{">"}}
	e := newPermsEnv(t, &server.Options{}, map[string]*server.Permissions{
		"nowrite": {Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: []string{"sharedconfig.perm.someConfig"}}, Subscribe: all},
		"noopen":  {Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: []string{"$JS.API.STREAM.INFO.>"}}, Subscribe: all},
	})
	e.quick("admin", "", "put", "a", "0")
	for _, c := range []struct {
		user, want string
		code       int
	}{
		{"nowrite", `^!!!! Error: .*publish to "sharedconfig.perm.someConfig".*nothing was (written|changed)`, 1},
		{"noopen", `^sharedconfig: opening stream SC_4_perm_someConfig: .*publish to "\$JS.API.STREAM.INFO.SC_4_perm_someConfig"`, 2},
	} {
		code, _, stderr, took := e.run(c.user, "", "put", "a", "1")
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if code != c.code || len(lines) != 1 || !regexp.MustCompile(c.want).MatchString(lines[0]) || took > 2*time.Second {
			t.Errorf("%s: put: exit status %d in %v, stderr %q; want %d at once, and one line matching %s", c.user, code, took, stderr, c.code, c.want)
		}
	}
}
