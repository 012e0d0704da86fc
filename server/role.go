package server

import (
	"net"
	"time"

	"github.com/zkd-io/zkd/internal/admin"
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

	// view is what observers (srvr, mntr, the AdminServer, the console) see of the role,
	// copied so that it can leave the core goroutine.
	view() roleView
	// learner is the role's learner state, nil unless it follows a leader.
	learner() *learnerRole
	// refuse answers, before the pipeline, a request the role does not serve, and reports
	// whether it did.
	refuse(c *conn, req *request) bool
	// resetStats starts the role's own statistics again (srst).
	resetStats()
	// eachObserver calls f with each synced observer this role serves proposals to.
	eachObserver(f func(q *quorumConn, sid int64))
	// prepReconfig is the part of a reconfig request only a leader can prepare.
	prepReconfig(req *jute.ReconfigRequest, zxid int64) ([]byte, jute.Code)
	// keepsRoleOnActivate reports whether the role stays when a configuration it
	// committed is activated, rather than leaving it for a new election.
	keepsRoleOnActivate() bool
	// refusesClients reports whether the role closes client connections while serving
	// the ensemble (a leader under zookeeper.leaderServes=no).
	refusesClients() bool
}

// roleView is a copy of what observers need to know about the role.
type roleView struct {
	// state names the role: standalone, looking, read-only, leader, follower or observer.
	state string
	// leader is the sid of the leader this server is or follows, -1 when there is none.
	leader int64
	// lead is the leader's own figures, nil on any other role.
	lead *leaderView
	// masterSid is an observer's learner master: the leader, or a follower with
	// observerMasterPort (mntr's observer_master_id); 0 on other roles.
	masterSid int64
	// syncedObservers counts a follower's observer master's synced observers; -1 when it
	// runs none.
	syncedObservers int
}

// leaderView is a leader's part of roleView.
type leaderView struct {
	stats        zab.LeaderStats
	learners     []zab.LearnerState
	lastProposed int64
	// uptime is how long a quorum has followed this leader, 0 before one has.
	uptime        time.Duration
	proposalSizes admin.BufferStats
}

// roleDefaults are the answers of a role that leads nobody and refuses nothing; the roles
// embed it and override what differs.
type roleDefaults struct{}

func (roleDefaults) learner() *learnerRole                 { return nil }
func (roleDefaults) refuse(*conn, *request) bool           { return false }
func (roleDefaults) resetStats()                           {}
func (roleDefaults) eachObserver(func(*quorumConn, int64)) {}
func (roleDefaults) keepsRoleOnActivate() bool             { return false }
func (roleDefaults) refusesClients() bool                  { return false }
func (roleDefaults) prepReconfig(*jute.ReconfigRequest, int64) ([]byte, jute.Code) {
	return nil, jute.ErrUnimplemented // standalone: reconfiguration is not supported
}

// noLeaderView is the view of a role that has no leader.
func noLeaderView(state string) roleView {
	return roleView{state: state, leader: -1, syncedObservers: -1}
}

// lookingRole is an ensemble member between leaders: it serves nobody and proposes nothing.
type lookingRole struct{ roleDefaults }

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
func (lookingRole) view() roleView                                                { return noLeaderView("looking") }

func closeConn(nc net.Conn) {
	if nc != nil {
		nc.Close()
	}
}

// zabRole is what the leader and the learners share as Zab's hosts: the Applier that
// carries out their Readys, and the disk steps, which run on the storage goroutine.
type zabRole struct {
	roleDefaults
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
