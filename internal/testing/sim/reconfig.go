package sim

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/zkd-io/zkd/internal/election"
	"github.com/zkd-io/zkd/internal/zab"
	"github.com/zkd-io/zkd/jute"
)

// Dynamic reconfiguration in the simulation (Options.Reconfig): each server keeps a
// membership as server/reconfig.go does (the committed configuration, a last seen one,
// whether it observes), on its disk as ZooKeeper's dynamic files are, and carries out
// Ready.Configs as the server does: the election's voters come from the committed
// configuration, a server a reconfig removed follows without a vote, and a role a reconfig
// ended goes straight to the designated leader (takeAfterReconfig). Leaders propose
// reconfigs among the writes. The checks add: configuration versions only increase, and
// any two quorums leaders used (to commit a txn or to be established) intersect in a
// member both counted, whenever they claim a configuration with the same voters; when they
// share none, the later one must use strictly newer configurations.

// simConfig is a configuration: who votes and who observes, at a version (the reconfig's
// zxid; 0 for the initial one, as zoo.cfg's).
type simConfig struct {
	version   int64
	voters    []int64 // sorted
	observers []int64 // sorted
}

func (c simConfig) isVoter(sid int64) bool    { return slices.Contains(c.voters, sid) }
func (c simConfig) isObserver(sid int64) bool { return slices.Contains(c.observers, sid) }
func (c simConfig) isMember(sid int64) bool   { return c.isVoter(sid) || c.isObserver(sid) }

func (c simConfig) sameMembers(o simConfig) bool {
	return slices.Equal(c.voters, o.voters) && slices.Equal(c.observers, o.observers)
}

func (c simConfig) String() string {
	return fmt.Sprintf("v%s voters %v observers %v", zab.Hex(c.version), c.voters, c.observers)
}

// text renders the configuration as ZooKeeper prints one (QuorumMaj.toString).
func (c simConfig) text() []byte {
	var lines []string
	for _, sid := range sortedUnion(c.voters, c.observers) {
		kind := "participant"
		if c.isObserver(sid) {
			kind = "observer"
		}
		lines = append(lines, fmt.Sprintf("server.%d=s%d:2888:3888:%s", sid, sid, kind))
	}
	return zab.SetTextVersion([]byte(strings.Join(lines, "\n")), c.version)
}

func parseConfig(text []byte) (simConfig, error) {
	c := simConfig{version: zab.TextVersion(text)}
	for _, l := range bytes.Split(text, []byte("\n")) {
		k, v, ok := strings.Cut(string(bytes.TrimSpace(l)), "=")
		if !ok || !strings.HasPrefix(k, "server.") {
			continue
		}
		sid, err := strconv.ParseInt(strings.TrimPrefix(k, "server."), 10, 64)
		if err != nil {
			return c, fmt.Errorf("sim: config line %q: %w", l, err)
		}
		if strings.HasSuffix(v, ":observer") {
			c.observers = append(c.observers, sid)
		} else {
			c.voters = append(c.voters, sid)
		}
	}
	slices.Sort(c.voters)
	slices.Sort(c.observers)
	if len(c.voters) == 0 {
		return c, fmt.Errorf("sim: config without voters: %q", text)
	}
	return c, nil
}

func (c simConfig) zab() zab.Config {
	addrs := map[int64]string{}
	for _, sid := range c.voters {
		addrs[sid] = fmt.Sprintf("s%d:2888", sid)
	}
	return zab.Config{QV: zab.NewMajority(c.voters...), Version: c.version, Text: c.text(), Addrs: addrs}
}

