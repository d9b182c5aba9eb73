package timeline

import (
	"bytes"
	"strings"
	"testing"
)

// What keys, values and writers hold is text on the page, never markup,
// and every try, lane, revision and lease is drawn.
func TestHTMLDrawsEverythingAsText(t *testing.T) {
	tl := busyTimeline(3)
	tl.Lanes[1] = `<img src=x onerror=alert(1)>`
	tl.Tries[0].What = `</script><script>alert(1)</script>`
	tl.Tape[0].Text = `"><svg onload=alert(1)>`
	var b bytes.Buffer
	if err := WriteHTML(&b, tl); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"<script>alert", "<img src=x", "<svg onload"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q as markup", bad)
		}
	}
	counts := map[string]int{`<g class="lane"`: len(tl.Lanes), `<g class="try `: len(tl.Tries), `<g class="rev`: len(tl.Tape), `<g class="lease"`: len(tl.Leases)}
	for mark, want := range counts {
		if got := strings.Count(page, mark); got != want {
			t.Errorf("%d of %s, want %d", got, mark, want)
		}
	}
	if strings.Contains(page, "http") {
		t.Error("the page names an address; it must load nothing")
	}
}

// A carried try is its own kind of box, joined by a dashed line to the entry
// that carried it, under which the handing writer is named; a page with
// no carried try has none of it.
func TestHTMLDrawsACarriedTry(t *testing.T) {
	tl := &Timeline{Lanes: []string{"alice", "bob"}, Tries: []Try{
		{Lane: 1, N: 1, Base: 3, Revision: 4, Outcome: Committed},
		{Lane: 0, N: 2, Base: 3, Revision: 4, Outcome: Carried},
	}, Tape: []Entry{{Revision: 4, Lane: 1, Text: "PUT bob = 1; PUT alice = 1", Carries: []string{"alice"}}}}
	var b bytes.Buffer
	if err := WriteHTML(&b, tl); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{`<g class="try carried"`, `>3⇢4</text>`, `<line class="carry"`, `carried in bob&#39;s entry at r4`,
		`<g class="rev carrying"`, `dx="2">&#43;alice</text>`, `carries the PUTs handed by alice`, `⇢: handed to another writer`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
	tl.Tries, tl.Tape = tl.Tries[:1], []Entry{{Revision: 4, Lane: 1, Text: "PUT bob = 1"}}
	b.Reset()
	if err := WriteHTML(&b, tl); err != nil {
		t.Fatal(err)
	}
	for _, not := range []string{"⇢", `class="carry"`, `class="carrier"`, `class="rev carrying"`} {
		if strings.Contains(b.String(), not) {
			t.Errorf("a page with no carried try holds %q", not)
		}
	}
}

// What anyone stored reaches the page as the text timeline shows it:
// controls and bidi overrides escaped, so that nothing reorders what the
// reader sees, and a newline in a value cannot forge a line of the hover
// text (a "server time" of its own, say).
func TestHTMLEscapesWhatTheTextTimelineEscapes(t *testing.T) {
	forged := "v\nserver time 00:00:00.000000 UTC"
	tl := &Timeline{Title: "t", Lanes: []string{"alice\u202e", "bob\x1b]0;x\x07"}, Tries: []Try{
		{Lane: 0, N: 1, Base: 1, Revision: 2, Outcome: Committed, What: "PUT k , " + forged},
		{Lane: 1, N: 1, Base: 1, Revision: 2, Outcome: Carried, What: "PUT k\x1b[2J , 1"},
	}, Tape: []Entry{{Revision: 2, Lane: 0, Text: "PUT k = " + forged, Carries: []string{"bob\x1b]0;x\x07"}}},
		Leases: []Lease{{Name: "L\u202e\x07", Lane: 0}}}
	var b bytes.Buffer
	if err := WriteHTML(&b, tl); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.ContainsAny(page, "\x1b\x07\u202e") {
		t.Error("the page holds a control character or bidi override a writer stored")
	}
	if strings.Contains(page, forged) {
		t.Error("a newline in a value reaches the page as a line of its own")
	}
	for _, want := range []string{`alice\u202e`, `v\nserver time`, `bob\x1b]0;x\a`, `L\u202e\a`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q, as the text timeline shows it", want)
		}
	}
}
