// Package faultproxy is a TCP proxy for fault-injection tests: it forwards connections from
// a loopback port to a target and can drop them, stall them (keep them open but forward no
// bytes), swallow bytes, or refuse new connections.
package faultproxy

import (
	"errors"
	"net"
	"sync"
)

// Proxy forwards every connection it accepts to its target.
type Proxy struct {
	ln net.Listener

	mu        sync.Mutex
	target    string
	links     map[*link]struct{}
	accepted  int
	paused    chan struct{} // non-nil while paused; closed on Resume
	blackhole bool
	refuse    bool
	closed    bool

	wg sync.WaitGroup
}

type link struct {
	client, server net.Conn
	done           chan struct{}
	once           sync.Once
}

func (l *link) close() {
	l.once.Do(func() {
		close(l.done)
		l.client.Close()
		l.server.Close()
	})
}

// Start listens on a free 127.0.0.1 port and forwards to target.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, links: make(map[*link]struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetTarget changes where new connections go.
func (p *Proxy) SetTarget(target string) {
	p.mu.Lock()
	p.target = target
	p.mu.Unlock()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.accepted++
		target, refuse := p.target, p.refuse || p.closed
		p.mu.Unlock()
		if refuse {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			continue
		}
		l := &link{client: c, server: s, done: make(chan struct{})}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			l.close()
			continue
		}
		p.links[l] = struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(l, c, s)
		go p.pipe(l, s, c)
	}
}

// pipe copies src to dst, honouring pause and blackhole, until either side fails.
func (p *Proxy) pipe(l *link, src, dst net.Conn) {
	defer p.wg.Done()
	defer func() {
		l.close()
		p.mu.Lock()
		delete(p.links, l)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.gate(l) {
				return
			}
			p.mu.Lock()
			swallow := p.blackhole
			p.mu.Unlock()
			if !swallow {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// gate waits while the proxy is paused; it reports false if the link was dropped meanwhile.
func (p *Proxy) gate(l *link) bool {
	for {
		p.mu.Lock()
		ch := p.paused
		p.mu.Unlock()
		if ch == nil {
			select {
			case <-l.done:
				return false
			default:
				return true
			}
		}
		select {
		case <-ch:
		case <-l.done:
			return false
		}
	}
}

// Pause stops forwarding bytes on every connection, current and new, while keeping them open:
// a stalled server. Bytes read meanwhile are delivered after Resume.
func (p *Proxy) Pause() {
	p.mu.Lock()
	if p.paused == nil {
		p.paused = make(chan struct{})
	}
	p.mu.Unlock()
}

// Resume undoes Pause.
func (p *Proxy) Resume() {
	p.mu.Lock()
	if p.paused != nil {
		close(p.paused)
		p.paused = nil
	}
	p.mu.Unlock()
}

// SetBlackhole makes the proxy swallow every byte, in both directions, with connections kept
// open.
func (p *Proxy) SetBlackhole(on bool) {
	p.mu.Lock()
	p.blackhole = on
	p.mu.Unlock()
}

// SetRefuse makes the proxy close new connections at once, like a server that is down.
func (p *Proxy) SetRefuse(on bool) {
	p.mu.Lock()
	p.refuse = on
	p.mu.Unlock()
}

// DropAll closes every current connection.
func (p *Proxy) DropAll() {
	p.mu.Lock()
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
		delete(p.links, l)
	}
	p.mu.Unlock()
	for _, l := range links {
		l.close()
	}
}

// Conns is the number of open connections.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Accepted is the number of connections accepted so far.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// Close stops the proxy and closes every connection; it waits for its goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.DropAll()
	p.Resume()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
