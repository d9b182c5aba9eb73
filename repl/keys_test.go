package repl

import (
	"reflect"
	"testing"
)

func TestSplitKeys(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		more bool
		keys []string
		rest string
	}{
		{"a pasted line and Enter", "PUT a, 1\r", false, []string{"PUT a, 1", "\r"}, ""},
		{"several lines", "GET a\rGET b\nQUIT\r", false, []string{"GET a", "\r", "GET b", "\n", "QUIT", "\r"}, ""},
		{"CRLF is one Enter", "GET a\r\nGET b\r\n", false, []string{"GET a", "\r", "GET b", "\r"}, ""},
		{"control keys alone", "x\x03\x03\x04", false, []string{"x", "\x03", "\x03", "\x04"}, ""},
		{"arrows", "GET\x1b[A\x1b[B\x1bOA", false, []string{"GET", "\x1b[A", "\x1b[B", "\x1bOA"}, ""},
		{"a Tab alone is the key", "\t", false, []string{"\t"}, ""},
		{"a pasted Tab is text", "PUT k\t, x\ty\r\tGET k\r", false, []string{"PUT k␉, x␉y", "\r", "␉GET k", "\r"}, ""},
		{"a pasted Tab alone is text", "GET k\r\t\r\t", false, []string{"GET k", "\r", "␉", "\r", "␉"}, ""},
		{"C1 controls go", "PUT k, a\u009b2Jb\u0085\r\u009b", false, []string{"PUT k, a2Jb", "\r"}, ""},
		{"bytes that are not UTF-8 stay", "PUT k\xff, \xc3(\r", false, []string{"PUT k\xff, \xc3(", "\r"}, ""},
		{"delete and ctrl-arrow", "\x1b[3~\x1b[1;5C", false, []string{"\x1b[3~", "\x1b[1;5C"}, ""},
		{"a sequence go-prompt knows", "\x1b[[Bx", false, []string{"\x1b[[B", "x"}, ""},
		{"unknown CSI", "\x1b[12;34Zx", false, []string{"x"}, ""},
		{"shift-F5, alt-up, a focus report", "a\x1b[15;2~\x1b[1;3A\x1b[Ib", false, []string{"a", "b"}, ""},
		{"unknown SS3", "\x1bOzx", false, []string{"x"}, ""},
		{"escape alone", "\x1b", false, []string{"\x1b"}, ""},
		{"alt-b", "\x1bb", false, []string{"\x1b", "b"}, ""},
		{"UTF-8 text", "PUT é, ✓\r", false, []string{"PUT é, ✓", "\r"}, ""},
		{"bracketed paste", "\x1b[200~GET a\rGET b\x1b[201~\r", false, []string{"GET a", "\r", "GET b", "\r"}, ""},
		{"backspace", "ab\x7fc", false, []string{"ab", "\x7f", "c"}, ""},
		{"a cut sequence waits for the rest", "GET a\r\x1b[1;", true, []string{"GET a", "\r"}, "\x1b[1;"},
		{"a cut rune waits for the rest", "PUT \xc3", true, nil, "PUT \xc3"},
		{"a cut escape waits for the rest", "a\x1b", true, []string{"a"}, "\x1b"},
		{"with nothing to follow, a cut rune is a key", "PUT \xc3", false, []string{"PUT \xc3"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			keys, rest := splitKeys([]byte(c.in), c.more)
			var got []string
			for _, k := range keys {
				got = append(got, string(k))
			}
			if !reflect.DeepEqual(got, c.keys) || string(rest) != c.rest {
				t.Fatalf("splitKeys(%q, %v) = %q, rest %q; want %q, rest %q", c.in, c.more, got, rest, c.keys, c.rest)
			}
		})
	}
}

// A key that may end the line holds back the keys after it until go-prompt
// has handled it: keys it reads after the line ends are lost with it.
func TestKeyQueueHoldsAfterLineEnd(t *testing.T) {
	q := &keyQueue{}
	for _, k := range []string{"GET a", "\r", "x", "\x04", "y", "\x03", "z"} {
		q.push([]byte(k))
	}
	read := func(want string) {
		t.Helper()
		k, err := q.Read()
		if want == "" {
			if err == nil {
				t.Fatalf("Read gave %q, want nothing", k)
			}
			return
		}
		if err != nil || string(k) != want {
			t.Fatalf("Read = %q, %v; want %q", k, err, want)
		}
	}
	read("GET a")
	read("\r")
	read("")
	q.release() // Enter is never released: the line ends
	read("")
	q.startLine()
	read("x")
	read("\x04")
	read("")
	q.release() // Ctrl-D on a line with text
	read("y")
	read("\x03")
	read("")
	q.release()
	read("z")
	read("")
}

// At the prompt Ctrl-C is a key, in turn: two typed before go-prompt reads
// either still make two in a row. While a command runs, Ctrl-C cancels it
// and drops what was typed ahead.
func TestCtrlCKeys(t *testing.T) {
	term := &Terminal{keys: &keyQueue{}, reading: true}
	for _, k := range []string{"x", "\x03", "\x03"} {
		term.key([]byte(k))
	}
	for _, want := range []string{"x", "\x03"} {
		if k, err := term.keys.Read(); err != nil || string(k) != want {
			t.Fatalf("Read = %q, %v; want %q", k, err, want)
		}
	}
	term.keys.release()
	if k, err := term.keys.Read(); err != nil || string(k) != "\x03" || term.keys.ctrlCsInARow() != 2 {
		t.Fatalf("Read = %q, %v after %d Ctrl-Cs; want the second Ctrl-C", k, err, term.keys.ctrlCsInARow())
	}

	term = &Terminal{keys: &keyQueue{}}
	cancelled := 0
	stop := term.OnInterrupt(func() { cancelled++ })
	term.key([]byte("GET a"))
	term.key([]byte("\x03"))
	term.key([]byte("GET b"))
	stop()
	if cancelled != 1 {
		t.Fatalf("the command was cancelled %d times, want once", cancelled)
	}
	if k, err := term.keys.Read(); err != nil || string(k) != "GET b" {
		t.Fatalf("Read = %q, %v; want only what came after Ctrl-C", k, err)
	}
	// A Ctrl-C after the line was read but before its command started
	// cancels that command.
	term.key([]byte("\x03"))
	term.OnInterrupt(func() { cancelled++ })()
	if cancelled != 2 {
		t.Fatal("a Ctrl-C just before the command did not cancel it")
	}
}

// A Ctrl-C at the prompt with lines typed ahead of it (a paste that is
// still being run, line by line) drops those lines, as a terminal's
// interrupt does, rather than wait its turn behind them: the paste stops.
func TestCtrlCDropsLinesPastedAheadOfIt(t *testing.T) {
	term := &Terminal{keys: &keyQueue{}, reading: true}
	for _, k := range []string{"PUT a, 1", "\r", "PUT b, 2", "\r", "PUT c, 3", "\r"} {
		term.key([]byte(k))
	}
	if k, err := term.keys.Read(); err != nil || string(k) != "PUT a, 1" {
		t.Fatalf("Read = %q, %v; want the first line's text", k, err)
	}
	term.key([]byte("\x03"))
	if k, err := term.keys.Read(); err != nil || string(k) != "\x03" {
		t.Fatalf("Read = %q, %v after Ctrl-C; want the Ctrl-C, not the lines pasted before it", k, err)
	}
}
