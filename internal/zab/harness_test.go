package zab

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// txnData builds the bytes of a txn with the given zxid, as a PROPOSAL carries them.
func txnData(zxid int64) []byte {
	return jute.EncodeTxn(nil, &jute.LoggedTxn{
		Header: jute.TxnHeader{ClientID: 1, Cxid: int32(zxid), Zxid: zxid, Time: 1, Type: jute.OpSetData},
		Body:   &jute.SetDataTxn{Path: "/x", Data: []byte(Hex(zxid)), Version: int32(Counter(zxid))},
	})
}

// simNode is a server's storage and tree as the harness fakes them.
type simNode struct {
	sid     int64
	st      PersistentState
	log     []Committed // logged txns
	durable int         // log[:durable] is fsynced
	applied []int64     // zxids applied to the tree, in order
	learner *Learner
	conn    ConnID
	apply   *Applier
	// disk is a disk step left running (the Applier waits for it), finished by a later
	// harness step.
	disk func()
}

type harness struct {
	t        *testing.T
	rng      *rand.Rand
	synced   int // the leader's own syncs answered
	later    []func()
	now      int64
	leader   *Leader
	lnode    *simNode
	nodes    map[ConnID]*simNode
	toLeader map[ConnID][]jute.QuorumPacket
	toLearn  map[ConnID][]Out
	snapAt   map[ConnID]int64
	// syncMode records the DIFF / TRUNC / SNAP each learner was sent.
	syncMode map[int64]int32
	// loggedAt records, for each zxid, which sids had it durable when the leader applied it.
	established bool
	// acked collects the leader's Ready.Acked, as its owner reads them.
	acked []AckedProposal
	// wide runs every server with LeaderConfig/LearnerConfig.Wide (rollover_test.go), and
	// checks the epochs' invariants; reconnect makes a learner the leader dropped connect
	// again from what it has on disk.
	wide      bool
	reconnect bool
	lastConn  ConnID
	// paused learners get and send nothing (a slow network to them).
	paused    map[int64]bool
	observers map[int64]bool
}

// harnessOpts are the settings newHarness leaves at their defaults.
type harnessOpts struct {
	wide         bool
	firstCounter int64
	configText   []byte
	members      []int64 // LeaderConfig.Members
}

func newHarness(t *testing.T, seed uint64, voters []int64, leaderSid int64, leaderLog []Committed, learners map[int64][]Committed, observers map[int64]bool) *harness {
	return newHarnessOpts(t, seed, voters, leaderSid, leaderLog, learners, observers, harnessOpts{})
}

func newHarnessOpts(t *testing.T, seed uint64, voters []int64, leaderSid int64, leaderLog []Committed, learners map[int64][]Committed, observers map[int64]bool, o harnessOpts) *harness {
	h := &harness{wide: o.wide, observers: observers,
		t: t, rng: rand.New(rand.NewPCG(seed, 99)), now: 1000,
		nodes: map[ConnID]*simNode{}, toLeader: map[ConnID][]jute.QuorumPacket{}, toLearn: map[ConnID][]Out{}, snapAt: map[ConnID]int64{}, syncMode: map[int64]int32{},
	}
	last := func(log []Committed) int64 {
		if len(log) == 0 {
			return 0
		}
		return log[len(log)-1].Zxid
	}
	h.lnode = &simNode{sid: leaderSid, log: leaderLog, durable: len(leaderLog)}
	h.lnode.apply = NewApplier(&harnessHost{h: h, n: h.lnode, leader: true})
	for _, c := range leaderLog {
		h.lnode.applied = append(h.lnode.applied, c.Zxid)
	}
	h.lnode.st = PersistentState{AcceptedEpoch: Epoch(last(leaderLog)), CurrentEpoch: Epoch(last(leaderLog)), LastLogged: last(leaderLog)}
	cfg := LeaderConfig{ID: leaderSid, QV: NewMajority(voters...), TickMs: 100, InitLimit: 10, SyncLimit: 5, CommitLogCount: 500,
		Wide: o.wide, FirstCounter: o.firstCounter, ConfigText: o.configText, Members: o.members}
	// The leader's log on disk, for learners behind its in-memory history.
	cfg.HistoryOnDisk = true
	var r Ready
	h.leader, r = NewLeader(cfg, h.lnode.st, last(leaderLog), leaderLog, h.now)
	h.leaderReady(r)
	sids := make([]int64, 0, len(learners))
	for sid := range learners {
		sids = append(sids, sid)
	}
	for i := 0; i < len(sids); i++ {
		for j := i + 1; j < len(sids); j++ {
			if sids[j] < sids[i] {
				sids[i], sids[j] = sids[j], sids[i]
			}
		}
	}
	for _, sid := range sids {
		h.addLearner(sid, learners[sid], observers[sid])
	}
	return h
}

