package repl

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// previewChars is how many characters of a key or value the lines that
// describe changes (LOG, HISTORY, WATCH, FOLLOW) show: one value may be
// close to a megabyte, and a line is no place for it. GET shows it whole.
const previewChars = 100

// clip is s cut after previewChars characters (bytes where s is not
// UTF-8), and whether it was cut.
func clip(s string) (head string, cut bool) {
	i := 0
	for n := 0; i < len(s); n++ {
		if n == previewChars {
			return s[:i], true
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s, false
}

// previewQuoted is Quote(s), or for a long s its start quoted, an ellipsis
// and its size: "aaaa…" (2.0 MiB). As LOG and WATCH show keys and values.
func previewQuoted(s string) string {
	head, cut := clip(s)
	if !cut {
		return Quote(s)
	}
	return strconv.Quote(head+"…") + " (" + byteSize(len(s)) + ")"
}

// previewShown is s as shown shows it, or for a long s its start and an
// ellipsis, with its size (" (2.0 MiB)") to write after it, else "".
func previewShown(s string) (text, size string) {
	head, cut := clip(s)
	if !cut {
		return shown(s), ""
	}
	return shown(head + "…"), " (" + byteSize(len(s)) + ")"
}

// byteSize is n bytes as a person reads it: 130 bytes, 4.0 KiB, 2.0 MiB.
func byteSize(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// previewed is s as previewShown shows it, with its size if cut: for a
// writer's name in LOG, HISTORY and follow mode, which anyone publishing
// on the config's subject sets, at any length.
func previewed(s string) string {
	text, size := previewShown(s)
	return text + size
}

// Previewed is s as LOG shows a writer's name, for other commands' tables:
// escaped as Shown, and for a long s its start and its size.
func Previewed(s string) string { return previewed(s) }
