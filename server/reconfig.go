package server

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/election"
	"github.com/zkd-io/zkd/internal/zab"
	"github.com/zkd-io/zkd/jute"
)

// Dynamic reconfiguration (reconfigEnabled): the membership an ensemble member keeps and
// what it does when that changes, as ZooKeeper's QuorumPeer does it. The core goroutine
// owns it. The committed configuration is s.ens.peers, s.ens.hier and s.ens.version
// (QuorumPeer.quorumVerifier); a newer proposed one is s.ens.lastSeen
// (lastSeenQuorumVerifier). Zab decides when a configuration is proposed and activated
// (internal/zab's ConfigEvents); this file carries the events out: the files, the election's
// voters, the election port's peers, /zookeeper/config, and the role the server goes to
// when its own part changed.
//
// With reconfig disabled nothing here changes anything: the configuration is zoo.cfg's, at
// version 0, as in ZooKeeper (processReconfig and setLastSeenQuorumVerifier return at once).

// afterReconfig is where a role ended by a reconfig goes without an election
// (QuorumPeer.reconfigFlag and the current vote it set): to lead, or to the leader the
// committing leader designated, as the learner type the new configuration gives.
type afterReconfig struct {
	leader int64
	zxid   int64
}

// membersByID indexes members by id, as a configuration holds them.
func membersByID(peers []config.Member) map[int]config.Member {
	out := make(map[int]config.Member, len(peers))
	for _, p := range peers {
		out[int(p.ID)] = p
	}
	return out
}

// PeersOf lists a configuration's members, sorted by id.
func PeersOf(servers map[int]config.Member) []config.Member {
	var out []config.Member
	for _, id := range slices.Sorted(maps.Keys(servers)) {
		out = append(out, servers[id])
	}
	return out
}

// dynamic is the committed configuration.
func (s *Server) dynamic() config.Dynamic {
	return config.Dynamic{Servers: membersByID(s.ens.peers), Hierarchy: s.ens.hier, Version: s.ens.version}
}

// zabConfig is a configuration as Zab needs it.
func zabConfig(d config.Dynamic) (zab.Config, error) {
	qv, err := d.Verifier()
	if err != nil {
		return zab.Config{}, err
	}
	addrs := make(map[int64]string, len(d.Servers))
	for id, spec := range d.Servers {
		addrs[int64(id)] = hostPort(spec.Host, spec.QuorumPort)
	}
	return zab.Config{QV: qv, Version: d.Version, Text: []byte(d.Text()), Addrs: addrs}, nil
}

func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

// sameMembers is QuorumMaj.equals and QuorumHierarchical.equals: the members and the shape,
// whatever the version.
func sameMembers(a, b config.Dynamic) bool {
	a.Version, b.Version = 0, 0
	return a.Text() == b.Text()
}

// setMembership makes d the committed configuration (QuorumPeer.setQuorumVerifier): the
// quorum rule, the election's voters, the election port's peers, and the files
// (zoo.cfg.dynamic.<version>, zoo.cfg's dynamicConfigFile line), written on the storage
// goroutine.
func (s *Server) setMembership(d config.Dynamic) error {
	qv, err := d.Verifier()
	if err != nil {
		return err
	}
	s.ens.peers = PeersOf(d.Servers)
	s.ens.hier = d.Hierarchy
	s.ens.version = d.Version
	s.ens.qv = qv
	if s.ens.lastSeen != nil && s.ens.lastSeen.Version <= d.Version {
		s.ens.lastSeen = nil
	}
	s.ens.elect.SetConfig(s.electionConfig())
	if ps, ok := s.ens.transport.(interface{ SetPeers(map[int64]string) }); ok {
		ps.SetPeers(s.electionPeers())
	}
	s.persistConfig([]byte(d.Text()), d.Version, false)
	return nil
}

// setLastSeen records a proposed configuration (setLastSeenQuorumVerifier): it is written
// to zoo.cfg.dynamic.next, and its new members' election ports are dialed.
func (s *Server) setLastSeen(d config.Dynamic) {
	if d.Version <= s.ens.version || (s.ens.lastSeen != nil && s.ens.lastSeen.Version >= d.Version) {
		return
	}
	s.rememberLastSeen(d)
}

