package timeline

import (
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"time"
)

// The page's geometry, in SVG units.
const (
	left    = 150 // room for the lanes' names
	top     = 50
	slotW   = 58 // one try per slot, in the order they happened
	laneH   = 56
	tryW    = 48
	tryH    = 28
	leaseH  = 30
	padding = 40
)

// WriteHTML writes t as one self-contained HTML page: inline SVG, CSS and a
// little script, nothing loaded from the network. Tries sit in lanes in the
// order they happened (hover for times), arrows go from a refused try to
// the writer's next try, the stream is a tape of revisions below, and
// leases are bars on the server's clock.
func WriteHTML(w io.Writer, t *Timeline) error {
	return pageTemplate.Execute(w, layout(shown(t)))
}

// shown is a copy of t whose names and texts (anyone's keys, values and
// writer names) are escaped as the text timeline shows them: the page's
// HTML escaping keeps markup out, but a bidi override would still reorder
// what the reader sees, and a newline in a value would forge a line of
// the hover text.
func shown(t *Timeline) *Timeline {
	c := *t
	c.Title, c.Note = printable(t.Title), printable(t.Note)
	c.Lanes = make([]string, len(t.Lanes))
	for i, name := range t.Lanes {
		c.Lanes[i] = printable(name)
	}
	c.Tries = slices.Clone(t.Tries)
	for i := range c.Tries {
		c.Tries[i].What, c.Tries[i].Section = printable(c.Tries[i].What), printable(c.Tries[i].Section)
	}
	c.Tape = slices.Clone(t.Tape)
	for i := range c.Tape {
		e := &c.Tape[i]
		e.Writer, e.Text = printable(e.Writer), printable(e.Text)
		e.Carries = make([]string, len(t.Tape[i].Carries))
		for j, name := range t.Tape[i].Carries {
			e.Carries[j] = printable(name)
		}
	}
	c.Leases = slices.Clone(t.Leases)
	for i := range c.Leases {
		c.Leases[i].Name = printable(c.Leases[i].Name)
	}
	return &c
}

type page struct {
	Title, Note    string
	Width, Height  int
	Lanes          []laneBox
	Tries          []tryBox
	Arrows         []arrow
	TapeY          int
	Tape           []tapeBox
	Lands          []arrow
	Carries        []arrow // from a carried try to the entry that carried it
	Carrying       bool    // some try was carried: the note says how it is drawn
	Leases         []leaseBar
	LeaseAxisY     int
	NLanes, NTries int
}

type laneBox struct {
	Name string
	Y    int
}

type tryBox struct {
	X, Y       int
	Class      string
	Label      string
	Info       string
	Lane, Base int
}

type arrow struct {
	X1, Y1, X2, Y2, CY int
	Label              string // what happened between the tries
}

type tapeBox struct {
	X, Y     int
	Class    string
	Label    string
	Info     string
	Carriers []textLine // under the box: the writers whose PUTs it carries
}

type textLine struct {
	Y    int
	Text string
}

// carrierLineH is the height of one name under a tape box.
const carrierLineH = 13

type leaseBar struct {
	X, Y, W int
	EndX    int
	EndY1   int
	EndY2   int
	Ended   bool
	Label   string
	Info    string
}

func layout(t *Timeline) page {
	p := page{Title: t.Title, Note: t.Note, NLanes: len(t.Lanes), NTries: len(t.Tries)}
	for i, name := range t.Lanes {
		p.Lanes = append(p.Lanes, laneBox{Name: name, Y: top + i*laneH})
	}
	landedAt := p.layoutTries(t)
	p.TapeY = top + len(t.Lanes)*laneH + 30
	p.layoutTape(t, landedAt)
	p.layoutCarries(t)
	p.LeaseAxisY = p.TapeY + tryH + 50 + p.carriersH()
	p.layoutLeases(t)
	p.Width = p.Width0(t)
	for _, l := range p.Leases {
		p.Width = max(p.Width, l.X+l.W+padding, l.EndX+padding)
	}
	p.Height = p.TapeY + tryH + p.carriersH() + padding
	if len(t.Leases) > 0 {
		p.Height = p.LeaseAxisY + len(t.Leases)*leaseH + padding
	}
	return p
}

