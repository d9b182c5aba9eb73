package repl

import (
	"strings"
	"testing"
	"time"

	"github.com/sharedconfig/sharedconfig/jetstream/jstest"
	"github.com/sharedconfig/sharedconfig/sharedconfig"
)

// A value of hundreds of kilobytes is shown whole by GET, and as its start
// and its size by the lines that describe changes: LOG, HISTORY, follow
// mode's, completion's menu.
func TestLinesThatDescribeChangesShowTheStartOfALongValue(t *testing.T) {
	srv := jstest.Server(t)
	sh, out := openShell(t, srv, "w", Options{})
	big := strings.Repeat("a", 600<<10)
	run(sh, out, "PUT big, "+big, "PUT big2, \x1b[2J"+big)
	if got := run(sh, out, "GET big"); !strings.Contains(got, big) {
		t.Errorf("GET big printed %d bytes, not the whole value", len(got))
	}
	preview := `"` + strings.Repeat("a", previewChars) + `…" (600.0 KiB)`
	for _, line := range []string{"LOG 2", "HISTORY big"} {
		got := run(sh, out, line)
		if len(got) > 4<<10 {
			t.Errorf("%s printed %d bytes", line, len(got))
		}
		want := preview
		if line == "HISTORY big" {
			want = "'" + strings.Repeat("a", previewChars) + "…' (600.0 KiB)"
		}
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %s:\n%.2000s", line, want, got)
		}
	}
	if got := run(sh, out, "LOG 1"); !strings.Contains(got, `"\x1b[2J`+strings.Repeat("a", previewChars-4)+`…" (600.0 KiB)`) {
		t.Errorf("LOG 1 does not show the start of the value escaped:\n%.2000s", got)
	}
	if err := sh.SetFollow(true); err != nil {
		t.Fatal(err)
	}
	defer sh.SetFollow(false)
	sh.heard(sharedconfig.Change{Revision: 99, Writer: "other", Ops: []sharedconfig.Op{{Kind: "put", Key: big, Value: big}}}, "")
	if got := out.take(); len(got) > 1<<10 || !strings.Contains(got, preview+" , "+preview) {
		t.Errorf("follow mode printed %d bytes:\n%.2000s", len(got), got)
	}
	for _, s := range sh.Complete("GET bi") {
		if len(s.Description) > 1<<10 {
			t.Errorf("completion of %s describes it in %d bytes", s.Text, len(s.Description))
		}
	}
}

func TestByteSize(t *testing.T) {
	for n, want := range map[int]string{0: "0 bytes", 1023: "1023 bytes", 1024: "1.0 KiB", 600 << 10: "600.0 KiB", 2 << 20: "2.0 MiB"} {
		if got := byteSize(n); got != want {
			t.Errorf("byteSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// A writer's name, a lease's and its holder's come from the entries, which
// anyone publishing on the config's subject writes: LOG, HISTORY and follow
// mode show their start and size too.
func TestLinesThatDescribeChangesShowTheStartOfLongNames(t *testing.T) {
	srv := jstest.Server(t)
	long := strings.Repeat("w", 1000)
	writer, wout := openShell(t, srv, long, Options{})
	run(writer, wout, "PUT k, v")
	sh, out := openShell(t, srv, "reader", Options{})
	if err := sh.SetFollow(true); err != nil {
		t.Fatal(err)
	}
	defer sh.SetFollow(false)
	text := run(sh, out, "LOG 1", "HISTORY k")
	sh.heard(sharedconfig.Change{Revision: 99, Writer: long, Ops: []sharedconfig.Op{
		{Kind: "register_lease", Lease: long, Holder: long, TTL: time.Second}, {Kind: "revoke_lease", Lease: long}}}, "")
	text += out.take()
	if strings.Contains(text, strings.Repeat("w", previewChars+1)) {
		t.Errorf("a name is shown whole:\n%.3000s", text)
	}
	if n := strings.Count(text, "…\" (1000 bytes)") + strings.Count(text, "… (1000 bytes)"); n < 6 {
		t.Errorf("%d names shown by their start and size, want 6 (the writer in LOG, HISTORY and follow mode; two leases and a holder):\n%.3000s", n, text)
	}
}
