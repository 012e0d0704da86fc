package server

// LastZxid is the zxid of the last txn s applied.
func LastZxid(s *Server) (zxid int64) {
	s.query(func() { zxid = s.tree.LastZxid() })
	return zxid
}

// SessionKind reports whether s knows a session, and whether it is local to s.
func SessionKind(s *Server, id int64) (known, local bool) {
	s.query(func() {
		if sess := s.sessions[id]; sess != nil {
			known, local = true, sess.local
		}
	})
	return known, local
}
