package demo_test

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/sharedconfig/sharedconfig/internal/timeline"
)

// findBrowser is Debian's chromium, or another Chromium-based browser.
func findBrowser() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// pageFacts is what the test reads from the page once its script ran.
type pageFacts struct {
	lanes, tries, revisions, retries int
	ready                            string
}

// TestRacePageInABrowser draws a real race and opens the page in headless
// Chromium: no console errors, as many lanes and tries in the DOM as the
// run had, and a screenshot that is not blank. SHAREDCONFIG_SCREENSHOT
// names a file to keep the screenshot in (docs/img/demo-race.png is made
// so).
func TestRacePageInABrowser(t *testing.T) {
	t.Parallel()
	browser := findBrowser()
	if browser == "" {
		t.Skip("!!!!!!!! NO BROWSER: chromium is not installed, so the HTML timeline is NOT checked in a browser. Install it: apt-get install -y chromium")
	}
	res, _ := runScenario(t, "race", 3)
	facts, shot, problems := openInBrowser(t, browser, writePage(t, res.Timeline))
	for _, p := range problems {
		t.Errorf("the page logged: %s", p)
	}
	tl := res.Timeline
	if facts.ready != "yes" || facts.lanes != len(tl.Lanes) || facts.tries != len(tl.Tries) || facts.revisions != len(tl.Tape) {
		t.Errorf("the DOM has %+v; want the script run, %d lanes, %d tries, %d revisions", facts, len(tl.Lanes), len(tl.Tries), len(tl.Tape))
	}
	if want := 2; facts.retries != want { // bob's and carol's refused tries
		t.Errorf("%d arrows from a refused try to its retry, want %d", facts.retries, want)
	}
	checkNotBlank(t, shot)
	if keep := os.Getenv("SHAREDCONFIG_SCREENSHOT"); keep != "" {
		if err := os.WriteFile(keep, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// writePage writes tl as a page in a file of its own, and names the file.
func writePage(t *testing.T, tl *timeline.Timeline) string {
	page := filepath.Join(t.TempDir(), "timeline.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := timeline.WriteHTML(f, tl); err != nil {
		t.Fatal(err)
	}
	return page
}

// openPage opens page in headless browser, once its script has run, for
// the rest of the test; problems gives what the page logged.
func openPage(t *testing.T, browser, page string) (ctx context.Context, problems func() []string) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1100, 420))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancelTime := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancelTime)
	problems = listenForProblems(ctx, t, browser)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+page), chromedp.WaitVisible(`body[data-ready="yes"]`)); err != nil {
		t.Fatalf("driving %s: %v", browser, err)
	}
	return ctx, problems
}

func openInBrowser(t *testing.T, browser, page string) (pageFacts, []byte, []string) {
	ctx, problems := openPage(t, browser, page)
	count := func(js string) int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](js))
		if err != nil {
			t.Fatalf("evaluating %s: %v", js, err)
		}
		return n
	}
	facts := pageFacts{
		lanes:     count(`document.querySelectorAll("g.lane").length`),
		tries:     count(`document.querySelectorAll("g.try").length`),
		revisions: count(`document.querySelectorAll("g.rev").length`),
		retries:   count(`document.querySelectorAll("path.retry").length`),
	}
	ready, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.getAttribute("data-ready")`))
	if err != nil {
		t.Fatal(err)
	}
	facts.ready = ready
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("taking a screenshot: %v", err)
	}
	return facts, shot, problems()
}

// listenForProblems collects the page's exceptions, console errors and
// warnings, and requests to anywhere but the page's own file.
func listenForProblems(ctx context.Context, t *testing.T, browser string) func() []string {
	var mu sync.Mutex
	var problems []string
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				problems = append(problems, "console "+string(ev.Type))
			}
		case *network.EventRequestWillBeSent:
			if !strings.HasPrefix(ev.Request.URL, "file:") && !strings.HasPrefix(ev.Request.URL, "data:") {
				problems = append(problems, "a request to the network: "+ev.Request.URL)
			}
		}
	})
	if err != nil {
		t.Fatalf("starting %s: %v", browser, err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
}

// checkNotBlank: the screenshot has the drawing's colours, not one.
func checkNotBlank(t *testing.T, shot []byte) {
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	colours := map[[3]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
		}
	}
	if len(colours) < 8 || b.Dx() < 400 {
		t.Errorf("the screenshot (%v) has %d colours: blank", b, len(colours))
	}
}

// TestCombinePageInABrowser draws a real combine run and opens the page in
// headless Chromium: each carried try is a box of its own colour and
// dashed outline, joined by a dashed line to the entry on the tape that
// carried it, under which the handing writer is named.
func TestCombinePageInABrowser(t *testing.T) {
	t.Parallel()
	browser := findBrowser()
	if browser == "" {
		t.Skip("!!!!!!!! NO BROWSER: chromium is not installed, so the HTML timeline is NOT checked in a browser. Install it: apt-get install -y chromium")
	}
	res, _ := runScenarioAt(t, "combine", 3, 2)
	tl := res.Timeline
	var carried, lines, names int
	for _, tr := range tl.Tries {
		if tr.Outcome == timeline.Carried {
			carried++
			if slices.ContainsFunc(tl.Tape, func(e timeline.Entry) bool { return e.Revision == tr.Revision }) {
				lines++
			}
		}
	}
	for _, e := range tl.Tape {
		names += len(e.Carries)
	}
	if carried == 0 {
		t.Fatalf("no carried try drawn: %+v", tl.Tries)
	}
	page := writePage(t, tl)
	ctx, problems := openPage(t, browser, page)
	look := func(js string) string {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("evaluating %s: %v", js, err)
		}
		return v
	}
	got := look(`[document.querySelectorAll("g.try.carried").length, document.querySelectorAll("line.carry").length,
		document.querySelectorAll("text.carrier").length].join(" ")`)
	if want := fmt.Sprintf("%d %d %d", carried, lines, names); got != want {
		t.Errorf("carried tries, lines to their entries, names under entries: %s in the DOM, want %s", got, want)
	}
	// Drawn, and unlike a committed try: its own fill and a dashed outline.
	style := look(`(function(){var r=document.querySelector("g.try.carried rect"), c=document.querySelector("g.try.committed rect");
		var s=getComputedStyle(r), b=r.getBBox();
		return [b.width>0 && b.height>0, s.fill!=getComputedStyle(c).fill, s.strokeDasharray!="none"].join(" ")})()`)
	if style != "true true true" {
		t.Errorf("a carried try's box: drawn, its own fill, dashed: %s", style)
	}
	if text := look(`document.querySelector("g.try.carried text").textContent`); !strings.Contains(text, "⇢") {
		t.Errorf("a carried try is labelled %q, want base⇢revision", text)
	}
	for _, p := range problems() {
		t.Errorf("the page logged: %s", p)
	}
}