// seeProposedConfigs records the configuration of each reconfig txn among txns as last
// seen, before the txns are queued for the log: the storage goroutine writes
// zoo.cfg.dynamic.next before it logs the proposal, so the file is on disk before the
// proposal's ack (ZooKeeper writes it before logging too). A server that acked a reconfig
// then knows it is pending after a crash, for the next leader to complete.
func (s *Server) seeProposedConfigs(txns []zab.Committed) {
	if !s.cfg.ReconfigEnabled {
		return
	}
	for _, c := range txns {
		text, ok := zab.ReconfigText(c.Data)
		if !ok {
			continue
		}
		if d, err := s.parseConfigText(text); err == nil {
			s.setLastSeen(d)
		}
	}
}

// leaderLastSeen takes the last seen configuration a leader sent with NEWLEADER. It
// replaces this server's whatever their versions (setLastSeenQuorumVerifier overwrites a
// newer one, only logging it): a proposal the new leader does not have was truncated from
// this server's log, and must not be activated later. One no newer than the committed
// configuration leaves nothing pending.
func (s *Server) leaderLastSeen(d config.Dynamic) {
	if s.ens.lastSeen != nil && s.ens.lastSeen.Version == d.Version {
		return
	}
	if d.Version <= s.ens.version {
		if s.ens.lastSeen != nil {
			s.ens.lastSeen = nil
			s.persistConfig(nil, 0, true) // removes zoo.cfg.dynamic.next
		}
		return
	}
	s.rememberLastSeen(d)
}

func (s *Server) rememberLastSeen(d config.Dynamic) {
	s.ens.lastSeen = &d
	if ps, ok := s.ens.transport.(interface{ SetPeers(map[int64]string) }); ok {
		peers := s.electionPeers()
		for _, p := range PeersOf(d.Servers) {
			if _, known := peers[p.ID]; !known && p.ID != s.cfg.ServerID {
				peers[p.ID] = strings.Join(p.ElectionAddrs(), "|")
			}
		}
		ps.SetPeers(peers)
	}
	s.persistConfig([]byte(d.Text()), d.Version, true)
}

func (s *Server) persistConfig(text []byte, version int64, next bool) {
	if s.cfg.PersistConfig == nil {
		return
	}
	s.storageOp(func() func() {
		if err := s.cfg.PersistConfig(text, version, next); err != nil {
			s.log.Error("cannot write the dynamic configuration file", "version", hex(version), "next", next, "err", err)
		}
		return nil
	})
}

// electionConfig is the election's view of the committed configuration.
func (s *Server) electionConfig() election.Config {
	cfg := election.Config{ID: s.cfg.ServerID, Voters: s.voters(), QV: s.ens.qv,
		FastDecision: s.cfg.FastElection, FinalizeWaitMs: s.cfg.finalizeWaitMs}
	if s.damaged {
		// It learns of a leader only from its peers' answers to its own resends: keep
		// them frequent, so it rejoins soon after the healthy members elect one.
		cfg.MaxNotificationIntervalMs = damagedResendMs
	}
	if s.cfg.finalizeWaitMs > 0 {
		// A test's long finalize wait must not stretch the resend interval with it (it
		// starts at the finalize wait): a notification lost while the peers connect is
		// resent as with ZooKeeper's 200 ms.
		cfg.MinNotificationIntervalMs = election.DefaultFinalizeWaitMs
	}
	for _, p := range s.ens.peers {
		if p.Observer {
			cfg.Observers = append(cfg.Observers, p.ID)
		}
	}
	if s.cfg.ReconfigEnabled {
		// ZooKeeper sends its configuration with every notification; a server that joins
		// learns the ensemble's from it.
		cfg.ConfigText = s.quorumConfigText()
		cfg.ParticipantWithoutVote = !s.ens.observer
	}
	return cfg
}

// electionPeers are the other members' election addresses.
func (s *Server) electionPeers() map[int64]string {
	peers := map[int64]string{}
	for _, p := range s.ens.peers {
		if p.ID != s.cfg.ServerID {
			peers[p.ID] = strings.Join(p.ElectionAddrs(), "|")
		}
	}
	return peers
}

// parseConfigText reads a configuration another server sent (NEWLEADER, a reconfig txn,
// an election notification).
func (s *Server) parseConfigText(text []byte) (config.Dynamic, error) {
	return config.ParseDynamicStandalone(text, s.cfg.StandaloneEnabled)
}

