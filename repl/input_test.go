package repl

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func TestScriptReadsEveryLine(t *testing.T) {
	long := strings.Repeat("x", 200_000) // longer than bufio.Scanner's default limit
	s := NewScript(strings.NewReader("one\r\n\ntwo\n" + long + "\nlast without newline"))
	var got []string
	for {
		line, err := s.ReadLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, line)
	}
	want := []string{"one", "", "two", long, "last without newline"}
	if len(got) != len(want) {
		t.Fatalf("read %d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %.20q, want %.20q", i, got[i], want[i])
		}
	}
}

// repeat is an endless stream of one byte, so that a huge line costs the
// test no memory.
type repeat byte

func (r repeat) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

func TestScriptSkipsOverlongLinesWithoutHoldingThem(t *testing.T) {
	const huge = 100 << 20
	fits := strings.Repeat("y", MaxLineLength)
	s := NewScript(io.MultiReader(
		strings.NewReader("first\n"),
		io.LimitReader(repeat('x'), huge), strings.NewReader("\r\n"),
		strings.NewReader(fits+"\n"),
		strings.NewReader(fits+"z\n"),
		strings.NewReader("last"),
	))
	var before, after runtime.MemStats
	var got []string
	for {
		if s.LineNumber() == 1 {
			runtime.ReadMemStats(&before)
		}
		line, err := s.ReadLine()
		if s.LineNumber() == 2 {
			runtime.ReadMemStats(&after)
		}
		if err == io.EOF {
			break
		}
		var tooLong *LineTooLongError
		switch {
		case errors.As(err, &tooLong):
			got = append(got, fmt.Sprintf("too long: %d at line %d", tooLong.Length, s.LineNumber()))
		case err != nil:
			t.Fatal(err)
		default:
			got = append(got, fmt.Sprintf("%.5s (%d) at line %d", line, len(line), s.LineNumber()))
		}
	}
	want := []string{
		"first (5) at line 1",
		fmt.Sprintf("too long: %d at line 2", huge),
		fmt.Sprintf("yyyyy (%d) at line 3", MaxLineLength),
		fmt.Sprintf("too long: %d at line 4", MaxLineLength+1),
		"last (4) at line 5",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read %q, want %q", got, want)
	}
	// The huge line was never held whole: reading it cost about what a
	// line that fits costs.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > huge/4 {
		t.Errorf("reading the %d MiB line allocated %d MiB", huge>>20, alloc>>20)
	}
}

// A byte order mark (Windows editors write one) starts the file, not the
// first command; one anywhere else is left as it is.
func TestScriptDropsALeadingByteOrderMark(t *testing.T) {
	s := NewScript(strings.NewReader("\ufeffPUT k, v\n\ufeffGET k\n"))
	for _, want := range []string{"PUT k, v", "\ufeffGET k"} {
		got, err := s.ReadLine()
		if err != nil || got != want {
			t.Fatalf("ReadLine: %q, %v; want %q", got, err, want)
		}
	}
}
