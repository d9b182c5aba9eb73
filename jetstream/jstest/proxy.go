package jstest

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy forwards TCP connections to a server. Frozen, it drops what clients
// send and forwards nothing back, keeping the connections open: the server
// neither hears nor answers, as when it hangs, and clients do not notice
// a disconnection.
type Proxy struct {
	ln      net.Listener
	target  string
	frozen  atomic.Bool
	trigger atomic.Pointer[[]byte]    // FreezeOn's pattern
	insert  atomic.Pointer[[2][]byte] // AfterServerSays's pattern and what follows it
	dropped atomic.Int64              // bytes dropped while frozen
	mu      sync.Mutex
	drops   []byte // the last of what was dropped, ending at byte dropped
	conns   []net.Conn
	wg      sync.WaitGroup
}

// NewProxy starts a proxy to target (host:port), closed when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// URL is the proxy's address as a NATS URL.
func (p *Proxy) URL() string { return "nats://" + p.ln.Addr().String() }

// Freeze stops forwarding, in both directions.
func (p *Proxy) Freeze() { p.frozen.Store(true) }

// FreezeOn freezes the proxy when a client sends pattern, dropping what
// holds it: the server hangs at that request, and not before. (A pattern
// split between two reads is not seen; a short one, such as a subject, in
// practice is.)
func (p *Proxy) FreezeOn(pattern string) {
	b := []byte(pattern)
	p.trigger.Store(&b)
}

// AfterServerSays makes the proxy add extra after each line the server
// sends that holds pattern, as if the server had sent it next: an error
// of its own, say. (A line split between two reads is not seen; a short
// one, such as an error, in practice is.)
func (p *Proxy) AfterServerSays(pattern, extra string) {
	p.insert.Store(&[2][]byte{[]byte(pattern), []byte(extra)})
}

// inserted is what the server sent, with AfterServerSays's extra after
// each line that holds its pattern.
func (p *Proxy) inserted(b []byte) []byte {
	in := p.insert.Load()
	if in == nil || !bytes.Contains(b, in[0]) {
		return b
	}
	var out []byte
	for line := range bytes.Lines(b) {
		out = append(out, line...)
		if bytes.Contains(line, in[0]) {
			out = append(out, in[1]...)
		}
	}
	return out
}

// Dropped is how many bytes the proxy has dropped while frozen, in both
// directions: a request sent to a frozen server shows here.
func (p *Proxy) Dropped() int64 { return p.dropped.Load() }

// WaitForDrop waits until the proxy has dropped more than before bytes
// (Dropped): something was sent to the frozen server.
func (p *Proxy) WaitForDrop(t testing.TB, before int64) {
	t.Helper()
	p.WaitForDropOf(t, before, "")
}

// WaitForDropOf waits until what the proxy has dropped after the first
// before bytes holds pattern: that request, and not only some other one
// (a client's own background read, say), reached the frozen server.
func (p *Proxy) WaitForDropOf(t testing.TB, before int64, pattern string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !p.droppedSince(before, pattern); {
		if time.Now().After(deadline) {
			t.Fatalf("%q did not reach the frozen proxy within a minute", pattern)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// maxDrops bounds what the proxy keeps of what it dropped.
const maxDrops = 1 << 20

func (p *Proxy) droppedSince(before int64, pattern string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	total := p.dropped.Load()
	if total <= before {
		return false
	}
	from := len(p.drops) - int(min(total-before, int64(len(p.drops))))
	return bytes.Contains(p.drops[from:], []byte(pattern))
}

func (p *Proxy) drop(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drops = append(p.drops, b...)
	if len(p.drops) > maxDrops {
		p.drops = append(p.drops[:0], p.drops[len(p.drops)-maxDrops/2:]...)
	}
	p.dropped.Add(int64(len(b)))
}

// Thaw closes the connections (what they carried while frozen is lost, so
// their streams are broken) and forwards the new ones clients open.
func (p *Proxy) Thaw() {
	p.Cut()
	p.trigger.Store(nil)
	p.frozen.Store(false)
}

// Cut closes every connection in flight; clients reconnect through the
// proxy.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *Proxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(in, out, false) })
		p.wg.Go(func() { p.pipe(out, in, true) })
	}
}

// pipe copies src to dst until either closes, dropping what it reads while
// frozen; fromClient: src is the client, whose requests FreezeOn watches.
func (p *Proxy) pipe(dst, src net.Conn, fromClient bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if t := p.trigger.Load(); fromClient && t != nil && bytes.Contains(buf[:n], *t) {
			p.frozen.Store(true)
		}
		if n > 0 && p.frozen.Load() {
			p.drop(buf[:n])
		} else if n > 0 {
			out := buf[:n]
			if !fromClient {
				out = p.inserted(out)
			}
			if _, werr := dst.Write(out); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
