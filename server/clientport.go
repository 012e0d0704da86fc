package server

import (
	"net"

	"github.com/zkd-io/zkd/internal/tlsconf"
)

// moveClientPort serves clients on addr instead of the current client port, as ZooKeeper's
// ServerCnxnFactory.reconfigure does when a reconfig gives this server a new client address:
// the connections already open stay, new ones are accepted on addr. It binds on its own
// goroutine (the core never waits on the network). Unlike ZooKeeper, which has closed the
// old port by then, a bind that fails keeps the old port serving.
func (s *Server) moveClientPort(addr string) {
	if cur := s.listener(); cur == nil || sameAddr(cur.Addr().String(), addr) {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.lnMu.Lock()
		defer s.lnMu.Unlock()
		select {
		case <-s.stopping:
			return
		default:
		}
		old := s.ln
		from := old.Addr().String()
		ln, err := net.Listen("tcp", addr)
		if err != nil && samePort(from, addr) {
			// The same port on other interfaces (127.0.0.1 to 0.0.0.0): ZooKeeper closes
			// the old socket before binding, and so must zkd; if the new bind fails, the old
			// address is bound again.
			old.Close()
			if ln, err = net.Listen("tcp", addr); err != nil {
				back, err2 := net.Listen("tcp", from)
				if err2 != nil {
					s.log.Error("lost the client port: neither the new address nor the old one can be bound", "addr", addr, "err", err, "old", from, "oldErr", err2)
					s.ln = closedListener{old.Addr()} // ends the old accept loop
					return
				}
				s.log.Error("cannot move the client port as the reconfig asks; serving where it was", "addr", addr, "err", err)
				s.serveClientsOn(back)
				return
			}
		}
		if err != nil {
			s.log.Error("cannot move the client port as the reconfig asks; serving where it was", "addr", addr, "err", err)
			return
		}
		s.serveClientsOn(ln)
		old.Close()
		s.log.Info("client port moved by a reconfig", "from", from, "to", ln.Addr().String())
	}()
}

// serveClientsOn makes ln the client port's listener and accepts on it; lnMu is held. The
// accept loop of the listener it replaces ends when it sees it replaced.
func (s *Server) serveClientsOn(ln net.Listener) {
	if s.cfg.ClientPortUnification && s.cfg.TLS != nil {
		ln = tlsconf.Unify(ln, s.cfg.TLS, s.cfg.TLSDetectTimeout)
	}
	s.ln = ln
	s.wg.Add(1)
	go s.acceptLoop(ln)
}

func samePort(a, b string) bool {
	_, p1, _ := net.SplitHostPort(a)
	_, p2, _ := net.SplitHostPort(b)
	return p1 == p2
}

// closedListener stands for a client port that could not be bound again: it accepts
// nothing and still names the address it had.
type closedListener struct{ addr net.Addr }

func (closedListener) Accept() (net.Conn, error) { return nil, net.ErrClosed }
func (closedListener) Close() error              { return nil }
func (l closedListener) Addr() net.Addr          { return l.addr }

// sameAddr compares two host:port addresses, the unspecified ones (0.0.0.0, ::) as one.
func sameAddr(a, b string) bool {
	ah, ap, err1 := net.SplitHostPort(a)
	bh, bp, err2 := net.SplitHostPort(b)
	if err1 != nil || err2 != nil || ap != bp {
		return false
	}
	if ah == bh {
		return true
	}
	ai, bi := net.ParseIP(ah), net.ParseIP(bh)
	return ai != nil && bi != nil && (ai.Equal(bi) || (ai.IsUnspecified() && bi.IsUnspecified()))
}

// replaced reports whether ln is no longer the client port's listener.
func (s *Server) replaced(ln net.Listener) bool { return s.listener() != ln }
