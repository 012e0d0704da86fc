package server

import (
	"net"
	"time"

	"github.com/zkd-io/zkd/internal/zab"
	"github.com/zkd-io/zkd/jute"
)

// role is what this server is: standalone, looking for a leader, leader, follower or
// observer. The core calls it wherever the roles differ; nothing else asks which role the
// server has. A role runs on the core goroutine and never blocks: disk work goes to the
// storage goroutine and comes back as a completion.
type role interface {
	// mode is srvr's "Mode:" while serving (standalone, leader, follower, observer).
	mode() string
	// serving reports whether clients may be served.
	serving() bool
	// ownsSessions reports whether this server decides expiries and removes containers.
	ownsSessions() bool
	// syncIsWrite reports whether sync goes through the pipeline (in an ensemble it proves
	// a quorum) rather than being answered at once like a read.
	syncIsWrite() bool

	// createSession starts a new session's createSession txn.
	createSession(sess *clientSession)
	// reconnect checks a session a client reconnected with, then attaches or refuses it.
	reconnect(c *conn, req *jute.ConnectRequest)
	// submit sends a client write or sync into the pipeline.
	submit(q *queued)
	// nextZxid reserves the zxid of the next proposal; ok is false when none can be had.
	nextZxid() (zxid int64, ok bool)
	// propose puts a prepared txn into the pipeline.
	propose(p *pendingTxn)
	// durable reports that the log is durable up to zxid.
	durable(zxid int64)
	// tick drives the role's clocks.
	tick(now time.Time)
	// touch records client activity on a session.
	touch(sess *clientSession)
	// sessionClosed forgets what the role keeps about a closed session.
	sessionClosed(id int64)

	// quorumAccepted and quorumDialed are new quorum connections: a learner's at the
	// leader's port, and ours to the leader we follow (err when none could be made).
	quorumAccepted(nc net.Conn, ln net.Listener)
	quorumDialed(nc net.Conn, leader int64, err error)
	// quorumPacket and quorumClosed are a quorum connection's input.
	quorumPacket(q *quorumConn, p jute.QuorumPacket, snap *snapState)
	quorumClosed(q *quorumConn)
	// stop ends the role: its connections are closed, its state machines forgotten.
	stop()
}

// lookingRole is an ensemble member between leaders: it serves nobody and proposes nothing.
type lookingRole struct{}

func (lookingRole) mode() string                                                  { return "" }
func (lookingRole) serving() bool                                                 { return false }
func (lookingRole) ownsSessions() bool                                            { return false }
func (lookingRole) syncIsWrite() bool                                             { return true }
func (lookingRole) createSession(*clientSession)                                  {}
func (lookingRole) reconnect(*conn, *jute.ConnectRequest)                         {}
func (lookingRole) submit(*queued)                                                {}
func (lookingRole) nextZxid() (int64, bool)                                       { return 0, false }
func (lookingRole) propose(*pendingTxn)                                           {}
func (lookingRole) durable(int64)                                                 {}
func (lookingRole) tick(time.Time)                                                {}
func (lookingRole) touch(*clientSession)                                          {}
func (lookingRole) sessionClosed(int64)                                           {}
func (lookingRole) quorumAccepted(nc net.Conn, _ net.Listener)                    { nc.Close() }
func (lookingRole) quorumDialed(nc net.Conn, _ int64, _ error)                    { closeConn(nc) }
func (lookingRole) quorumPacket(q *quorumConn, _ jute.QuorumPacket, _ *snapState) { q.close() }
func (lookingRole) quorumClosed(*quorumConn)                                      {}
func (lookingRole) stop()                                                         {}

func closeConn(nc net.Conn) {
	if nc != nil {
		nc.Close()
	}
}

// zabRole is what the leader and the learners share as Zab's hosts: the Applier that
// carries out their Readys, and the disk steps, which run on the storage goroutine.
type zabRole struct {
	s     *Server
	gen   int // the role change that made this role
	apply *zab.Applier
}

func newZabRole(s *Server, h zab.Host) zabRole {
	s.ens.gen++
	return zabRole{s: s, gen: s.ens.gen, apply: zab.NewApplier(h)}
}

// current reports whether this role is still the server's.
func (z *zabRole) current() bool { return z.s.ens.gen == z.gen }

// done tells the Applier a disk step ended, unless the role ended first.
func (z *zabRole) done() {
	if z.current() {
		z.apply.Done()
	}
}

// PersistEpoch writes an epoch file on the storage goroutine.
func (z *zabRole) PersistEpoch(accepted bool, epoch int64) bool {
	s := z.s
	name := "currentEpoch"
	if accepted {
		name = "acceptedEpoch"
	}
	s.storageOp(func() func() {
		if err := s.writeEpoch(name, epoch); err != nil {
			s.failStop(err)
			return nil
		}
		return func() {
			// On disk now, whatever the role by now.
			if accepted {
				s.ens.st.AcceptedEpoch = epoch
			} else {
				s.ens.st.CurrentEpoch = epoch
			}
			z.done()
		}
	})
	return false
}

func (z *zabRole) Append(txns []zab.Committed) {
	z.s.seeProposedConfigs(txns)
	for _, c := range txns {
		z.s.queueAppend(c.Zxid, c.Data)
	}
}