// layoutTries puts each try in its lane, in the order they happened, with
// an arrow from each refused try to its write's next try. It returns the x
// of the try that landed each revision.
func (p *page) layoutTries(t *Timeline) map[uint64]int {
	lead := leadingUnlanded(t)
	landedAt := map[uint64]int{}
	for i, tr := range t.Tries {
		x, y := left+(lead+i)*slotW, top+tr.Lane*laneH+(laneH-tryH)/2
		p.Tries = append(p.Tries, tryBox{X: x, Y: y, Class: string(tr.Outcome), Label: tryLabel(tr),
			Info: fmt.Sprintf("%s · %s\n%s\n%s%s", t.laneName(tr.Lane), tr.What, tr.Describe(), stamp(tr.At), sectionNote(tr)), Lane: tr.Lane, Base: int(tr.Base)})
		if landsEntry(tr) {
			landedAt[tr.Revision] = x
		}
		if tr.Outcome == Refused {
			if j := nextTry(t.Tries, i); j >= 0 {
				y2 := top + t.Tries[j].Lane*laneH + (laneH-tryH)/2
				p.Arrows = append(p.Arrows, arrow{X1: x + tryW/2, Y1: y, X2: left + (lead+j)*slotW + tryW/2, Y2: y2, CY: min(y, y2) - 18,
					Label: fmt.Sprintf("caught up to r%d", tr.CaughtUp)})
			}
		}
	}
	return landedAt
}

// landsEntry: the try appended the entry at its Revision.
func landsEntry(tr Try) bool {
	return tr.Revision != 0 && tr.Outcome != Refused && tr.Outcome != Confirmed && tr.Outcome != Carried
}

// layoutCarries draws a dashed line from each carried try to the entry on
// the tape that carried it, where the tape shows that entry.
func (p *page) layoutCarries(t *Timeline) {
	boxAt := map[uint64]tapeBox{}
	for i, e := range t.Tape {
		boxAt[e.Revision] = p.Tape[i]
	}
	for i, tr := range t.Tries {
		if tr.Outcome != Carried {
			continue
		}
		p.Carrying = true
		box, ok := boxAt[tr.Revision]
		if !ok {
			continue
		}
		tb := p.Tries[i]
		p.Carries = append(p.Carries, arrow{X1: tb.X + tryW/2, Y1: tb.Y + tryH, X2: box.X + tryW/2, Y2: box.Y,
			Label: fmt.Sprintf("carried in %s's entry at r%d", t.carrierOf(tr.Revision), tr.Revision)})
	}
}

// carriersH is the room the names under the tape's boxes take.
func (p *page) carriersH() int {
	most := 0
	for _, tb := range p.Tape {
		most = max(most, len(tb.Carriers))
	}
	if most == 0 {
		return 0
	}
	return most*carrierLineH + 6
}

// leadingUnlanded counts the revisions at the tape's start that no try
// drawn landed (the initial snapshot, say): the tries start after them, so
// that each revision can sit under the try that landed it.
func leadingUnlanded(t *Timeline) int {
	landed := map[uint64]bool{}
	for _, tr := range t.Tries {
		if landsEntry(tr) {
			landed[tr.Revision] = true
		}
	}
	for i, e := range t.Tape {
		if landed[e.Revision] {
			return i
		}
	}
	return 0
}

// nextTry is the index of the next try of try i's write, or -1.
func nextTry(tries []Try, i int) int {
	for j := i + 1; j < len(tries); j++ {
		if tries[j].Write == tries[i].Write && tries[j].Lane == tries[i].Lane {
			return j
		}
	}
	return -1
}

func sectionNote(tr Try) string {
	if tr.Section == "" {
		return ""
	}
	return "\n(" + tr.Section + ")"
}

func tryLabel(tr Try) string {
	switch tr.Outcome {
	case Committed, Snapshot:
		return fmt.Sprintf("%d→%d", tr.Base, tr.Revision)
	case Refused:
		return fmt.Sprintf("%d✗%d", tr.Base, tr.Current)
	case Confirmed:
		return fmt.Sprintf("%d =", tr.Base)
	case Carried:
		return fmt.Sprintf("%d⇢%d", tr.Base, tr.Revision)
	default:
		return fmt.Sprintf("r%d", tr.Revision)
	}
}

