//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package repl

const ctrlZ = 0x1a

// watchSignals: there is no job control to take part in, nor a signal
// for the window's size.
func (t *Terminal) watchSignals() (stop func()) { return nil }

// stopKey: Ctrl-Z is an ordinary key.
func (t *Terminal) stopKey() bool { return false }