func sortedUnion(a, b []int64) []int64 {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

func reconfigTxn(zxid int64, text []byte) []byte {
	return jute.EncodeTxn(nil, &jute.LoggedTxn{
		Header: jute.TxnHeader{ClientID: 1, Cxid: int32(zxid), Zxid: zxid, Time: 1, Type: jute.OpReconfig},
		Body:   &jute.SetDataTxn{Path: "/zookeeper/config", Data: text, Version: -1},
	})
}

// afterReconfig is where a role a reconfig ended goes without an election.
type afterReconfig struct{ leader, zxid int64 }

// electionConfig is the election's view of the server's committed configuration.
func (s *Sim) electionConfig(sv *server) election.Config {
	cfg := election.Config{ID: sv.sid, Voters: s.voters, FastDecision: s.opt.FastElection}
	if s.opt.Reconfig {
		cfg.Voters, cfg.Observers = sv.cur.voters, sv.cur.observers
		cfg.ConfigText, cfg.ParticipantWithoutVote = sv.cur.text(), !sv.observer
	}
	if s.opt.BrokenElectionQuorum {
		cfg.QV = anyQuorum{zab.NewMajority(cfg.Voters...)}
	}
	return cfg
}

// setMembership makes c the committed configuration (server.setMembership), durably.
func (s *Sim) setMembership(sv *server, c simConfig) {
	if c.version < sv.cur.version {
		panic(violation("server %d's configuration went back from %v to %v", sv.sid, sv.cur, c))
	}
	sv.cur = c
	if sv.lastSeen != nil && sv.lastSeen.version <= c.version {
		sv.lastSeen = nil
	}
	sv.elect.SetConfig(s.electionConfig(sv))
	sv.disk.cur, sv.disk.lastSeen = sv.cur, sv.lastSeen
}

// setLastSeen records a proposed configuration (setLastSeenQuorumVerifier), durably as the
// .next file is written.
func (s *Sim) setLastSeen(sv *server, c simConfig) {
	if c.version <= sv.cur.version || (sv.lastSeen != nil && sv.lastSeen.version >= c.version) {
		return
	}
	sv.lastSeen = &c
	sv.disk.lastSeen = sv.lastSeen
}

// onConfigs carries out a Ready's ConfigEvents (server.onConfigEvent); it reports whether
// the server must leave its role.
func (s *Sim) onConfigs(sv *server, evs []zab.ConfigEvent) bool {
	leave := false
	for _, ev := range evs {
		c, err := parseConfig(ev.Text)
		if err != nil {
			panic(violation("server %d got a configuration that does not parse: %v", sv.sid, err))
		}
		switch ev.Kind {
		case zab.ConfigSeen, zab.ConfigFromLeader:
			s.setLastSeen(sv, c)
		case zab.ConfigActivated, zab.ConfigLeaderActivated:
			s.trace("sid %d activates %v (designated %d)", sv.sid, c, ev.Designated)
			if s.processReconfig(sv, c, ev.Designated, ev.Zxid) && sv.role != leading {
				leave = true
			}
		}
	}
	return leave
}

// processReconfig is server.processReconfig: c becomes the committed configuration if it
// is newer; it reports whether the server's learner type or its leader changed, and
// records where it goes then.
func (s *Sim) processReconfig(sv *server, c simConfig, designated, zxid int64) bool {
	prev := sv.cur
	if c.version > prev.version {
		s.setMembership(sv, c)
	}
	if prev.version >= c.version || prev.sameMembers(c) {
		return false
	}
	observer := c.isObserver(sv.sid)
	roleChange := observer != sv.observer
	if roleChange {
		sv.observer = observer
		sv.elect.SetConfig(s.electionConfig(sv))
	}
	cur := sv.leaderSid
	leaderChange := false
	if designated != zab.NoLeader {
		if designated != cur {
			sv.after = &afterReconfig{leader: designated, zxid: zxid}
			leaderChange = true
		}
	} else {
		leaderChange = !prev.isVoter(cur) || !c.isVoter(cur)
		sv.after = nil
	}
	if roleChange && sv.after == nil && designated != zab.NoLeader {
		sv.after = &afterReconfig{leader: cur, zxid: zxid}
	}
	return roleChange || leaderChange
}

// takeAfterReconfig is server.takeAfterReconfig: the role a reconfig named, without an
// election. It reports whether there was one.
func (s *Sim) takeAfterReconfig(sv *server) bool {
	a := sv.after
	sv.after = nil
	if a == nil || !s.opt.Reconfig || !sv.cur.isMember(a.leader) {
		return false
	}
	d := election.Decision{Leader: a.leader, Zxid: a.zxid, ElectionEpoch: sv.elect.Round(), PeerEpoch: sv.currentEpoch}
	switch {
	case a.leader == sv.sid:
		d.State = election.Leading
	case sv.observer:
		d.State = election.Observing
	default:
		d.State = election.Following
	}
	s.trace("sid %d takes the role a reconfig named: %v of %d", sv.sid, d.State, d.Leader)
	s.handovers++
	sv.elect.Decided(d)
	s.decided(sv, &d)
	return true
}

// onElectionConfig is the check of a notification's configuration while looking
// (server.onElectionConfig): a newer one is adopted, and the election starts again.
func (s *Sim) onElectionConfig(sv *server, text []byte) bool {
	if !s.opt.Reconfig || sv.role != looking || len(text) == 0 || zab.TextVersion(text) <= sv.cur.version {
		return false
	}
	c, err := parseConfig(text)
	if err != nil {
		return false
	}
	prev := sv.cur
	s.processReconfig(sv, c, zab.NoLeader, 0)
	sv.after = nil
	if prev.sameMembers(c) {
		return false
	}
	s.trace("sid %d adopts %v from an election notification", sv.sid, c)
	sv.elect = election.New(s.electionConfig(sv))
	s.sendElection(sv, sv.elect.Start(s.now, sv.lastLogged(), sv.currentEpoch))
	return true
}

// leaderTrack is what the checks follow of one leader's term: the configurations its
// quorums must come from, as the simulation (not Zab) understands them, and who acked what.
type leaderTrack struct {
	cur  simConfig
	next *simConfig
	// reconfig is the pending reconfig's zxid.
	reconfig int64
	// claims are the configurations each proposal needs a quorum of.
	claims map[int64][]simConfig
	// acked is, per follower (and the leader itself), the highest zxid it logged.
	acked         map[int64]int64
	newLeaderAcks map[int64]bool
	established   bool
}

func newLeaderTrack(sv *server) *leaderTrack {
	t := &leaderTrack{cur: sv.cur, claims: map[int64][]simConfig{}, acked: map[int64]int64{}, newLeaderAcks: map[int64]bool{sv.sid: true}}
	if sv.lastSeen != nil && sv.lastSeen.version > sv.cur.version {
		ls := *sv.lastSeen
		t.next = &ls
	}
	return t
}

func (t *leaderTrack) configs() []simConfig {
	if t.next != nil {
		return []simConfig{t.cur, *t.next}
	}
	return []simConfig{t.cur}
}

// quorumRecord is a set of acks a leader acted on: to commit key (a zxid), or to be
// established (key = epoch<<32).
type quorumRecord struct {
	what   string
	key    int64
	claims []simConfig
	acks   map[int64]bool
}

func (q quorumRecord) String() string {
	return fmt.Sprintf("%s at %s with acks %v under %v", q.what, zab.Hex(q.key), slices.Sorted(maps.Keys(q.acks)), q.claims)
}

func (q quorumRecord) maxVersion() int64 {
	v := int64(0)
	for _, c := range q.claims {
		v = max(v, c.version)
	}
	return v
}

func (q quorumRecord) minVersion() int64 {
	v := q.claims[0].version
	for _, c := range q.claims {
		v = min(v, c.version)
	}
	return v
}

// checkPair: two quorums that claim configurations with the same voters share a member
// counted in both; otherwise the later one's configurations are all newer.
func checkPair(a, b quorumRecord) {
	shared := false
	for _, ca := range a.claims {
		for _, cb := range b.claims {
			if !slices.Equal(ca.voters, cb.voters) {
				continue
			}
			shared = true
			common := false
			for _, sid := range ca.voters {
				if a.acks[sid] && b.acks[sid] {
					common = true
					break
				}
			}
			if !common {
				panic(violation("two disjoint quorums of voters %v:\n %v\n %v", ca.voters, a, b))
			}
		}
	}
	if shared {
		return
	}
	early, late := a, b
	if b.key < a.key {
		early, late = b, a
	}
	if late.minVersion() <= early.maxVersion() {
		panic(violation("a quorum of an older configuration was used after a newer one's:\n %v\n %v", early, late))
	}
}

// recordQuorum checks a quorum a leader acted on: it is a quorum of every configuration it
// must be one of, and it intersects the others (checkPair): an establishment or a reconfig's
// commit is checked against every quorum so far, an ordinary commit against those.
func (s *Sim) recordQuorum(q quorumRecord, pivot bool) {
	if len(q.claims) == 0 {
		return
	}
	if !s.opt.intersectionOnly {
		for _, c := range q.claims {
			n := 0
			for _, sid := range c.voters {
				if q.acks[sid] {
					n++
				}
			}
			if 2*n <= len(c.voters) {
				panic(violation("not a quorum of voters %v (version %s): %v", c.voters, zab.Hex(c.version), q))
			}
		}
	}
	for _, p := range s.pivots {
		checkPair(p, q)
	}
	if pivot {
		for _, c := range s.commits {
			checkPair(c, q)
		}
		s.pivots = append(s.pivots, q)
		return
	}
	key := fmt.Sprint(zab.Epoch(q.key), q.claims, slices.Sorted(maps.Keys(q.acks)))
	if !s.commitKinds[key] {
		s.commitKinds[key] = true
		s.commits = append(s.commits, q)
	}
}

// recordActivation checks that configurations are committed with increasing versions, one
// membership per version.
func (s *Sim) recordActivation(key int64, c simConfig) {
	for _, a := range s.activations {
		switch {
		case a.version == c.version && !a.cfg.sameMembers(c):
			panic(violation("version %s committed as %v and as %v", zab.Hex(c.version), a.cfg, c))
		case a.key < key && a.version > c.version, a.key > key && a.version < c.version:
			panic(violation("configuration %v committed at %s, but %v at %s", c, zab.Hex(key), a.cfg, zab.Hex(a.key)))
		}
	}
	s.activations = append(s.activations, activation{key: key, version: c.version, cfg: c})
	s.reconfigs++
}

type activation struct {
	key, version int64
	cfg          simConfig
}

// onLeaderReady follows what a leader's Ready says about its quorums before the Applier
// carries it out: the commits it made and the acks they rest on, and its establishment.
func (s *Sim) onLeaderReady(sv *server, r zab.Ready) {
	t := sv.track
	if t == nil || !s.opt.Reconfig {
		return
	}
	if r.Serving && !t.established {
		t.established = true
		e := sv.leader.Epoch()
		if t.next == nil && t.cur.version == 0 {
			// ZOOKEEPER-1783: the zoo.cfg configuration takes the epoch's version.
			n := t.cur
			n.version = zab.MakeZxid(e, 0)
			t.next = &n
		}
		s.recordQuorum(quorumRecord{what: fmt.Sprintf("leader %d established", sv.sid), key: zab.MakeZxid(e, 0), claims: t.configs(), acks: maps.Clone(t.newLeaderAcks)}, true)
		if t.next != nil {
			s.recordActivation(zab.MakeZxid(e, 0), *t.next)
			t.cur, t.next = *t.next, nil
		}
	}
	for _, c := range r.Apply {
		acks := map[int64]bool{}
		for sid, z := range t.acked {
			if z >= c.Zxid {
				acks[sid] = true
			}
		}
		reconfig := c.Zxid == t.reconfig && t.next != nil
		s.recordQuorum(quorumRecord{what: fmt.Sprintf("leader %d committed", sv.sid), key: c.Zxid, claims: t.claims[c.Zxid], acks: acks}, reconfig)
		delete(t.claims, c.Zxid)
		if reconfig {
			s.reconfigsCommitted++
			s.recordActivation(c.Zxid, *t.next)
			t.cur, t.next, t.reconfig = *t.next, nil, 0
		}
	}
}

// leaderReady is every leader Ready's way to its Applier.
func (s *Sim) leaderReady(sv *server, r zab.Ready) {
	s.onLeaderReady(sv, r)
	sv.apply.Push(r)
}

// observeAck notes an ACK a follower sent its leader.
func (s *Sim) observeAck(sv *server, c *qconn, p jute.QuorumPacket) {
	t := sv.track
	if t == nil || c.observer || p.Type != zab.PktAck {
		return
	}
	if zab.Counter(p.Zxid) == 0 {
		if !t.established && zab.Epoch(p.Zxid) == sv.leader.Epoch() {
			t.newLeaderAcks[c.learner] = true
		}
		return
	}
	t.acked[c.learner] = max(t.acked[c.learner], p.Zxid)
}

// proposeReconfig is a client's reconfig at the leader: add a server, remove one, turn a
// participant into an observer or back, or remove the leader itself. As the server's
// prepReconfig, it is refused while one is pending or without a synced quorum of the new
// configuration.
func (s *Sim) proposeReconfig(sv *server) {
	t := sv.track
	if sv.leader.ReconfigPending() || t.next != nil {
		return
	}
	cur := t.cur
	var outside []int64
	for _, sid := range s.sids {
		if !cur.isMember(sid) {
			outside = append(outside, sid)
		}
	}
	next := simConfig{voters: slices.Clone(cur.voters), observers: slices.Clone(cur.observers)}
	del := func(xs []int64, sid int64) []int64 {
		return slices.DeleteFunc(xs, func(x int64) bool { return x == sid })
	}
	pick := func(xs []int64) int64 { return xs[s.rng.IntN(len(xs))] }
	canShrink := len(cur.voters) > 3
	type op struct {
		what string
		do   func()
	}
	var ops []op
	if len(outside) > 0 {
		sid := pick(outside)
		ops = append(ops,
			op{fmt.Sprintf("add participant %d", sid), func() { next.voters = append(next.voters, sid) }},
			op{fmt.Sprintf("add observer %d", sid), func() { next.observers = append(next.observers, sid) }})
	}
	if canShrink {
		sid := pick(cur.voters)
		ops = append(ops,
			op{fmt.Sprintf("remove participant %d", sid), func() { next.voters = del(next.voters, sid) }},
			op{fmt.Sprintf("participant %d -> observer", sid), func() {
				next.voters = del(next.voters, sid)
				next.observers = append(next.observers, sid)
			}})
		if cur.isVoter(sv.sid) {
			ops = append(ops, op{fmt.Sprintf("remove the leader %d", sv.sid), func() { next.voters = del(next.voters, sv.sid) }})
		}
	}
	if len(cur.observers) > 0 {
		sid := pick(cur.observers)
		ops = append(ops,
			op{fmt.Sprintf("observer %d -> participant", sid), func() {
				next.observers = del(next.observers, sid)
				next.voters = append(next.voters, sid)
			}},
			op{fmt.Sprintf("remove observer %d", sid), func() { next.observers = del(next.observers, sid) }})
	}
	// A bulk reconfig (new members), as an operator moves an ensemble to other servers:
	// 3 to 5 voters from the servers following this leader, those outside the current
	// voters first, so that the new voters share as few servers as can be with the old.
	var up []int64
	for _, ls := range sv.leader.Learners() {
		if ls.Synced && !ls.Observer {
			up = append(up, ls.Sid)
		}
	}
	if len(up) >= 2 {
		ops = append(ops, op{"new members", func() {
			cands := append(slices.Clone(up), sv.sid)
			s.rng.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
			slices.SortStableFunc(cands, func(a, b int64) int {
				return cmp.Compare(boolInt(cur.isVoter(a)), boolInt(cur.isVoter(b)))
			})
			k := min(len(cands), 3+s.rng.IntN(3))
			next.voters, next.observers = slices.Clone(cands[:k]), nil
			for _, sid := range s.sids {
				if !slices.Contains(next.voters, sid) && s.rng.IntN(2) == 0 {
					next.observers = append(next.observers, sid)
				}
			}
		}})
	}
	chosen := ops[s.rng.IntN(len(ops))]
	chosen.do()
	what := chosen.what
	slices.Sort(next.voters)
	slices.Sort(next.observers)
	nz := next.zab()
	if next.sameMembers(cur) {
		return
	}
	if !sv.leader.IsQuorumSynced(nz.QV) {
		s.trace("sid %d refuses reconfig %s -> %v: no synced quorum", sv.sid, what, next)
		return // NEWCONFIGNOQUORUM
	}
	z, err := sv.leader.NextZxid()
	if err != nil {
		return
	}
	next.version = z
	nz = next.zab()
	data := reconfigTxn(z, nz.Text)
	s.txns[z] = data
	s.trace("sid %d proposes reconfig %s: %s -> %v", sv.sid, zab.Hex(z), what, next)
	t.next, t.reconfig = &next, z
	t.claims[z] = t.configs()
	s.proposed++
	s.leaderReady(sv, sv.leader.ProposeReconfig(z, data, nz))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