// onConfigEvent carries out what Zab decided about the configuration, after the Ready's
// txns were applied.
func (s *Server) onConfigEvent(ev zab.ConfigEvent) {
	if !s.cfg.ReconfigEnabled {
		return
	}
	switch ev.Kind {
	case zab.ConfigSeen, zab.ConfigFromLeader:
		d, err := s.parseConfigText(ev.Text)
		if err != nil {
			s.log.Warn("ignoring a configuration that does not parse", "zxid", hex(ev.Zxid), "err", err)
			return
		}
		if ev.Kind == zab.ConfigFromLeader {
			s.leaderLastSeen(d)
		} else {
			s.setLastSeen(d)
		}
	case zab.ConfigActivated, zab.ConfigLeaderActivated:
		major := s.processReconfig(ev.Text, ev.Designated, ev.Zxid)
		if s.role.keepsRoleOnActivate() {
			return
		}
		if major && s.stepDown == nil {
			s.stepDown = errReconfigured
			s.ens.flushOnLeave = true
		}
	}
}

// errReconfigured ends a role whose server's part in the ensemble a reconfig changed.
var errReconfigured = errors.New("changes proposed in reconfig")

// processReconfig is QuorumPeer.processReconfig: the configuration becomes the committed
// one if it is newer, /zookeeper/config shows it, and if its members changed, the election
// takes them and the server's own part is checked: it reports whether this server must
// leave its role (its learner type changed, or its leader did), and where it goes then.
func (s *Server) processReconfig(text []byte, designated, zxid int64) bool {
	d, err := s.parseConfigText(text)
	if err != nil {
		s.log.Warn("ignoring a configuration that does not parse", "zxid", hex(zxid), "err", err)
		return false
	}
	prev := s.dynamic()
	if d.Version > prev.Version {
		if err := s.setMembership(d); err != nil {
			s.log.Warn("ignoring a configuration without a valid quorum", "version", hex(d.Version), "err", err)
			return false
		}
		s.log.Info("configuration activated", "version", hex(d.Version), "members", len(d.Servers))
	}
	s.fillConfigNode()
	if prev.Version >= d.Version || sameMembers(prev, d) {
		return false
	}
	roleChange := s.updateLearnerType(d)
	leaderChange := false
	cur := s.ens.elect.Vote()
	if designated != zab.NoLeader {
		if designated != cur.Leader {
			s.ens.after = &afterReconfig{leader: designated, zxid: zxid}
			leaderChange = true
		}
	} else {
		oldLeader, inOld := prev.Servers[int(cur.Leader)]
		newLeader, inNew := d.Servers[int(cur.Leader)]
		leaderChange = !inOld || oldLeader.Observer || !inNew || newLeader.Observer ||
			hostPort(oldLeader.Host, oldLeader.QuorumPort) != hostPort(newLeader.Host, newLeader.QuorumPort)
		// No designated leader: an election decides (reconfigFlagClear).
		s.ens.after = nil
	}
	if roleChange && s.ens.after == nil && designated != zab.NoLeader {
		// The leader stays; this server changes its learner type under it.
		s.ens.after = &afterReconfig{leader: cur.Leader, zxid: zxid}
	}
	if me, ok := d.Servers[int(s.cfg.ServerID)]; ok && me.ClientPort != 0 {
		host := me.ClientHost
		if host == "" {
			host = "0.0.0.0" // a lone port: every interface, as QuorumServer reads it
		}
		s.moveClientPort(hostPort(host, me.ClientPort))
	}
	return roleChange || leaderChange
}

// updateLearnerType is QuorumPeer.updateLearnerType: an observer in the configuration is
// an observer, a participant or a server the configuration leaves out is a participant
// (without a vote in the latter case). It reports a change.
func (s *Server) updateLearnerType(d config.Dynamic) bool {
	spec, in := d.Servers[int(s.cfg.ServerID)]
	observer := in && spec.Observer
	if observer == s.ens.observer {
		return false
	}
	s.ens.observer = observer
	s.ens.elect.SetConfig(s.electionConfig())
	return true
}

// takeAfterReconfig is QuorumPeer.updateServerState after a reconfig: the role the
// server goes to without an election, if a reconfig named one.
func (s *Server) takeAfterReconfig() (election.Decision, bool) {
	a := s.ens.after
	s.ens.after = nil
	if a == nil || !s.cfg.ReconfigEnabled {
		return election.Decision{}, false
	}
	if _, ok := s.peer(a.leader); !ok {
		return election.Decision{}, false
	}
	d := election.Decision{Leader: a.leader, Zxid: a.zxid, ElectionEpoch: s.ens.elect.Round(), PeerEpoch: s.ens.st.CurrentEpoch}
	switch {
	case a.leader == s.cfg.ServerID:
		d.State = election.Leading
	case s.ens.observer:
		d.State = election.Observing
	default:
		d.State = election.Following
	}
	return d, true
}

