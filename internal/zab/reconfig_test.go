package zab

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/jute"
)

// Reconfig tests drive one leader and real learners by hand: every packet is routed at
// once, disks are instant, and a drop filter decides which learner ACKs reach the leader,
// so each test chooses exactly who acked what.

// rcConfig is a configuration of voters (and observers) at version v, as text and as Zab
// needs it; addrs default to "h<sid>:2888".
func rcConfig(v int64, voters []int64, observers ...int64) Config {
	var lines []string
	addrs := map[int64]string{}
	for _, sid := range voters {
		addrs[sid] = fmt.Sprintf("h%d:2888", sid)
		lines = append(lines, fmt.Sprintf("server.%d=h%d:2888:3888:participant", sid, sid))
	}
	for _, sid := range observers {
		lines = append(lines, fmt.Sprintf("server.%d=h%d:2888:3888:observer", sid, sid))
	}
	text := []byte(strings.Join(lines, "\n"))
	return Config{QV: NewMajority(voters...), Version: v, Text: SetTextVersion(text, v), Addrs: addrs}
}

func reconfigTxn(zxid int64, text []byte) []byte {
	return jute.EncodeTxn(nil, &jute.LoggedTxn{
		Header: jute.TxnHeader{ClientID: 1, Cxid: 1, Zxid: zxid, Time: 1, Type: jute.OpReconfig},
		Body:   &jute.SetDataTxn{Path: "/zookeeper/config", Data: text, Version: -1},
	})
}

type rcNode struct {
	sid      int64
	conn     ConnID
	observer bool
	l        *Learner
	inbox    []jute.QuorumPacket
	got      []jute.QuorumPacket // every packet the leader sent it
	events   []ConfigEvent
	applied  []int64
	serving  bool
}

type rcEnsemble struct {
	t       *testing.T
	now     int64
	ld      *Leader
	nodes   map[ConnID]*rcNode
	toLd    []rcMsg
	events  []ConfigEvent // the leader's
	applied []int64       // the leader's
	serving bool
	// holdLocal keeps the leader's own log acks back (LocalLogged is then the test's).
	holdLocal bool
	// drop, when set, drops a learner ACK of a proposal (not of NEWLEADER / UPTODATE).
	drop func(sid, zxid int64) bool
}

type rcMsg struct {
	conn ConnID
	p    jute.QuorumPacket
}

func newRcEnsemble(t *testing.T, cfg LeaderConfig) *rcEnsemble {
	t.Helper()
	e := &rcEnsemble{t: t, now: 1000, nodes: map[ConnID]*rcNode{}}
	cfg.Reconfig = true
	if cfg.TickMs == 0 {
		cfg.TickMs, cfg.InitLimit, cfg.SyncLimit = 100, 10, 5
	}
	var r Ready
	e.ld, r = NewLeader(cfg, PersistentState{}, 0, nil, e.now)
	e.leaderReady(r)
	return e
}

func (e *rcEnsemble) add(sid int64, observer bool) *rcNode {
	n := &rcNode{sid: sid, conn: ConnID(len(e.nodes) + 1), observer: observer}
	e.nodes[n.conn] = n
	e.ld.Accept(n.conn, e.now)
	var r Ready
	n.l, r = NewLearner(LearnerConfig{ID: sid, Observer: observer, TickMs: 100, InitLimit: 10, SyncLimit: 5}, PersistentState{}, e.now)
	e.learnerReady(n, r)
	return n
}

func (e *rcEnsemble) node(sid int64) *rcNode {
	for _, n := range e.nodes {
		if n.sid == sid {
			return n
		}
	}
	e.t.Fatalf("no learner %d", sid)
	return nil
}

func (e *rcEnsemble) leaderReady(r Ready) {
	e.t.Helper()
	if r.Err != nil {
		e.t.Fatalf("leader: %v", r.Err)
	}
	for _, o := range r.Out {
		if n := e.nodes[o.Conn]; n != nil {
			n.inbox = append(n.inbox, o.Packet)
			n.got = append(n.got, o.Packet)
		}
	}
	e.applied = append(e.applied, applyZxidsOf(r.Apply)...)
	e.events = append(e.events, r.Configs...)
	e.serving = e.serving || r.Serving
	if len(r.Append) > 0 && !e.holdLocal {
		e.leaderReady(e.ld.LocalLogged(r.Append[len(r.Append)-1].Zxid))
	}
}