// addLearner connects a learner whose log is log.
func (h *harness) addLearner(sid int64, log []Committed, observer bool) {
	h.lastConn++
	id := h.lastConn
	n := &simNode{sid: sid, log: log, durable: len(log), conn: id}
	n.apply = NewApplier(&harnessHost{h: h, n: n})
	for _, c := range log {
		n.applied = append(n.applied, c.Zxid)
	}
	lastZ := int64(0)
	if len(log) > 0 {
		lastZ = log[len(log)-1].Zxid
	}
	n.st = PersistentState{AcceptedEpoch: Epoch(lastZ), CurrentEpoch: Epoch(lastZ), LastLogged: lastZ}
	h.nodes[id] = n
	h.leader.Accept(id, h.now)
	var lr Ready
	n.learner, lr = NewLearner(LearnerConfig{ID: sid, Observer: observer, TickMs: 100, InitLimit: 10, SyncLimit: 5, Wide: h.wide}, n.st, h.now)
	h.learnerReady(n, lr)
}

func (h *harness) leaderReady(r Ready) {
	h.acked = append(h.acked, r.Acked...)
	h.lnode.apply.Push(r)
}

func (h *harness) learnerReady(n *simNode, r Ready) { n.apply.Push(r) }

// harnessHost carries out a node's Readys on the harness's fake disk and network. Each disk
// step finishes at once or, at random, in a later harness step, so the Applier's waiting
// is exercised too.
type harnessHost struct {
	h      *harness
	n      *simNode
	leader bool
}

func (x *harnessHost) disk(f func()) bool {
	if x.h.rng.IntN(2) == 0 {
		f()
		return true
	}
	x.n.disk = func() {
		x.n.disk = nil
		f()
		x.n.apply.Done()
	}
	return false
}

func (x *harnessHost) PersistEpoch(accepted bool, epoch int64) bool {
	return x.disk(func() {
		if accepted {
			x.n.st.AcceptedEpoch = epoch
		} else {
			x.n.st.CurrentEpoch = epoch
		}
	})
}

func (x *harnessHost) Truncate(zxid int64) bool {
	return x.disk(func() {
		n := x.n
		keep := 0
		for keep < len(n.log) && n.log[keep].Zxid <= zxid {
			keep++
		}
		n.log = n.log[:keep]
		if n.durable > keep {
			n.durable = keep
		}
		// Reload the tree from the log.
		n.applied = n.applied[:0]
		for _, c := range n.log {
			n.applied = append(n.applied, c.Zxid)
		}
	})
}

func (x *harnessHost) Snapshot() bool {
	return x.disk(func() {
		// The harness's "tree" is the applied list; a snapshot makes it durable by
		// itself, so the log restarts from the snapshot point.
		x.n.log = nil
		x.n.durable = 0
	})
}

func (x *harnessHost) SyncAppend(txns []Committed) bool {
	return x.disk(func() {
		x.n.log = append(x.n.log, txns...)
		x.n.durable = len(x.n.log)
	})
}

func (x *harnessHost) Append(txns []Committed) {
	if x.h.wide {
		for _, c := range txns {
			// A txn of an epoch is logged in broadcast only once currentEpoch says that
			// epoch: otherwise a restart finds a log ahead of its epoch.
			if e := Epoch(c.Zxid); e > x.n.st.CurrentEpoch {
				x.h.t.Fatalf("server %d logs %s with currentEpoch %d", x.n.sid, Hex(c.Zxid), x.n.st.CurrentEpoch)
			}
		}
	}
	x.n.log = append(x.n.log, txns...)
}

func (x *harnessHost) Send(o Out) {
	if x.leader {
		x.h.toLearn[o.Conn] = append(x.h.toLearn[o.Conn], o)
		return
	}
	x.h.toLeader[x.n.conn] = append(x.h.toLeader[x.n.conn], o.Packet)
}

