package repl

import (
	"io"
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