func (e *rcEnsemble) learnerReady(n *rcNode, r Ready) {
	e.t.Helper()
	if r.Err != nil {
		e.t.Fatalf("learner %d: %v", n.sid, r.Err)
	}
	for _, o := range r.Out {
		e.toLd = append(e.toLd, rcMsg{n.conn, o.Packet})
	}
	n.applied = append(n.applied, applyZxidsOf(r.Apply)...)
	n.events = append(n.events, r.Configs...)
	n.serving = n.serving || r.Serving
	if len(r.Append) > 0 {
		e.learnerReady(n, n.l.Logged(r.Append[len(r.Append)-1].Zxid))
	}
}

func applyZxidsOf(cs []Committed) []int64 {
	var out []int64
	for _, c := range cs {
		out = append(out, c.Zxid)
	}
	return out
}

// pump delivers every packet until none is left.
func (e *rcEnsemble) pump() {
	e.t.Helper()
	for range 100000 {
		moved := false
		conns := make([]ConnID, 0, len(e.nodes))
		for id := range e.nodes {
			conns = append(conns, id)
		}
		sort.Slice(conns, func(i, j int) bool { return conns[i] < conns[j] })
		for _, id := range conns {
			n := e.nodes[id]
			for len(n.inbox) > 0 {
				p := n.inbox[0]
				n.inbox = n.inbox[1:]
				e.learnerReady(n, n.l.Receive(e.now, p))
				moved = true
			}
		}
		for len(e.toLd) > 0 {
			m := e.toLd[0]
			e.toLd = e.toLd[1:]
			moved = true
			if m.p.Type == PktAck && Counter(m.p.Zxid) != 0 && e.drop != nil && e.drop(e.nodes[m.conn].sid, m.p.Zxid) {
				continue
			}
			e.leaderReady(e.ld.Receive(m.conn, e.now, m.p))
		}
		if !moved {
			return
		}
	}
	e.t.Fatal("packets never stopped")
}

// ack delivers an ACK of zxid from sid straight to the leader (it means sid logged every
// proposal up to zxid).
func (e *rcEnsemble) ack(sid, zxid int64) {
	e.t.Helper()
	e.leaderReady(e.ld.Receive(e.node(sid).conn, e.now, jute.QuorumPacket{Type: PktAck, Zxid: zxid}))
	e.pump()
}

func (e *rcEnsemble) propose() int64 {
	e.t.Helper()
	z, err := e.ld.NextZxid()
	if err != nil {
		e.t.Fatal(err)
	}
	e.leaderReady(e.ld.Propose(z, txnData(z)))
	e.pump()
	return z
}

func (e *rcEnsemble) reconfig(next Config) int64 {
	e.t.Helper()
	z, err := e.ld.NextZxid()
	if err != nil {
		e.t.Fatal(err)
	}
	next.Version = z
	next.Text = SetTextVersion(next.Text, z)
	e.leaderReady(e.ld.ProposeReconfig(z, reconfigTxn(z, next.Text), next))
	e.pump()
	return z
}

// established starts an ensemble whose configuration is cur (a non-zero version, so no
// ZOOKEEPER-1783 bump) with the given followers and observers, all synced.
func established(t *testing.T, leader int64, cur Config, followers []int64, observers ...int64) *rcEnsemble {
	t.Helper()
	e := newRcEnsemble(t, LeaderConfig{ID: leader, Current: cur})
	for _, sid := range followers {
		e.add(sid, false)
	}
	for _, sid := range observers {
		e.add(sid, true)
	}
	e.pump()
	if !e.serving {
		t.Fatal("leader not established")
	}
	for _, n := range e.nodes {
		if !n.serving {
			t.Fatalf("learner %d not synced", n.sid)
		}
	}
	return e
}

func committedAt(applied []int64, z int64) bool { return slices.Contains(applied, z) }

