package peer

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
)

// ListenAll listens on every address (a server.N line with several addresses listens on all
// of them, as QuorumCnxManager's ListenerHandlers do) and returns one listener accepting from
// all. Addr is the first address's. With one address it is a plain TCP listener.
func ListenAll(addrs []string) (net.Listener, error) {
	if len(addrs) == 0 {
		return nil, errors.New("peer: no address to listen on")
	}
	var lns []net.Listener
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, fmt.Errorf("peer: listening on %s: %w", a, err)
		}
		lns = append(lns, ln)
	}
	if len(lns) == 1 {
		return lns[0], nil
	}
	m := &multiListener{lns: lns, conns: make(chan net.Conn), done: make(chan struct{})}
	for _, ln := range lns {
		m.wg.Add(1)
		go m.serve(ln)
	}
	return m, nil
}

// SplitAddrs splits a '|'-joined address list, as connection headers carry them.
func SplitAddrs(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "|")
}

type multiListener struct {
	lns   []net.Listener
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
}

// serve hands ln's connections to Accept until the listener closes. Accept errors other than
// closing are retried after a pause: on a live TCP socket they are transient (EMFILE and the
// like).
func (m *multiListener) serve(ln net.Listener) {
	defer m.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-m.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-m.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		select {
		case m.conns <- nc:
		case <-m.done:
			nc.Close()
			return
		}
	}
}

func (m *multiListener) Accept() (net.Conn, error) {
	select {
	case nc := <-m.conns:
		return nc, nil
	case <-m.done:
		return nil, net.ErrClosed
	}
}

func (m *multiListener) Close() error {
	m.once.Do(func() {
		close(m.done)
		for _, ln := range m.lns {
			ln.Close()
		}
	})
	m.wg.Wait()
	return nil
}

func (m *multiListener) Addr() net.Addr { return m.lns[0].Addr() }
