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
