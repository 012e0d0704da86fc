package server

import (
	"bytes"
	"runtime"
	"strconv"
	"sync/atomic"

	"github.com/zkd-io/zkd/jute"
)

// SetZxidCounterStart makes a new leader's zxid counter start at n instead of 0, to reach
// the counter's rollover in a test.
func SetZxidCounterStart(c *Config, n int64) { c.zxidCounterStart = n }

// SetAckSampleEvery makes a leader time the acks of every proposal whose zxid is a
// multiple of n (ack_latency) instead of one in 1000.
func SetAckSampleEvery(c *Config, n int64) { c.ackSampleEvery = n }

// CutAfterSnap makes a learner drop its connection to the leader once, right after it
// loaded a SNAP (before NEWLEADER), when cut is set.
func CutAfterSnap(c *Config, cut *atomic.Bool) { c.cutAfterSnap = cut }

// SetFinalizeWait replaces the election's finalize wait, so that a test can tell a fast
// decision from one made after the wait.
func SetFinalizeWait(c *Config, ms int64) { c.finalizeWaitMs = ms }

// Query is query, for tests outside the package that need a step on the core.
func (s *Server) Query(f func()) bool { return s.query(f) }

// CoreGoroutine is the id of the server's core goroutine, for tests that check what runs
// on it; 0 when the server does not run.
func CoreGoroutine(s *Server) int64 {
	var id int64
	s.query(func() { id = GoroutineID() })
	return id
}

// GoroutineID is the calling goroutine's id, parsed from its stack header
// ("goroutine 123 [running]:").
func GoroutineID() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseInt(string(b), 10, 64)
	return id
}

// SessionQueue lists the opcodes of the requests waiting in a session's queue on s, in
// order; ok is false when s has no such session (or does not run).
func SessionQueue(s *Server, id int64) (ops []jute.OpCode, ok bool) {
	s.query(func() {
		sess := s.sessions[id]
		if sess == nil {
			return
		}
		ok = true
		for _, q := range sess.queue {
			ops = append(ops, q.req.hdr.Type)
		}
	})
	return ops, ok
}

// PlantDivergence changes the data of the node at path in s's tree alone, as a txn applied
// differently on this member would: s's tree, and so its digest, now differs from the other
// members'. It reports whether the node was there.
func PlantDivergence(s *Server, path string, data []byte) (ok bool) {
	s.query(func() {
		n := s.tree.Get(path)
		if n == nil {
			return
		}
		ok = true
		s.tree.Apply(&jute.TxnHeader{Zxid: s.tree.LastZxid(), Time: n.Stat.Mtime, Type: jute.OpSetData},
			&jute.SetDataTxn{Path: path, Data: data, Version: n.Stat.Version})
	})
	return ok
}

// TreeDigest is s's tree digest and last applied zxid.
func TreeDigest(s *Server) (digest, zxid int64) {
	s.query(func() { digest, zxid = s.tree.Digest(), s.tree.LastZxid() })
	return digest, zxid
}

// Outstanding is how many requests s has in flight (its outstanding slots taken).
func Outstanding(s *Server) int { return len(s.tokens) }

// OutstandingSlots is how many requests may be read and not yet answered under c (with
// its defaults filled in).
func OutstandingSlots(c Config) int {
	c.setDefaults()
	return c.outstandingSlots()
}

// Ticks is how many ticks the core has handled.
func Ticks(s *Server) (n int64) {
	s.query(func() { n = s.ticks })
	return n
}

// GraceLost is the time the session-grace clock has not counted so far; on is false when
// the extension is off.
func GraceLost(s *Server) (ms int64, on bool) {
	s.query(func() {
		if s.grace != nil {
			ms, on = s.grace.Lost(), true
		}
	})
	return ms, on
}

// RoleChanges counts the roles s has taken (each election, and what it led to, is one or
// more): equal counts before and after mean no election happened in between.
func RoleChanges(s *Server) int {
	var n int
	s.query(func() { n = s.ens.gen })
	return n
}

// Epochs are s's acceptedEpoch and currentEpoch as last persisted.
func Epochs(s *Server) (accepted, current int64) {
	s.query(func() { accepted, current = s.ens.st.AcceptedEpoch, s.ens.st.CurrentEpoch })
	return accepted, current
}

// RoleMode is the role's mode whether or not it serves yet ("leader" from the election on).
func RoleMode(s *Server) (m string) {
	s.query(func() { m = s.role.mode() })
	return m
}

// GraceHeld is how many sessions the leader keeps for a silent learner (session-grace);
// 0 on other roles or with the extension off.
func GraceHeld(s *Server) (n int) {
	s.query(func() {
		if r, ok := s.role.(*leaderRole); ok && r.hold != nil {
			n = r.hold.Held()
		}
	})
	return n
}