func activations(evs []ConfigEvent, kind ConfigKind) []ConfigEvent {
	var out []ConfigEvent
	for _, ev := range evs {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// TestReconfigNeedsQuorumsOfBoth: a reconfig, and every proposal after it while it is
// pending, commits only with a quorum of the old configuration and one of the new.
func TestReconfigNeedsQuorumsOfBoth(t *testing.T) {
	old := rcConfig(MakeZxid(0, 1), []int64{1, 2, 3})
	next := rcConfig(0, []int64{1, 4, 5})
	for _, tc := range []struct {
		name   string
		acking []int64 // the followers whose acks arrive (the leader acks too)
		commit bool
	}{
		{"only the old config's quorum", []int64{2, 3}, false},
		{"only the new config's quorum", []int64{4, 5}, false},
		{"quorums of both", []int64{2, 4}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := established(t, 1, old, []int64{2, 3, 4, 5})
			e.drop = func(sid, _ int64) bool { return !slices.Contains(tc.acking, sid) }
			z := e.reconfig(next)
			if got := committedAt(e.applied, z); got != tc.commit {
				t.Fatalf("reconfig acked by the leader and %v: committed %v, want %v", tc.acking, got, tc.commit)
			}
			z2 := e.propose()
			if got := committedAt(e.applied, z2); got != tc.commit {
				t.Fatalf("proposal after the reconfig acked by the leader and %v: committed %v, want %v", tc.acking, got, tc.commit)
			}
		})
	}
}

// TestReconfigProposalAfterNeedsBoth: a proposal made while the reconfig is pending needs
// both quorums on its own; once the new configuration is current, only its quorum counts.
func TestReconfigProposalAfterNeedsBoth(t *testing.T) {
	e := established(t, 1, rcConfig(MakeZxid(0, 1), []int64{1, 2, 3}), []int64{2, 3, 4, 5})
	var z1, z2 int64
	e.drop = func(sid, zxid int64) bool {
		// The reconfig gets every ack; the next proposal only the old configuration's.
		return zxid == z2 && sid != 2 && sid != 3
	}
	z1 = e.reconfig(rcConfig(0, []int64{1, 4, 5}))
	z2 = z1 + 1
	e.holdLocal = true
	if got := e.propose(); got != z2 {
		t.Fatalf("proposed %s, want %s", Hex(got), Hex(z2))
	}
	e.leaderReady(e.ld.LocalLogged(z2))
	if !committedAt(e.applied, z1) || committedAt(e.applied, z2) {
		t.Fatalf("applied %v: want the reconfig %s committed and %s (acked by 1, 2, 3 only) not", e.applied, Hex(z1), Hex(z2))
	}
	e.ack(4, z2)
	if !committedAt(e.applied, z2) {
		t.Fatalf("applied %v: %s acked by a quorum of both not committed", e.applied, Hex(z2))
	}
	// The new configuration alone now: 1 and 4, without 2 or 3.
	e.drop = func(sid, _ int64) bool { return sid != 4 }
	e.holdLocal = false
	if z3 := e.propose(); !committedAt(e.applied, z3) {
		t.Fatalf("after activation, %s acked by 1 and 4 (a quorum of {1,4,5}) not committed", Hex(z3))
	}
}

// TestReconfigActivatePackets: followers get COMMITANDACTIVATE and observers
// INFORMANDACTIVATE, both naming the designated leader, and report ConfigActivated.
func TestReconfigActivatePackets(t *testing.T) {
	for _, tc := range []struct {
		name      string
		next      Config
		designate int64
	}{
		{"leader stays", rcConfig(0, []int64{1, 2, 4}), 1},
		{"leader removed", rcConfig(0, []int64{2, 3, 4}), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := established(t, 1, rcConfig(MakeZxid(0, 1), []int64{1, 2, 3}), []int64{2, 3, 4}, 6)
			z := e.reconfig(tc.next)
			if !committedAt(e.applied, z) {
				t.Fatal("reconfig not committed")
			}
			for _, n := range e.nodes {
				want := PktCommitAndActivate
				if n.observer {
					want = PktInformAndActivate
				}
				var pk *jute.QuorumPacket
				for i := range n.got {
					if n.got[i].Zxid == z && (n.got[i].Type == PktCommit || n.got[i].Type == PktInform || n.got[i].Type == want) {
						pk = &n.got[i]
					}
				}
				if pk == nil || pk.Type != want {
					t.Fatalf("learner %d got %v for the reconfig, want %s", n.sid, pk, PacketName(want))
				}
				if d := int64(binary.BigEndian.Uint64(pk.Data)); d != tc.designate {
					t.Fatalf("learner %d: %s names leader %d, want %d", n.sid, PacketName(want), d, tc.designate)
				}
				acts := activations(n.events, ConfigActivated)
				if len(acts) != 1 || acts[0].Zxid != z || acts[0].Designated != tc.designate || TextVersion(acts[0].Text) != z {
					t.Fatalf("learner %d's activations %s, want one of %s designating %d", n.sid, describeEvents(acts), Hex(z), tc.designate)
				}
			}
			acts := activations(e.events, ConfigActivated)
			if len(acts) != 1 || acts[0].Designated != tc.designate {
				t.Fatalf("leader's activations %s, want one designating %d", describeEvents(acts), tc.designate)
			}
		})
	}
}