func (x *harnessHost) Close(id ConnID) {
	if x.leader && x.h.reconnect {
		x.h.later = append(x.h.later, func() { x.h.reconnectLearner(id) })
	}
}

func (x *harnessHost) Apply(c Committed) {
	if x.leader {
		x.h.checkQuorumLogged(c.Zxid)
		if x.h.wide && IsBump(c.Zxid, c.Data) {
			x.h.checkQuorumAccepted(Epoch(c.Zxid) + 1)
		}
	}
	x.n.applied = append(x.n.applied, c.Zxid)
}

func (x *harnessHost) Notify(r *Ready) {
	if r.Err != nil && !x.leader && x.h.reconnect && errors.Is(r.Err, ErrProtocol) {
		// The learner gives up on this connection and registers again later, as a server
		// goes back to election and finds the same leader.
		id := x.n.conn
		x.h.later = append(x.h.later, func() { x.h.reconnectLearner(id) })
		return
	}
	if r.Err != nil {
		x.h.t.Fatalf("server %d: %v", x.n.sid, r.Err)
	}
	if x.leader {
		if r.Serving {
			x.h.established = true
		}
		x.h.synced += r.Synced
		for _, a := range r.LoadHistory {
			// The leader's log on disk, read at once or in a later step.
			var hist []Committed
			for _, c := range x.n.log {
				if c.Zxid <= a.To {
					hist = append(hist, c)
				}
			}
			a := a
			load := func() { x.h.leaderReady(x.h.leader.HistoryLoaded(a.Conn, hist)) }
			if x.h.rng.IntN(2) == 0 {
				load()
			} else {
				x.h.later = append(x.h.later, load)
			}
		}
	}
}

// checkQuorumLogged is the safety property: the leader applies a txn only once a quorum has
// it durable in their logs.
func (h *harness) checkQuorumLogged(zxid int64) {
	have := map[int64]bool{}
	if h.hasDurable(h.lnode, zxid) {
		have[h.lnode.sid] = true
	}
	for _, n := range h.nodes {
		if h.hasDurable(n, zxid) {
			have[n.sid] = true
		}
	}
	if !h.leader.cfg.QV.IsQuorum(have) {
		h.t.Fatalf("leader applied %s with it durable only on %v", Hex(zxid), have)
	}
}

func (h *harness) hasDurable(n *simNode, zxid int64) bool {
	for _, c := range n.log[:n.durable] {
		if c.Zxid == zxid {
			return true
		}
	}
	return false
}

// step does one random thing; it reports false when nothing is left to do. The actions are
// listed in connection order, never in map order, so that a seed replays.
func (h *harness) step() bool {
	type action func()
	var acts []action
	for _, n := range h.sortedNodes() {
		if id := n.conn; len(h.toLearn[id]) > 0 && !h.paused[n.sid] {
			acts = append(acts, func() { h.deliverToLearner(id) })
		}
	}
	for _, n := range h.sortedNodes() {
		if id := n.conn; len(h.toLeader[id]) > 0 && !h.paused[n.sid] {
			acts = append(acts, func() {
				p := h.toLeader[id][0]
				h.toLeader[id] = h.toLeader[id][1:]
				h.leaderReady(h.leader.Receive(id, h.now, p))
			})
		}
	}
	if len(h.later) > 0 {
		acts = append(acts, func() {
			f := h.later[0]
			h.later = h.later[1:]
			f()
		})
	}
	for _, n := range append([]*simNode{h.lnode}, h.sortedNodes()...) {
		if n.disk != nil {
			acts = append(acts, n.disk)
		}
	}
	if h.lnode.durable < len(h.lnode.log) {
		acts = append(acts, func() {
			h.lnode.durable = len(h.lnode.log)
			h.leaderReady(h.leader.LocalLogged(h.lnode.log[h.lnode.durable-1].Zxid))
		})
	}
	for _, n := range h.sortedNodes() {
		if n.durable < len(n.log) {
			acts = append(acts, func() {
				n.durable = len(n.log)
				h.learnerReady(n, n.learner.Logged(n.log[n.durable-1].Zxid))
			})
		}
	}
	if len(acts) == 0 {
		return false
	}
	acts[h.rng.IntN(len(acts))]()
	h.now += int64(h.rng.IntN(3))
	return true
}

