//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package repl

import (
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

const ctrlZ = 0x1a

// watchSignals lets the shell be suspended and continued as any program in
// a shell with job control, and follows the window's size. The terminal is
// raw, so Ctrl-Z is a key (see key), and a job-control shell that
// continues the shell puts back its own settings, not raw mode: without
// this, Ctrl-Z did nothing, and after a SIGTSTP from outside and fg the
// shell ran on with echo on, whole lines and no completion. When the
// process was started with SIGTSTP ignored, Ctrl-Z stays a key that does
// nothing, as the terminal's own Ctrl-Z would.
func (t *Terminal) watchSignals() (stop func()) {
	c, ok := t.console.(*ttyConsole)
	if !ok {
		return nil
	}
	t.jobControl = !signal.Ignored(syscall.SIGTSTP)
	// Room for each kind at once: signal.Notify drops what finds the
	// channel full, and a SIGCONT dropped behind a SIGWINCH (a job-control
	// shell may resize as it continues) left the shell cooked and unseen.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGWINCH)
	if t.jobControl {
		signal.Notify(sigs, syscall.SIGTSTP, syscall.SIGCONT)
	}
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		for {
			select {
			case sig := <-sigs:
				t.signalled(c, sig)
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
		<-ended
	}
}

func (t *Terminal) signalled(c *ttyConsole, sig os.Signal) {
	switch sig {
	case syscall.SIGTSTP:
		t.suspend(c)
	case syscall.SIGCONT:
		// Continued, after our stop or one we could not catch (SIGSTOP):
		// raw again, and the line drawn again.
		_ = c.setRaw()
		t.continuedLine()
	case syscall.SIGWINCH:
		t.resizeLine()
	}
}

// suspend stops the process, with the terminal's own settings back and
// the cursor on a line of its own, below the line being typed, for the
// job-control shell's report. The terminal ignores Ctrl-Z in an orphaned
// process group, which no job-control shell could continue; so does
// suspend.
func (t *Terminal) suspend(c *ttyConsole) {
	if orphaned() {
		return
	}
	t.mu.Lock()
	if t.reading {
		io.WriteString(t.out, t.belowLine())
	}
	t.mu.Unlock()
	_ = c.setCooked()
	_ = unix.Kill(os.Getpid(), unix.SIGSTOP)
}

// orphaned: the process's group has no parent in the session to continue
// it, judged by this process's parent, as is the rule for a terminal's
// stop signals.
func orphaned() bool {
	ppid := os.Getppid()
	ppgid, err := unix.Getpgid(ppid)
	if err != nil {
		return true
	}
	psid, err1 := unix.Getsid(ppid)
	sid, err2 := unix.Getsid(0)
	return err1 != nil || err2 != nil || ppgid == unix.Getpgrp() || psid != sid
}

// stopKey sends Ctrl-Z's SIGTSTP to the process group, as the terminal
// would (the programs of a pipeline stop with the shell). False if the
// shell is not watching for it: Ctrl-Z is then an ordinary key.
func (t *Terminal) stopKey() bool {
	if !t.jobControl {
		return false
	}
	_ = unix.Kill(0, unix.SIGTSTP)
	return true
}