// layoutTape puts each revision under the try that landed it where it can,
// and after the one before otherwise.
func (p *page) layoutTape(t *Timeline, landedAt map[uint64]int) {
	next := left
	for _, e := range t.Tape {
		x := next
		if lx, ok := landedAt[e.Revision]; ok && lx >= next {
			x = lx
			p.Lands = append(p.Lands, arrow{X1: lx + tryW/2, Y1: top + e.Lane*laneH + (laneH+tryH)/2, X2: x + tryW/2, Y2: p.TapeY})
		}
		class := "rev"
		if e.Snapshot {
			class += " snap"
		}
		if e.Dropped {
			class += " dropped"
		}
		kind := e.Text
		if e.Snapshot {
			kind = "snapshot: " + kind
		}
		tb := tapeBox{X: x, Y: p.TapeY, Class: class, Label: fmt.Sprintf("r%d", e.Revision),
			Info: fmt.Sprintf("r%d by %s\n%s\nserver time %s", e.Revision, t.laneName(e.Lane), kind, stamp(e.Time))}
		if len(e.Carries) > 0 {
			tb.Class += " carrying"
			tb.Info += "\ncarries the PUTs handed by " + strings.Join(e.Carries, ", ")
			for i, name := range e.Carries {
				tb.Carriers = append(tb.Carriers, textLine{Y: p.TapeY + tryH + (i+1)*carrierLineH, Text: "+" + name})
			}
		}
		p.Tape = append(p.Tape, tb)
		next = x + tryW + 6
	}
}

// layoutLeases draws each lease as a bar from the entry that set its
// deadline to the deadline, on one axis of server time.
func (p *page) layoutLeases(t *Timeline) {
	if len(t.Leases) == 0 {
		return
	}
	from, to := t.Leases[0].From, t.Leases[0].Deadline
	for _, l := range t.Leases {
		from, to = earliest(from, l.From), latest(to, latest(l.Deadline, l.Ended))
	}
	span := max(to.Sub(from), time.Millisecond)
	width := max(p.Width0(t)-left-padding, 400)
	xOf := func(at time.Time) int { return left + int(float64(width)*float64(at.Sub(from))/float64(span)) }
	for i, l := range t.Leases {
		b := leaseBar{X: xOf(l.From), Y: p.LeaseAxisY + i*leaseH, Ended: !l.Ended.IsZero(),
			Label: fmt.Sprintf("%s (%s)", l.Name, t.laneName(l.Lane))}
		b.W = max(xOf(l.Deadline)-b.X, 2)
		b.Info = fmt.Sprintf("lease %s of %s\ndeadline %s (server clock)", l.Name, t.laneName(l.Lane), stamp(l.Deadline))
		if b.Ended {
			b.EndX, b.EndY1, b.EndY2 = xOf(l.Ended), b.Y-4, b.Y+24
			how := "revoked"
			if l.Expired {
				how = "expired"
			}
			b.Info += fmt.Sprintf("\n%s at r%d by %s, server time %s", how, l.EndedAt, t.laneName(l.EndedBy), stamp(l.Ended))
		}
		p.Leases = append(p.Leases, b)
	}
}

