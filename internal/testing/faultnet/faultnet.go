// Package faultnet is a TCP bridge for tests that sits between a client and a server on
// loopback and can drop every connection, pause traffic (connections open, bytes held), or
// blackhole it (connections open, bytes and closes swallowed), so that a test decides
// exactly what each side observes.
package faultnet

import (
	"io"
	"net"
	"sync"
	"time"
)

// Mode is what the bridge does with traffic.
type Mode int

const (
	// Pass forwards bytes and closes.
	Pass Mode = iota
	// Pause holds bytes until the mode changes; connections stay open.
	Pause
	// Blackhole drops bytes, and the closing of one side is not passed to the other.
	Blackhole
)

// Bridge forwards connections from its listener to a target address.
type Bridge struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cond  *sync.Cond
	mode  Mode
	conns map[net.Conn]struct{}
	// pairs maps each accepted (client-side) connection to its dialed (server-side) one.
	pairs    map[net.Conn]net.Conn
	orphaned map[net.Conn]bool
	done     bool
	wg       sync.WaitGroup
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
	b := &Bridge{ln: ln, target: target, conns: map[net.Conn]struct{}{}, pairs: map[net.Conn]net.Conn{}, orphaned: map[net.Conn]bool{}}
	b.cond = sync.NewCond(&b.mu)
	b.wg.Add(1)
	go b.accept()
	return b, nil
}

// Addr is the bridge's listening address.
func (b *Bridge) Addr() string { return b.ln.Addr().String() }

// SetMode changes what happens to traffic from now on.
func (b *Bridge) SetMode(m Mode) {
	b.mu.Lock()
	b.mode = m
	b.mu.Unlock()
	b.cond.Broadcast()
}

// DropAll closes every bridged connection on both sides.
func (b *Bridge) DropAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for c := range b.conns {
		c.Close()
	}
}

// Sever closes the client side of every current connection while the server side stays
// open and hears nothing: the client sees its connection drop at once, the server only
// silence (a peer that vanished without a FIN). New connections pass as usual.
func (b *Bridge) Sever() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for in, out := range b.pairs {
		b.orphaned[out] = true
		delete(b.pairs, in)
		in.Close()
	}
}

// Close stops the bridge and closes everything.
func (b *Bridge) Close() error {
	b.mu.Lock()
	b.done = true
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.cond.Broadcast()
	err := b.ln.Close()
	b.wg.Wait()
	return err
}

func (b *Bridge) accept() {
	defer b.wg.Done()
	for {
		in, err := b.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.DialTimeout("tcp", b.target, 5*time.Second)
		if err != nil {
			in.Close()
			continue
		}
		b.mu.Lock()
		if b.done {
			b.mu.Unlock()
			in.Close()
			out.Close()
			return
		}
		b.conns[in], b.conns[out] = struct{}{}, struct{}{}
		b.pairs[in] = out
		b.mu.Unlock()
		b.wg.Add(2)
		go b.pipe(in, out)
		go b.pipe(out, in)
	}
}

// pipe copies src to dst under the current mode.
func (b *Bridge) pipe(src, dst net.Conn) {
	defer b.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			b.mu.Lock()
			for b.mode == Pause && !b.done {
				b.cond.Wait()
			}
			mode, done, orphan := b.mode, b.done, b.orphaned[dst] || b.orphaned[src]
			b.mu.Unlock()
			if done {
				return
			}
			if mode == Pass && !orphan {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					src.Close()
					return
				}
			}
		}
		if err != nil {
			if err == io.EOF || isClosed(err) {
				b.mu.Lock()
				mode, orphan := b.mode, b.orphaned[dst]
				b.mu.Unlock()
				if mode != Blackhole && !orphan {
					dst.Close()
				}
			}
			b.mu.Lock()
			delete(b.conns, src)
			b.mu.Unlock()
			return
		}
	}
}

func isClosed(err error) bool {
	ne, ok := err.(*net.OpError)
	return ok && !ne.Timeout()
}