// TestReconfigDesignate follows Leader.getDesignatedLeader: the leader itself if it stays
// a voter at the same address; else, among the new voters that acked the reconfig, the one
// that acked most of the proposals after it, counting an ack for a configuration only when
// the acker votes in it.
func TestReconfigDesignate(t *testing.T) {
	old := rcConfig(MakeZxid(0, 1), []int64{1, 2, 3})
	t.Run("address changed", func(t *testing.T) {
		e := established(t, 1, old, []int64{2, 3})
		next := rcConfig(0, []int64{1, 2, 3})
		next.Addrs[1] = "elsewhere:2888"
		e.reconfig(next)
		if acts := activations(e.events, ConfigActivated); len(acts) != 1 || acts[0].Designated == 1 {
			t.Fatalf("leader whose quorum address moved designated %s, want another", describeEvents(acts))
		}
	})
	t.Run("most acked, per configuration", func(t *testing.T) {
		e := established(t, 1, old, []int64{2, 3, 4})
		e.holdLocal = true
		e.drop = func(int64, int64) bool { return true }
		z1 := e.reconfig(rcConfig(0, []int64{2, 3, 4}))
		z2, z3 := e.propose(), e.propose()
		// 4 acked everything, but it is not a voter of the old configuration, which z2 and
		// z3 also need: only 3's ack of z2 counts there.
		e.ack(4, z3)
		e.ack(3, z2)
		if committedAt(e.applied, z1) {
			t.Fatal("reconfig committed before a quorum of the old configuration acked")
		}
		e.ack(2, z1)
		if !committedAt(e.applied, z1) {
			t.Fatal("reconfig acked by 1, 2, 3, 4 not committed")
		}
		acts := activations(e.events, ConfigActivated)
		if len(acts) != 1 || acts[0].Designated != 3 {
			t.Fatalf("designated %s, want 3 (the only new voter that acked %s in both configurations)", describeEvents(acts), Hex(z2))
		}
		// A leader that designated another commits nothing more.
		e.leaderReady(e.ld.LocalLogged(z3))
		e.ack(2, z3)
		e.ack(3, z3)
		if committedAt(e.applied, z2) || committedAt(e.applied, z3) {
			t.Fatalf("leader that designated 3 went on committing: %v", e.applied)
		}
		for _, n := range e.nodes {
			for _, p := range n.got {
				if p.Zxid > z1 && p.Type == PktCommit {
					t.Fatalf("learner %d got COMMIT %s from a leader that designated another", n.sid, Hex(p.Zxid))
				}
			}
		}
		if z, err := e.ld.NextZxid(); err == nil {
			r := e.ld.Propose(z, txnData(z))
			e.leaderReady(r)
			e.pump()
			e.leaderReady(e.ld.LocalLogged(z))
			e.ack(2, z)
			e.ack(3, z)
			e.ack(4, z)
			if committedAt(e.applied, z) {
				t.Fatal("a proposal made after handing over committed")
			}
		}
	})
}

// TestReconfigVersionBump is ZOOKEEPER-1783: a zoo.cfg configuration (version 0) gets the
// new epoch's version, sent with NEWLEADER and current once the leader is established.
func TestReconfigVersionBump(t *testing.T) {
	e := newRcEnsemble(t, LeaderConfig{ID: 1, Current: rcConfig(0, []int64{1, 2, 4}, 3)})
	e.add(2, false)
	e.add(3, true)
	e.pump()
	if !e.serving {
		t.Fatal("not established")
	}
	want := MakeZxid(e.ld.Epoch(), 0)
	if v := e.ld.CurrentConfig().Version; v != want {
		t.Fatalf("current version %s, want the epoch's %s", Hex(v), Hex(want))
	}
	acts := activations(e.events, ConfigLeaderActivated)
	if len(acts) != 1 || TextVersion(acts[0].Text) != want || acts[0].Designated != 1 {
		t.Fatalf("leader's events %s, want one LeaderActivated of version %s designating itself", describeEvents(e.events), Hex(want))
	}
	for _, n := range e.nodes {
		var nl []byte
		for _, p := range n.got {
			if p.Type == PktNewLeader {
				nl = p.Data
			}
		}
		if TextVersion(nl) != want {
			t.Fatalf("learner %d's NEWLEADER carried version %s, want %s", n.sid, Hex(TextVersion(nl)), Hex(want))
		}
		if len(n.events) != 2 || n.events[0].Kind != ConfigFromLeader || n.events[1].Kind != ConfigLeaderActivated || TextVersion(n.events[1].Text) != want {
			t.Fatalf("learner %d's events %s, want FromLeader then LeaderActivated of %s", n.sid, describeEvents(n.events), Hex(want))
		}
	}
}