func (h *harness) deliverToLearner(id ConnID) {
	o := h.toLearn[id][0]
	h.toLearn[id] = h.toLearn[id][1:]
	n := h.nodes[id]
	switch t := o.Packet.Type; t {
	case PktDiff, PktTrunc, PktSnap:
		if _, seen := h.syncMode[n.sid]; !seen {
			h.syncMode[n.sid] = t
		}
	}
	r := n.learner.Receive(h.now, o.Packet)
	if o.SnapFollows {
		// The stream carries the leader's tree at o.Packet.Zxid.
		n.applied = n.applied[:0]
		for _, z := range h.lnode.applied {
			if z <= o.Packet.Zxid {
				n.applied = append(n.applied, z)
			}
		}
		n.learner.SnapLoaded(o.Packet.Zxid)
	}
	h.learnerReady(n, r)
}

func (h *harness) sortedNodes() []*simNode {
	var out []*simNode
	for id := ConnID(1); id <= h.lastConn; id++ {
		if n := h.nodes[id]; n != nil {
			out = append(out, n)
		}
	}
	return out
}

func (h *harness) run() {
	for i := 0; i < 100000 && h.step(); i++ {
	}
}

func (h *harness) propose(n int) {
	for i := 0; i < n; i++ {
		z, err := h.leader.NextZxid()
		if err != nil {
			h.t.Fatal(err)
		}
		h.leaderReady(h.leader.Propose(z, txnData(z)))
		for j := h.rng.IntN(4); j > 0 && h.step(); j-- {
		}
	}
}

func history(epoch, from, to int64) []Committed {
	var out []Committed
	for c := from; c <= to; c++ {
		z := MakeZxid(epoch, c)
		out = append(out, Committed{Zxid: z, Data: txnData(z)})
	}
	return out
}

func (h *harness) checkSame() {
	want := fmt.Sprint(h.lnode.applied)
	for _, n := range h.nodes {
		if got := fmt.Sprint(n.applied); got != want {
			h.t.Fatalf("learner %d applied\n%v\nleader applied\n%v", n.sid, got, want)
		}
		if !n.learner.Serving() {
			h.t.Fatalf("learner %d not serving", n.sid)
		}
	}
}

func TestZabFreshEnsemble(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		h := newHarness(t, seed, []int64{1, 2, 3}, 3, nil, map[int64][]Committed{1: nil, 2: nil}, nil)
		h.run()
		if !h.established {
			t.Fatalf("seed %d: not established", seed)
		}
		if h.leader.Epoch() != 1 || h.lnode.st.CurrentEpoch != 1 {
			t.Fatalf("seed %d: epoch %d, current %d", seed, h.leader.Epoch(), h.lnode.st.CurrentEpoch)
		}
		h.propose(40)
		h.run()
		h.checkSame()
		if len(h.lnode.applied) != 40 {
			t.Fatalf("seed %d: %d applied", seed, len(h.lnode.applied))
		}
	}
}

func TestZabSyncModes(t *testing.T) {
	leaderLog := history(1, 1, 30)
	for seed := uint64(1); seed <= 30; seed++ {
		h := newHarness(t, seed, []int64{1, 2, 3, 4, 5}, 5, leaderLog, map[int64][]Committed{
			1: history(1, 1, 30), // in sync: empty DIFF
			2: history(1, 1, 12), // behind: DIFF
			3: nil,               // empty: DIFF from 0 (history covers it)
		}, nil)
		h.run()
		if !h.established {
			t.Fatalf("seed %d: not established", seed)
		}
		// A late joiner holding an old leader's uncommitted tail (1:31, 1:32) is truncated.
		h.addLearner(4, history(1, 1, 32), false)
		h.run()
		h.propose(10)
		h.run()
		// One that joins after the new epoch's first commits cannot be truncated across
		// the epoch boundary: it gets a snapshot.
		h.addLearner(6, history(1, 1, 31), true)
		h.propose(10)
		h.run()
		h.checkSame()
		if got := h.lnode.st.CurrentEpoch; got != 2 {
			t.Fatalf("seed %d: leader epoch %d", seed, got)
		}
		want := map[int64]int32{1: PktDiff, 2: PktDiff, 3: PktDiff, 4: PktTrunc, 6: PktSnap}
		for sid, mode := range want {
			if h.syncMode[sid] != mode {
				t.Fatalf("seed %d: learner %d synced with %s, want %s", seed, sid, PacketName(h.syncMode[sid]), PacketName(mode))
			}
		}
	}
}

