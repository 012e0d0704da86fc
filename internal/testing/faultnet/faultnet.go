// Package faultnet is the tests' one TCP fault injector: a bridge on a loopback port that
// forwards each connection it accepts to a target, and can hold its bytes (Pause), swallow
// them (Discard), swallow them and the closes too (Blackhole), drop every connection
// (DropAll), cut only the client side and leave the server hearing nothing (Sever), refuse
// new connections (SetRefuse) or send them elsewhere (SetTarget), so that a test decides
// exactly what each side observes. Client, server and quorum tests all use it; the zk
// package's tests may, zk itself may not (internal/layout).
package faultnet

import (
	"errors"
	"net"
	"sync"
	"time"
)

// Mode is what the bridge does with traffic.
type Mode int

const (
	// Pass forwards bytes and closes.
	Pass Mode = iota
	// Pause holds bytes until the mode changes; connections stay open, and a close still
	// ends the connection (a stalled server, not a vanished one). Bytes read meanwhile are
	// delivered when the mode becomes Pass.
	Pause
	// Blackhole drops bytes, and the closing of one side is not passed to the other: a
	// peer that vanished without a FIN.
	Blackhole
	// Discard drops bytes in both directions; closes pass.
	Discard
)

// Bridge forwards connections from its listener to a target address.
type Bridge struct {
	ln net.Listener

	mu       sync.Mutex
	cond     *sync.Cond // signalled when mode, done or a link's state changes
	target   string
	mode     Mode
	refuse   bool
	done     bool
	links    map[*link]struct{}
	accepted int

	wg sync.WaitGroup
}

// link is one bridged connection: client is the accepted side, server the dialed one.
type link struct {
	client, server net.Conn
	closed         bool // both sides closed; guarded by Bridge.mu
	severed        bool // client side closed, server side left open and unheard
}

// New listens on 127.0.0.1 (a free port, or addr when given) and forwards to target.
func New(addr, target string) (*Bridge, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	b := &Bridge{ln: ln, target: target, links: map[*link]struct{}{}}
	b.cond = sync.NewCond(&b.mu)
	b.wg.Add(1)
	go b.accept()
	return b, nil
}

// Start is New on a free port.
func Start(target string) (*Bridge, error) { return New("", target) }

// Addr is the bridge's listening address.
func (b *Bridge) Addr() string { return b.ln.Addr().String() }

// SetTarget changes where new connections go.
func (b *Bridge) SetTarget(target string) {
	b.mu.Lock()
	b.target = target
	b.mu.Unlock()
}

// SetMode changes what happens to traffic, on current and new connections, from now on.
func (b *Bridge) SetMode(m Mode) {
	b.mu.Lock()
	b.mode = m
	b.mu.Unlock()
	b.cond.Broadcast()
}

// Pause is SetMode(Pause): a partition, or a stalled server.
func (b *Bridge) Pause() { b.SetMode(Pause) }

// Resume is SetMode(Pass).
func (b *Bridge) Resume() { b.SetMode(Pass) }

// SetRefuse makes the bridge close new connections at once, like a server that is down.
func (b *Bridge) SetRefuse(on bool) {
	b.mu.Lock()
	b.refuse = on
	b.mu.Unlock()
}

// DropAll closes every bridged connection on both sides, severed ones included; it does not
// wait for a Pause to end.
func (b *Bridge) DropAll() {
	b.mu.Lock()
	for l := range b.links {
		b.closeLocked(l)
	}
	b.mu.Unlock()
	b.cond.Broadcast()
}

// Sever closes the client side of every current connection while the server side stays
// open and hears nothing: the client sees its connection drop at once, the server only
// silence (a peer that vanished without a FIN). New connections pass as usual.
func (b *Bridge) Sever() {
	b.mu.Lock()
	for l := range b.links {
		if !l.closed && !l.severed {
			l.severed = true
			l.client.Close()
		}
	}
	b.mu.Unlock()
	b.cond.Broadcast()
}

// Conns is the number of bridged connections not yet closed (a severed one counts until
// its server side is closed).
func (b *Bridge) Conns() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.links)
}

// Accepted is the number of connections accepted so far, refused ones included.
func (b *Bridge) Accepted() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.accepted
}

// Close stops the bridge, closes everything and waits for its goroutines. A second Close
// does nothing.
func (b *Bridge) Close() error {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		return nil
	}
	b.done = true
	for l := range b.links {
		b.closeLocked(l)
	}
	b.mu.Unlock()
	b.cond.Broadcast()
	err := b.ln.Close()
	b.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (b *Bridge) closeLocked(l *link) {
	if !l.closed {
		l.closed = true
		l.client.Close()
		l.server.Close()
	}
	delete(b.links, l)
}

func (b *Bridge) closeLink(l *link) {
	b.mu.Lock()
	b.closeLocked(l)
	b.mu.Unlock()
	b.cond.Broadcast()
}

func (b *Bridge) accept() {
	defer b.wg.Done()
	for {
		in, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		b.accepted++
		target, refuse := b.target, b.refuse || b.done
		b.mu.Unlock()
		if refuse {
			in.Close()
			continue
		}
		out, err := net.DialTimeout("tcp", target, 5*time.Second)
		if err != nil {
			in.Close()
			continue
		}
		l := &link{client: in, server: out}
		b.mu.Lock()
		if b.done {
			b.mu.Unlock()
			in.Close()
			out.Close()
			return
		}
		b.links[l] = struct{}{}
		b.wg.Add(2)
		b.mu.Unlock()
		go b.pipe(l, in, out)
		go b.pipe(l, out, in)
	}
}

// pipe copies src to dst under the current mode until src fails or the link is closed.
func (b *Bridge) pipe(l *link, src, dst net.Conn) {
	defer b.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			b.mu.Lock()
			for b.mode == Pause && !l.closed && !b.done {
				b.cond.Wait()
			}
			mode, closed, severed := b.mode, l.closed || b.done, l.severed
			b.mu.Unlock()
			if closed {
				return
			}
			if mode == Pass && !severed {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					b.closeLink(l)
					return
				}
			}
		}
		if err != nil {
			b.mu.Lock()
			// A vanished peer's close is not heard either: the other side stays open
			// until DropAll or Close. A severed link's server side stays open until the
			// server closes it.
			keep := b.mode == Blackhole || (l.severed && src == l.client)
			b.mu.Unlock()
			if !keep {
				b.closeLink(l)
			}
			return
		}
	}
}
