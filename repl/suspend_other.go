//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package repl

const ctrlZ = 0x1a

// watchStops: there is no job control to take part in.
func (t *Terminal) watchStops() (stop func()) { return nil }

// stopKey: Ctrl-Z is an ordinary key.
func (t *Terminal) stopKey() bool { return false }