func TestZabSnapWhenFarBehind(t *testing.T) {
	leaderLog := history(1, 1, 30)
	h := newHarness(t, 7, []int64{1, 2, 3}, 3, leaderLog, map[int64][]Committed{1: history(1, 1, 30), 2: history(1, 1, 3)}, nil)
	h.leader.history = h.leader.history[20:] // only 1:21.. in memory, and no disk reader
	h.leader.cfg.HistoryOnDisk = false
	h.run()
	h.propose(10)
	h.run()
	h.checkSame()
	if h.syncMode[2] != PktSnap || h.syncMode[1] != PktDiff {
		t.Fatalf("sync modes %v", h.syncMode)
	}
}

func TestZabObserver(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		h := newHarness(t, seed, []int64{1, 2, 3}, 3, nil, map[int64][]Committed{1: nil, 2: nil, 9: nil}, map[int64]bool{9: true})
		h.run()
		h.propose(30)
		h.run()
		h.checkSame()
	}
}

func TestZabLeaderStepsDownWithoutQuorum(t *testing.T) {
	h := newHarness(t, 1, []int64{1, 2, 3}, 3, nil, map[int64][]Committed{1: nil, 2: nil}, nil)
	h.run()
	h.propose(5)
	h.run()
	// The learners go silent.
	var stepped error
	for i := 0; i < 200 && stepped == nil; i++ {
		h.now += 50
		r := h.leader.Tick(h.now)
		stepped = r.Err
	}
	if stepped == nil {
		t.Fatal("leader kept leading with silent followers")
	}
}

func TestZabLearnerRejectsOldEpoch(t *testing.T) {
	l, _ := NewLearner(LearnerConfig{ID: 1, TickMs: 100, InitLimit: 10, SyncLimit: 5}, PersistentState{AcceptedEpoch: 5, CurrentEpoch: 5}, 0)
	r := l.Receive(1, jute.QuorumPacket{Type: PktLeaderInfo, Zxid: MakeZxid(4, 0), Data: []byte{0, 1, 0, 0}})
	if r.Err == nil {
		t.Fatal("learner accepted a leader of an older epoch")
	}
}

func TestZabLearnerTimesOut(t *testing.T) {
	l, _ := NewLearner(LearnerConfig{ID: 1, TickMs: 100, InitLimit: 10, SyncLimit: 5}, PersistentState{}, 0)
	if r := l.Tick(999); r.Err != nil {
		t.Fatalf("timed out early: %v", r.Err)
	}
	if r := l.Tick(1001); r.Err == nil {
		t.Fatal("no timeout after initLimit ticks of silence")
	}
}

// TestZabDiffFromDiskHistory: a learner behind the in-memory history is synced with a DIFF
// from the owner's log, which the leader asks for (Ready.LoadHistory) and waits on.
func TestZabDiffFromDiskHistory(t *testing.T) {
	leaderLog := history(1, 1, 30)
	for seed := uint64(1); seed <= 20; seed++ {
		h := newHarness(t, seed, []int64{1, 2, 3}, 3, leaderLog, map[int64][]Committed{1: history(1, 1, 30), 2: history(1, 1, 3)}, nil)
		h.leader.history = h.leader.history[20:] // only 1:21.. in memory
		h.run()
		h.propose(10)
		h.run()
		h.checkSame()
		if h.syncMode[2] != PktDiff {
			t.Fatalf("seed %d: learner 2 synced with %s, want DIFF from the log", seed, PacketName(h.syncMode[2]))
		}
	}
}