// onElectionConfig is FastLeaderElection's check of the configuration a notification
// carries: while looking, a newer one is adopted and the election starts again with its
// voters. It reports whether the notification was consumed so.
func (s *Server) onElectionConfig(text []byte) bool {
	if !s.cfg.ReconfigEnabled || len(text) == 0 || !s.ens.electing {
		return false
	}
	v, err := config.ConfigVersion(text)
	if err != nil || v <= s.ens.version {
		return false
	}
	d, err := s.parseConfigText(text)
	if err != nil {
		return false
	}
	prev := s.dynamic()
	s.processReconfig(text, zab.NoLeader, 0)
	s.ens.after = nil
	if sameMembers(prev, d) {
		return false
	}
	s.log.Info("a newer configuration arrived with an election notification: restarting the election", "version", hex(v))
	s.ens.elect = election.New(s.electionConfig())
	s.sendElection(s.ens.elect.Start(s.nowMs(), s.electionZxid(), s.ens.st.CurrentEpoch))
	s.armElectionTimer()
	return true
}

// prepReconfig is the prep hook for reconfig requests: the role decides, and only a leader
// can prepare one.
func (s *Server) prepReconfig(req *jute.ReconfigRequest, zxid int64) ([]byte, jute.Code) {
	return s.role.prepReconfig(req, zxid)
}

// prepReconfig is the leader's part of a reconfig request before the ACL check
// (PrepRequestProcessor): RECONFIGINPROGRESS, BADVERSION, the new configuration from the
// request, and a synced quorum of it.
func (lr *leaderRole) prepReconfig(req *jute.ReconfigRequest, zxid int64) ([]byte, jute.Code) {
	if lr.zl == nil {
		return nil, jute.ErrUnimplemented
	}
	s := lr.s
	cur, last := lr.zl.CurrentConfig(), lr.zl.LastSeenConfig()
	if err := config.CheckReconfigStart(cur.Version, last.Version, req.CurConfigID); err != nil {
		return nil, reconfigCode(err)
	}
	base, err := s.parseConfigText(last.Text)
	if err != nil {
		return nil, jute.ErrSystemError
	}
	next, err := config.ApplyReconfig(base, jute.StrValue(req.JoiningServers), jute.StrValue(req.LeavingServers), req.NewMembers, config.ReconfigOptions{
		Version:           zxid,
		StandaloneEnabled: s.cfg.StandaloneEnabled,
	})
	if err != nil {
		s.log.Warn("reconfig refused", "err", err)
		return nil, reconfigCode(err)
	}
	nc, err := zabConfig(next)
	if err != nil {
		return nil, jute.ErrBadArguments
	}
	if !lr.zl.IsQuorumSynced(nc.QV) {
		s.log.Warn("reconfig refused: there must be a connected and synced quorum in the new configuration")
		return nil, jute.ErrNewConfigNoQuorum
	}
	lr.pendingConfig = &nc
	return nc.Text, jute.OK
}

func reconfigCode(err error) jute.Code {
	var re *config.ReconfigError
	if errors.As(err, &re) {
		return re.Code
	}
	return jute.ErrBadArguments
}

// zabConfigs are the leader's configurations at the start of its term.
func (s *Server) zabConfigs() (cur, lastSeen zab.Config, err error) {
	if cur, err = zabConfig(s.dynamic()); err != nil {
		return cur, lastSeen, fmt.Errorf("server: configuration %s: %w", hex(s.ens.version), err)
	}
	if ls := s.ens.lastSeen; ls != nil {
		if lastSeen, err = zabConfig(*ls); err != nil {
			return cur, zab.Config{}, nil // a pending configuration that cannot form quorums is dropped
		}
	}
	return cur, lastSeen, nil
}

// initMembership starts from the configuration the server was given.
func (s *Server) initMembership() error {
	s.ens.peers = slices.Clone(s.cfg.Peers)
	s.ens.hier = s.cfg.Hierarchy
	s.ens.version = s.cfg.ConfigVersion
	if me, ok := s.peer(s.cfg.ServerID); ok {
		s.ens.observer = me.Observer
	}
	if s.cfg.ReconfigEnabled && len(bytes.TrimSpace(s.cfg.LastSeenConfig)) > 0 {
		d, err := s.parseConfigText(s.cfg.LastSeenConfig)
		if err != nil {
			s.log.Warn("ignoring the last seen configuration (zoo.cfg.dynamic.next)", "err", err)
		} else if d.Version > s.ens.version {
			s.ens.lastSeen = &d
		}
	}
	qv, err := s.dynamic().Verifier()
	if err != nil {
		return fmt.Errorf("server: group.N and weight.N: %w", err)
	}
	s.ens.qv = qv
	return nil
}