// Width0 is the drawing's width before the leases are laid out.
func (p *page) Width0(t *Timeline) int {
	w := left + (leadingUnlanded(t)+len(t.Tries))*slotW
	for _, tb := range p.Tape {
		w = max(w, tb.X+tryW)
	}
	return w + padding
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format("15:04:05.000000 UTC")
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body{font:14px system-ui,sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:18px;margin:0 0 4px} p.note{margin:0 0 12px;color:#555}
.scroll{overflow-x:auto;border:1px solid #ddd}
text{font:12px ui-monospace,monospace}
.lane rect{fill:#f6f6f6} .lane text{font-weight:bold}
.try rect{stroke:#333;stroke-width:1}
.committed rect,.snapshot rect,.unconditional rect,.recorded rect{fill:#9be7a1}
.refused rect{fill:#f4a3a3} .confirmed rect{fill:#ffe08a}
.carried rect{fill:#bfe3f5;stroke-dasharray:4 2} .carry{stroke:#2a7ab0;stroke-width:1.5;stroke-dasharray:2 3}
text.carrier{font-size:10px;fill:#2a7ab0} .carrying rect{stroke-width:2}
.retry{fill:none;stroke:#c0392b;stroke-width:1.5} text.catchup{font-size:10px;fill:#c0392b}
.lands{stroke:#888;stroke-dasharray:3 3}
.rev rect{fill:#cfe3ff;stroke:#336} .snap rect{fill:#d9c7ff} .dropped{opacity:.4} .dropped rect{stroke-dasharray:4 3}
.lease rect.bar{fill:#ffd59e;stroke:#a66} .lease line{stroke:#c0392b;stroke-width:3}
#tip{position:fixed;display:none;background:#222;color:#fff;padding:6px 8px;border-radius:4px;white-space:pre;font:12px ui-monospace,monospace;pointer-events:none}
</style></head>
<body>
<h1>{{.Title}}</h1>
<p class="note">{{.Note}} Tries are drawn in the order they happened, each labelled base→landed (✗: refused, the stream was at; =: nothing to write{{if .Carrying}}; ⇢: handed to another writer, whose entry there carried it, joined to it by a dashed line; under an entry, +name: it carries a PUT that name handed{{end}}). Hover for revision, entry and time.</p>
<div class="scroll">
<svg width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}">
<defs><marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="#c0392b"/></marker></defs>
{{range .Lanes}}<g class="lane"><rect x="0" y="{{.Y}}" width="100%" height="{{$.LaneInner}}"/><text x="8" y="{{.Y}}" dy="32">{{.Name}}</text></g>
{{end}}{{range .Arrows}}<path class="retry" marker-end="url(#head)" d="M{{.X1}},{{.Y1}} Q{{.X1}},{{.CY}} {{.X2}},{{.Y2}}"><title>{{.Label}}</title></path><text class="catchup" x="{{.X1}}" y="{{.CY}}" dy="-2">{{.Label}}</text>
{{end}}{{range .Lands}}<line class="lands" x1="{{.X1}}" y1="{{.Y1}}" x2="{{.X2}}" y2="{{.Y2}}"/>
{{end}}{{range .Carries}}<line class="carry" x1="{{.X1}}" y1="{{.Y1}}" x2="{{.X2}}" y2="{{.Y2}}"><title>{{.Label}}</title></line>
{{end}}{{range .Tries}}<g class="try {{.Class}}" data-info="{{.Info}}" data-lane="{{.Lane}}" data-base="{{.Base}}"><title>{{.Info}}</title><rect x="{{.X}}" y="{{.Y}}" width="48" height="28" rx="4"/><text x="{{.X}}" y="{{.Y}}" dx="4" dy="18">{{.Label}}</text></g>
{{end}}<text x="8" y="{{.TapeY}}" dy="18">stream</text>
{{range .Tape}}<g class="{{.Class}}" data-info="{{.Info}}"><title>{{.Info}}</title><rect x="{{.X}}" y="{{.Y}}" width="48" height="28"/><text x="{{.X}}" y="{{.Y}}" dx="6" dy="18">{{.Label}}</text>{{$x := .X}}{{range .Carriers}}<text class="carrier" x="{{$x}}" y="{{.Y}}" dx="2">{{.Text}}</text>{{end}}</g>
{{end}}{{if .Leases}}<text x="8" y="{{.LeaseAxisY}}" dy="-8">leases, on the server's clock: each bar runs from the entry that set the deadline to the deadline; a red mark is the entry that ended the lease</text>
{{end}}{{range .Leases}}<g class="lease" data-info="{{.Info}}"><title>{{.Info}}</title><text x="8" y="{{.Y}}" dy="16">{{.Label}}</text><rect class="bar" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="20"/>{{if .Ended}}<line class="end" x1="{{.EndX}}" y1="{{.EndY1}}" x2="{{.EndX}}" y2="{{.EndY2}}"/>{{end}}</g>
{{end}}</svg></div>
<div id="tip"></div>
<script>
(function(){
  var tip=document.getElementById("tip");
  document.querySelectorAll("[data-info]").forEach(function(el){
    el.addEventListener("mousemove",function(ev){tip.textContent=el.getAttribute("data-info");tip.style.display="block";tip.style.left=(ev.clientX+12)+"px";tip.style.top=(ev.clientY+12)+"px";});
    el.addEventListener("mouseleave",function(){tip.style.display="none";});
  });
  document.body.setAttribute("data-lanes",document.querySelectorAll("g.lane").length);
  document.body.setAttribute("data-tries",document.querySelectorAll("g.try").length);
  document.body.setAttribute("data-ready","yes");
})();
</script>
</body></html>
`))

// LaneInner is the height of a lane's band.
func (page) LaneInner() int { return laneH - 4 }