// TestZabAckSamples: the leader reports the acks of every sampled proposal (zxid a
// multiple of AckSampleEvery) that arrive while it waits to commit, the committing one
// included, as ZooKeeper's Leader.processAck logs ack_latency: with three voters, exactly
// two of them per sampled proposal (the third acks after the commit), each once.
func TestZabAckSamples(t *testing.T) {
	const every = 5
	for seed := uint64(1); seed <= 30; seed++ {
		h := newHarness(t, seed, []int64{1, 2, 3}, 3, nil, map[int64][]Committed{1: nil, 2: nil}, nil)
		h.leader.cfg.AckSampleEvery = every
		h.run()
		if !h.established {
			t.Fatalf("seed %d: not established", seed)
		}
		h.propose(40)
		h.run()
		h.checkSame()
		bySid := map[int64]map[int64]bool{}
		for _, a := range h.acked {
			if a.Zxid%every != 0 {
				t.Fatalf("seed %d: ack of %s reported, not a multiple of %d", seed, Hex(a.Zxid), every)
			}
			if bySid[a.Zxid] == nil {
				bySid[a.Zxid] = map[int64]bool{}
			}
			if bySid[a.Zxid][a.Sid] {
				t.Fatalf("seed %d: sid %d's ack of %s reported twice", seed, a.Sid, Hex(a.Zxid))
			}
			bySid[a.Zxid][a.Sid] = true
		}
		sampled := 0
		for _, z := range h.lnode.applied {
			if z%every != 0 {
				continue
			}
			sampled++
			if n := len(bySid[z]); n != 2 {
				t.Errorf("seed %d: %s acked by %v before its commit, want two sids", seed, Hex(z), bySid[z])
			}
		}
		if sampled != 8 || len(bySid) != sampled {
			t.Fatalf("seed %d: %d sampled proposals applied, %d reported, want 8", seed, sampled, len(bySid))
		}
	}
}

// TestZabAckSampleOfUnproposedZxid: an ack of a zxid the leader never proposed (a faulty
// peer's, up to the largest zxid there is) samples nothing beyond the proposals waiting;
// the search over multiples of AckSampleEvery once ran to that zxid (and past it, when
// z += n overflowed), stalling the leader's core.
func TestZabAckSampleOfUnproposedZxid(t *testing.T) {
	h := newHarness(t, 1, []int64{1, 2, 3}, 3, nil, map[int64][]Committed{1: nil, 2: nil}, nil)
	h.leader.cfg.AckSampleEvery = 1000
	h.run()
	if !h.established {
		t.Fatal("not established")
	}
	var proposed []int64
	for i := 0; i < 3; i++ { // proposed, not yet acked by the learners
		z, err := h.leader.NextZxid()
		if err != nil {
			t.Fatal(err)
		}
		h.leader.Propose(z, txnData(z))
		proposed = append(proposed, z)
	}
	done := make(chan Ready, 1)
	go func() {
		var r Ready
		h.leader.sampleAcks(&r, 2, 0, math.MaxInt64)
		done <- r
	}()
	select {
	case r := <-done:
		for _, a := range r.Acked {
			if a.Zxid > proposed[len(proposed)-1] {
				t.Errorf("ack of %s reported, newer than every proposal", Hex(a.Zxid))
			}
		}
	case <-time.After(time.Minute):
		t.Fatal("sampling an ack of the largest zxid did not finish within a minute")
	}
}

// TestZabLeaderOutstandingFollowsTracker: the leader's outstanding txns (what it sends a
// syncing learner and commits from) are exactly the tracker's uncommitted proposals, in
// zxid order, after every step, and none is left once all committed.
func TestZabLeaderOutstandingFollowsTracker(t *testing.T) {
	check := func(seed uint64, h *harness) {
		t.Helper()
		want := h.leader.tracker.Outstanding()
		if fmt.Sprint(h.leader.proposed) != fmt.Sprint(want) {
			t.Fatalf("seed %d: leader's outstanding %v, tracker's %v", seed, h.leader.proposed, want)
		}
		if len(h.leader.outstanding) != len(want) {
			t.Fatalf("seed %d: %d outstanding txns, tracker has %d", seed, len(h.leader.outstanding), len(want))
		}
		for _, z := range want {
			if _, ok := h.leader.outstanding[z]; !ok {
				t.Fatalf("seed %d: %s has no txn", seed, Hex(z))
			}
		}
	}
	for seed := uint64(1); seed <= 20; seed++ {
		h := newHarness(t, seed, []int64{1, 2, 3}, 3, nil, map[int64][]Committed{1: nil, 2: nil}, nil)
		h.run()
		for i := 0; i < 200; i++ {
			z, err := h.leader.NextZxid()
			if err != nil {
				t.Fatal(err)
			}
			h.leaderReady(h.leader.Propose(z, txnData(z)))
			check(seed, h)
			for j := h.rng.IntN(3); j > 0 && h.step(); j-- {
				check(seed, h)
			}
		}
		h.run()
		check(seed, h)
		if len(h.leader.proposed) != 0 || len(h.lnode.applied) != 200 {
			t.Fatalf("seed %d: %d left outstanding, %d applied", seed, len(h.leader.proposed), len(h.lnode.applied))
		}
		h.checkSame()
	}
}
