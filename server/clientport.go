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
		ln, err := net.Listen("tcp", addr)
		if err != nil && samePort(s.listener(), addr) {
			// The same port on other interfaces (127.0.0.1 to 0.0.0.0): ZooKeeper closes
			// the old socket before binding, and so must zkd; if the new bind fails, the old
			// address is bound again.
			ln, err = s.rebindSamePort(addr)
		}
		if err != nil {
			s.log.Error("cannot move the client port as the reconfig asks; serving where it was", "addr", addr, "err", err)
			return
		}
		if s.cfg.ClientPortUnification && s.cfg.TLS != nil {
			ln = tlsconf.Unify(ln, s.cfg.TLS, s.cfg.TLSDetectTimeout)
		}
		s.lnMu.Lock()
		select {
		case <-s.stopping:
			s.lnMu.Unlock()
			ln.Close()
			return
		default:
		}
		old := s.ln
		s.ln = ln
		s.wg.Add(1)
		s.lnMu.Unlock()
		old.Close()
		s.log.Info("client port moved by a reconfig", "from", old.Addr().String(), "to", ln.Addr().String())
		s.acceptLoop(ln)
	}()
}

func samePort(ln net.Listener, addr string) bool {
	if ln == nil {
		return false
	}
	_, p1, _ := net.SplitHostPort(ln.Addr().String())
	_, p2, _ := net.SplitHostPort(addr)
	return p1 == p2
}

// rebindSamePort closes the client port and binds addr, which has the same port; when that
// fails it binds the old address again, and the old accept loop goes on with it.
func (s *Server) rebindSamePort(addr string) (net.Listener, error) {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	old := s.ln
	oldAddr := old.Addr().String()
	// The listener stays s.ln while it is closed, so its accept loop does not take the
	// close for a replacement and keeps retrying until a listener is back.
	old.Close()
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	back, err2 := net.Listen("tcp", oldAddr)
	if err2 != nil {
		s.log.Error("lost the client port: the old address cannot be bound again", "addr", oldAddr, "err", err2)
		return nil, err
	}
	if s.cfg.ClientPortUnification && s.cfg.TLS != nil {
		back = tlsconf.Unify(back, s.cfg.TLS, s.cfg.TLSDetectTimeout)
	}
	s.ln = back
	s.wg.Add(1)
	go s.acceptLoop(back)
	return nil, err
}

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