// TestReconfigPendingCompletedByNewLeader: a leader elected with a last seen configuration
// newer than its current one needs quorums of both to be established, sends it with
// NEWLEADER and makes it current then.
func TestReconfigPendingCompletedByNewLeader(t *testing.T) {
	cur := rcConfig(MakeZxid(1, 0), []int64{1, 2, 3})
	seen := rcConfig(MakeZxid(1, 7), []int64{1, 4, 5})
	e := newRcEnsemble(t, LeaderConfig{ID: 1, Current: cur, LastSeen: seen})
	e.add(2, false)
	e.add(3, false)
	e.pump()
	if e.serving {
		t.Fatal("established by a quorum of the current configuration only")
	}
	e.add(4, false)
	e.pump()
	if !e.serving {
		t.Fatal("not established by quorums of both")
	}
	if v := e.ld.CurrentConfig().Version; v != seen.Version || e.ld.ReconfigPending() {
		t.Fatalf("current %s (pending %v), want the last seen %s", Hex(v), e.ld.ReconfigPending(), Hex(seen.Version))
	}
	acts := activations(e.events, ConfigLeaderActivated)
	if len(acts) != 1 || !bytes.Equal(acts[0].Text, seen.Text) {
		t.Fatalf("leader's events %s, want the last seen configuration activated", describeEvents(e.events))
	}
	// From now on the new configuration's quorum alone commits: 1 and 4.
	e.drop = func(sid, _ int64) bool { return sid != 4 }
	if z := e.propose(); !committedAt(e.applied, z) {
		t.Fatal("a quorum of the completed configuration did not commit")
	}
}

// TestLearnerConfigEvents feeds a learner a sync and a broadcast by hand: a reconfig
// proposal is Seen, NEWLEADER's configuration is FromLeader, UPTODATE activates it, a
// COMMITANDACTIVATE during the sync activates at UPTODATE with its designated leader, and
// in broadcast COMMITANDACTIVATE / INFORMANDACTIVATE activate at once.
func TestLearnerConfigEvents(t *testing.T) {
	const epoch = 3
	zr := MakeZxid(2, 5) // a committed reconfig the DIFF brings
	rText := rcConfig(zr, []int64{1, 2, 3}).Text
	ldText := SetTextVersion(rText, MakeZxid(epoch, 0))
	zp := MakeZxid(epoch, 1) // an outstanding reconfig, committed during the sync
	pText := rcConfig(zp, []int64{1, 2, 4}).Text
	zb := MakeZxid(epoch, 2) // one in broadcast
	bText := rcConfig(zb, []int64{2, 4, 5}).Text

	for _, observer := range []bool{false, true} {
		t.Run(fmt.Sprintf("observer=%v", observer), func(t *testing.T) {
			l, _ := NewLearner(LearnerConfig{ID: 2, Observer: observer, TickMs: 100, InitLimit: 10, SyncLimit: 5}, PersistentState{AcceptedEpoch: 2, CurrentEpoch: 2, LastLogged: MakeZxid(2, 4)}, 0)
			var evs []ConfigEvent
			feed := func(p jute.QuorumPacket) {
				t.Helper()
				r := l.Receive(0, p)
				if r.Err != nil {
					t.Fatalf("%s: %v", PacketName(p.Type), r.Err)
				}
				evs = append(evs, r.Configs...)
			}
			lead := func(sid int64, data []byte) []byte {
				return append(binary.BigEndian.AppendUint64(nil, uint64(sid)), data...)
			}
			feed(jute.QuorumPacket{Type: PktLeaderInfo, Zxid: MakeZxid(epoch, 0), Data: binary.BigEndian.AppendUint32(nil, uint32(ProtocolVersion))})
			feed(jute.QuorumPacket{Type: PktDiff, Zxid: zr})
			feed(jute.QuorumPacket{Type: PktProposal, Zxid: zr, Data: reconfigTxn(zr, rText)})
			feed(jute.QuorumPacket{Type: PktCommit, Zxid: zr})
			if observer {
				feed(jute.QuorumPacket{Type: PktInformAndActivate, Zxid: zp, Data: lead(1, reconfigTxn(zp, pText))})
			} else {
				feed(jute.QuorumPacket{Type: PktProposal, Zxid: zp, Data: reconfigTxn(zp, pText)})
				feed(jute.QuorumPacket{Type: PktCommitAndActivate, Zxid: zp, Data: lead(1, nil)})
			}
			feed(jute.QuorumPacket{Type: PktNewLeader, Zxid: MakeZxid(epoch, 0), Data: ldText})
			if n := len(activations(evs, ConfigActivated)) + len(activations(evs, ConfigLeaderActivated)); n != 0 {
				t.Fatalf("activated before UPTODATE: %s", describeEvents(evs))
			}
			feed(jute.QuorumPacket{Type: PktUpToDate, Zxid: -1})
			if observer {
				feed(jute.QuorumPacket{Type: PktInformAndActivate, Zxid: zb, Data: lead(4, reconfigTxn(zb, bText))})
			} else {
				feed(jute.QuorumPacket{Type: PktProposal, Zxid: zb, Data: reconfigTxn(zb, bText)})
				feed(jute.QuorumPacket{Type: PktCommitAndActivate, Zxid: zb, Data: lead(4, nil)})
			}
			want := []ConfigEvent{
				{ConfigSeen, zr, rText, NoLeader},
				{ConfigSeen, zp, pText, NoLeader},
				{ConfigFromLeader, MakeZxid(epoch, 0), ldText, NoLeader},
				{ConfigActivated, zp, pText, 1},
				{ConfigLeaderActivated, MakeZxid(epoch, 0), ldText, NoLeader},
				{ConfigSeen, zb, bText, NoLeader},
				{ConfigActivated, zb, bText, 4},
			}
			if fmt.Sprint(evs) != fmt.Sprint(want) {
				t.Fatalf("events\n got  %v\n want %v", describeEvents(evs), describeEvents(want))
			}
		})
	}
}

func describeEvents(evs []ConfigEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "\n  kind %d zxid %s version %s designated %d", ev.Kind, Hex(ev.Zxid), Hex(TextVersion(ev.Text)), ev.Designated)
	}
	return b.String()
}

// TestReconfigCommittedWithFollowers: one ack (the leader's own log, which covers every
// proposal) completes the quorums of the reconfig and of the proposal after it at once.
// As ZooKeeper's processAck commits one proposal at a time, the designation still sees the
// later proposal outstanding, and a leader that designated another does not commit it.
func TestReconfigCommittedWithFollowers(t *testing.T) {
	e := established(t, 1, rcConfig(MakeZxid(0, 1), []int64{1, 3, 4, 5, 6}), []int64{2, 3, 4})
	e.holdLocal = true
	e.drop = func(int64, int64) bool { return true }
	z1 := e.reconfig(rcConfig(0, []int64{2, 3, 7}))
	z2 := e.propose()
	// 2 votes only in the new configuration, 4 only in the old, 3 in both.
	e.ack(2, z2)
	e.ack(3, z2)
	e.ack(4, z2)
	if committedAt(e.applied, z1) {
		t.Fatal("reconfig committed before the leader's ack made a quorum of the old configuration")
	}
	e.leaderReady(e.ld.LocalLogged(z2))
	if !committedAt(e.applied, z1) {
		t.Fatal("reconfig not committed")
	}
	acts := activations(e.events, ConfigActivated)
	if len(acts) != 1 || acts[0].Designated != 3 {
		t.Fatalf("designated %s, want 3 (2 acked %s, but it needs the old configuration too, where 2 does not vote)", describeEvents(acts), Hex(z2))
	}
	if committedAt(e.applied, z2) || e.ld.LastCommitted() != z1 {
		t.Fatalf("a leader that designated another committed %s (applied %v, last committed %s)", Hex(z2), e.applied, Hex(e.ld.LastCommitted()))
	}
}
