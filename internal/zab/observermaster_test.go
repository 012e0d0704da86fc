package zab

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/zkd-io/zkd/jute"
)

func omTxns(epoch, from, to int64) []Committed {
	var out []Committed
	for c := from; c <= to; c++ {
		z := MakeZxid(epoch, c)
		out = append(out, Committed{Zxid: z, Data: txnData(z)})
	}
	return out
}

func newTestOM(t *testing.T, last int64, history []Committed, localSyncs int) *ObserverMaster {
	t.Helper()
	return NewObserverMaster(ObserverMasterConfig{
		ID: 2, TickMs: 100, InitLimit: 10, SyncLimit: 5, Epoch: 3, ConfigVersion: 0x100000000,
		ConfigText: []byte("server.1=127.0.0.1:1:2:participant\nversion=100000000"),
	}, last, history, localSyncs)
}

func pktTypes(outs []Out) []string {
	var s []string
	for _, o := range outs {
		s = append(s, PacketName(o.Packet.Type))
	}
	return s
}

// omRun connects a real observer Learner (at lastLogged) to the observer master and
// delivers packets both ways until nothing moves; it returns the learner, what it applied,
// and the packets the master sent up to the leader.
type omPeer struct {
	t       *testing.T
	m       *ObserverMaster
	id      ConnID
	l       *Learner
	applied []int64
	serving bool
	up      []jute.QuorumPacket
	snap    bool
	// disk is the follower's log as the owner reads it for LoadHistory (nil: it cannot).
	disk  []Committed
	asked []HistoryAsk
}

func connectObserver(t *testing.T, m *ObserverMaster, id ConnID, lastLogged int64) *omPeer {
	return connectObserverDisk(t, m, id, lastLogged, nil)
}

func connectObserverDisk(t *testing.T, m *ObserverMaster, id ConnID, lastLogged int64, disk []Committed) *omPeer {
	t.Helper()
	p := &omPeer{t: t, m: m, id: id, disk: disk}
	m.Accept(id, 0)
	var rd Ready
	p.l, rd = NewLearner(LearnerConfig{ID: 10 + int64(id), Observer: true, TickMs: 100, InitLimit: 10, SyncLimit: 5},
		PersistentState{AcceptedEpoch: 2, CurrentEpoch: 2, LastLogged: lastLogged}, 0)
	p.fromLearner(rd)
	return p
}

// fromLearner hands the learner's packets to the master and the master's answers back.
func (p *omPeer) fromLearner(rd Ready) {
	p.t.Helper()
	p.applied = append(p.applied, zxids(rd.Apply)...)
	if rd.Serving {
		p.serving = true
	}
	if rd.Err != nil {
		p.t.Fatalf("observer failed: %v", rd.Err)
	}
	for _, o := range rd.Out {
		p.toMaster(o.Packet)
	}
}

func (p *omPeer) toMaster(q jute.QuorumPacket) {
	p.t.Helper()
	p.deliver(p.m.Receive(p.id, 0, q))
}

// deliver carries out a master's Ready: packets for this observer go to its learner,
// packets for Conn 0 are kept as sent up to the leader.
func (p *omPeer) deliver(rd Ready) {
	p.t.Helper()
	if slices.Contains(rd.Close, p.id) {
		p.t.Fatalf("master dropped the observer")
	}
	defer func() {
		for _, a := range rd.LoadHistory {
			p.asked = append(p.asked, a)
			var h []Committed
			for _, c := range p.disk {
				if c.Zxid >= a.From && c.Zxid <= a.To {
					h = append(h, c)
				}
			}
			p.deliver(p.m.HistoryLoaded(a.Conn, h))
		}
	}()
	for _, o := range rd.Out {
		switch o.Conn {
		case 0:
			p.up = append(p.up, o.Packet)
		case p.id:
			if o.SnapFollows {
				p.snap = true
				p.l.Receive(0, o.Packet)
				p.l.SnapLoaded(o.Packet.Zxid)
				continue
			}
			p.fromLearner(p.l.Receive(0, o.Packet))
		}
	}
}

func zxids(cs []Committed) []int64 {
	var out []int64
	for _, c := range cs {
		out = append(out, c.Zxid)
	}
	return out
}

func TestObserverMasterSyncsByDiffThenInforms(t *testing.T) {
	h := omTxns(3, 1, 5)
	m := newTestOM(t, h[4].Zxid, h, 0)
	m.Accept(1, 0)
	rd := m.Receive(1, 0, jute.QuorumPacket{Type: PktObserverInfo, Zxid: MakeZxid(2, 0),
		Data: jute.Marshal(&jute.LearnerInfo{ServerID: 4, ProtocolVersion: ProtocolVersion, ConfigVersion: 0x100000000})})
	if got := pktTypes(rd.Out); !slices.Equal(got, []string{"LEADERINFO"}) || rd.Out[0].Packet.Zxid != MakeZxid(3, 0) {
		t.Fatalf("OBSERVERINFO answered with %v (zxid %s), want LEADERINFO for epoch 3", got, Hex(rd.Out[0].Packet.Zxid))
	}
	ack := binary.BigEndian.AppendUint32(nil, 2)
	rd = m.Receive(1, 0, jute.QuorumPacket{Type: PktAckEpoch, Zxid: h[2].Zxid, Data: ack})
	want := []string{"DIFF", "PROPOSAL", "COMMIT", "PROPOSAL", "COMMIT", "NEWLEADER"}
	if got := pktTypes(rd.Out); !slices.Equal(got, want) {
		t.Fatalf("sync from %s: %v, want %v", Hex(h[2].Zxid), got, want)
	}
	if nl := rd.Out[5].Packet; nl.Zxid != MakeZxid(3, 0) || string(nl.Data) != string(m.cfg.ConfigText) {
		t.Fatalf("NEWLEADER %s %q", Hex(nl.Zxid), nl.Data)
	}
	// A commit between NEWLEADER and its ACK reaches the observer already.
	next := Committed{Zxid: MakeZxid(3, 6), Data: txnData(MakeZxid(3, 6))}
	if got := pktTypes(m.Committed(next).Out); !slices.Equal(got, []string{"INFORM"}) {
		t.Fatalf("commit during sync: %v, want INFORM", got)
	}
	rd = m.Receive(1, 0, jute.QuorumPacket{Type: PktAck, Zxid: MakeZxid(3, 0)})
	if got := pktTypes(rd.Out); !slices.Equal(got, []string{"UPTODATE"}) {
		t.Fatalf("NEWLEADER ack answered with %v", got)
	}
	if m.SyncedObservers() != 1 {
		t.Fatalf("synced observers %d, want 1", m.SyncedObservers())
	}
}

func TestObserverMasterRefusesFollowersAndNewerConfigs(t *testing.T) {
	m := newTestOM(t, 0, nil, 0)
	for i, p := range []jute.QuorumPacket{
		{Type: PktFollowerInfo, Data: jute.Marshal(&jute.LearnerInfo{ServerID: 4, ProtocolVersion: ProtocolVersion})},
		{Type: PktObserverInfo, Data: jute.Marshal(&jute.LearnerInfo{ServerID: 4, ProtocolVersion: ProtocolVersion, ConfigVersion: 0x200000000})},
	} {
		id := ConnID(i + 1)
		m.Accept(id, 0)
		if rd := m.Receive(id, 0, p); !slices.Equal(rd.Close, []ConnID{id}) || len(rd.Out) != 0 {
			t.Errorf("%s: close %v out %v, want the connection dropped", PacketName(p.Type), rd.Close, pktTypes(rd.Out))
		}
	}
}

// A real observer learner syncs from the master: by DIFF, by SNAP when it is behind the
// history, by TRUNC when it has a tail the follower never committed.
func TestObserverMasterSyncsALearner(t *testing.T) {
	h := omTxns(3, 1, 8)
	for _, tc := range []struct {
		name    string
		history []Committed
		disk    []Committed
		peer    int64
		snap    bool
		applied []int64
		asked   bool
	}{
		{name: "diff", history: h, peer: h[3].Zxid, applied: zxids(h[4:])},
		{name: "in sync", history: h, peer: h[7].Zxid},
		{name: "diff from the log", history: h[4:], disk: h, peer: h[1].Zxid, applied: zxids(h[2:]), asked: true},
		{name: "snap", history: h[4:], peer: h[1].Zxid, snap: true, asked: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestOM(t, h[7].Zxid, tc.history, 0)
			p := connectObserverDisk(t, m, 1, tc.peer, tc.disk)
			if (len(p.asked) > 0) != tc.asked {
				t.Fatalf("log read asked: %v, want %v", p.asked, tc.asked)
			}
			if !p.serving {
				t.Fatalf("observer not serving after sync")
			}
			if p.snap != tc.snap {
				t.Fatalf("snap sync %v, want %v", p.snap, tc.snap)
			}
			if !slices.Equal(p.applied, tc.applied) {
				t.Fatalf("applied %v, want %v", p.applied, tc.applied)
			}
			// Then each commit arrives as INFORM and is applied.
			z := MakeZxid(3, 9)
			p.deliver(m.Committed(Committed{Zxid: z, Data: txnData(z)}))
			if n := len(p.applied); n == 0 || p.applied[n-1] != z {
				t.Fatalf("INFORM %s not applied: %v", Hex(z), p.applied)
			}
			if len(p.up) != 0 {
				t.Fatalf("sync sent %v up to the leader", p.up)
			}
		})
	}
}

// Requests, syncs and revalidations go up through the follower's connection; the answers
// come back to the observer that asked, in order with the follower's own.
func TestObserverMasterRoutesAnswers(t *testing.T) {
	h := omTxns(3, 1, 2)
	m := newTestOM(t, h[1].Zxid, h, 1) // one sync of the follower's own already forwarded
	a := connectObserver(t, m, 1, h[1].Zxid)
	b := connectObserver(t, m, 2, h[1].Zxid)
	if !a.serving || !b.serving {
		t.Fatalf("observers not serving")
	}

	// a forwards a create and a sync; the follower forwards a sync of its own; b a sync.
	a.fromLearner(a.l.Forward(7, 1, jute.OpCreate, []byte("body"), []jute.ID{{Scheme: "digest", ID: "x"}}))
	a.fromLearner(a.l.Forward(7, 2, jute.OpSync, []byte("sync"), nil))
	m.LocalSync()
	b.fromLearner(b.l.Forward(8, 1, jute.OpSync, []byte("sync"), nil))
	if len(a.up) != 2 || a.up[0].Type != PktRequest || string(a.up[0].Data[16:]) != "body" || len(a.up[0].AuthInfo) != 1 {
		t.Fatalf("a's requests went up as %v", a.up)
	}
	// The leader answers the four syncs in order.
	var order []string
	for i := 0; i < 4; i++ {
		local, rd := m.Synced()
		switch {
		case local:
			order = append(order, "local")
		case len(rd.Out) == 1 && rd.Out[0].Conn == 1:
			order = append(order, "a")
		case len(rd.Out) == 1 && rd.Out[0].Conn == 2:
			order = append(order, "b")
		default:
			t.Fatalf("sync answer %d: %v", i, rd.Out)
		}
		if !local && rd.Out[0].Packet.Type != PktSync {
			t.Fatalf("sync answered with %s", PacketName(rd.Out[0].Packet.Type))
		}
	}
	if want := []string{"local", "a", "local", "b"}; !slices.Equal(order, want) {
		t.Fatalf("syncs answered to %v, want %v", order, want)
	}

	// b revalidates session 8; the follower's own revalidation of 9 is not b's.
	b.fromLearner(b.l.Revalidate(8, 4000))
	if n := len(b.up); n != 2 || b.up[n-1].Type != PktRevalidate {
		t.Fatalf("b's revalidation went up as %v", b.up)
	}
	if handled, _ := m.Revalidated(9, true); handled {
		t.Fatalf("the follower's own revalidation was taken for an observer's")
	}
	handled, rd := m.Revalidated(8, true)
	if !handled || len(rd.Out) != 1 || rd.Out[0].Conn != 2 || rd.Out[0].Packet.Type != PktRevalidate {
		t.Fatalf("revalidation answer: handled %v out %v", handled, rd.Out)
	}
	if !slices.Equal(rd.Touches, []Touch{{Session: 8, Timeout: 4000, Sid: 2}}) {
		t.Fatalf("valid revalidation touches %v", rd.Touches)
	}
	b.deliver(rd)

	// A closed observer's answers are dropped, in their turn.
	a.fromLearner(a.l.Forward(7, 3, jute.OpSync, nil, nil))
	m.Closed(1)
	if local, rd := m.Synced(); local || len(rd.Out) != 0 {
		t.Fatalf("closed observer's sync: local %v out %v", local, rd.Out)
	}
	if local, _ := m.Synced(); !local {
		t.Fatalf("an unknown sync answer must be the follower's own")
	}
}

func TestObserverMasterPingsAndDropsSilentObservers(t *testing.T) {
	m := newTestOM(t, 0, nil, 0)
	p := connectObserver(t, m, 1, 0)
	if !p.serving {
		t.Fatalf("observer not serving")
	}
	p.l.Touch(42, 3000)
	rd := m.Tick(50)
	if got := pktTypes(rd.Out); !slices.Equal(got, []string{"PING"}) {
		t.Fatalf("tick sent %v, want PING", got)
	}
	reply := p.l.Receive(50, rd.Out[0].Packet)
	rd = m.Receive(1, 60, reply.Out[0].Packet)
	if !slices.Equal(rd.Touches, []Touch{{Session: 42, Timeout: 3000, Sid: 11}}) {
		t.Fatalf("PING reply touches %v", rd.Touches)
	}
	// Silent past syncLimit (5 ticks of 100 ms): dropped.
	rd = m.Tick(60 + 5*100 + 1)
	if !slices.Equal(rd.Close, []ConnID{1}) {
		t.Fatalf("silent observer not dropped: close %v", rd.Close)
	}
	if m.SyncedObservers() != 0 {
		t.Fatalf("dropped observer still counted")
	}
}

func TestObserverMasterInformsActivation(t *testing.T) {
	m := newTestOM(t, 0, nil, 0)
	p := connectObserver(t, m, 1, 0)
	z := MakeZxid(3, 1)
	data := jute.EncodeTxn(nil, &jute.LoggedTxn{
		Header: jute.TxnHeader{ClientID: 1, Zxid: z, Time: 1, Type: jute.OpReconfig},
		Body:   &jute.SetDataTxn{Path: "/zookeeper/config", Data: []byte("server.1=127.0.0.1:1:2:participant\nversion=300000001")},
	})
	rd := m.CommittedAndActivate(Committed{Zxid: z, Data: data}, 1)
	if got := pktTypes(rd.Out); !slices.Equal(got, []string{"INFORMANDACTIVATE"}) {
		t.Fatalf("activation sent %v", got)
	}
	lr := p.l.Receive(0, rd.Out[0].Packet)
	if lr.Err != nil || len(lr.Apply) != 1 || len(lr.Configs) == 0 || lr.Configs[len(lr.Configs)-1].Designated != 1 {
		t.Fatalf("observer took INFORMANDACTIVATE as: err %v apply %d configs %+v", lr.Err, len(lr.Apply), lr.Configs)
	}
}

// A commit while the log is read is not informed to the observer: the plan made when the
// history arrives brings it.
func TestObserverMasterCommitsDuringLogRead(t *testing.T) {
	h := omTxns(3, 1, 8)
	m := newTestOM(t, h[7].Zxid, h[4:], 0)
	m.Accept(1, 0)
	m.Receive(1, 0, jute.QuorumPacket{Type: PktObserverInfo, Data: jute.Marshal(&jute.LearnerInfo{ServerID: 4, ProtocolVersion: ProtocolVersion})})
	rd := m.Receive(1, 0, jute.QuorumPacket{Type: PktAckEpoch, Zxid: h[1].Zxid, Data: binary.BigEndian.AppendUint32(nil, 2)})
	if len(rd.LoadHistory) != 1 || len(rd.Out) != 0 {
		t.Fatalf("behind the history: load %v, out %v", rd.LoadHistory, pktTypes(rd.Out))
	}
	z := MakeZxid(3, 9)
	if out := m.Committed(Committed{Zxid: z, Data: txnData(z)}).Out; len(out) != 0 {
		t.Fatalf("informed during the log read: %v", pktTypes(out))
	}
	rd = m.HistoryLoaded(1, h[1:])
	var got []int64
	for _, o := range rd.Out {
		if o.Packet.Type == PktProposal {
			got = append(got, o.Packet.Zxid)
		}
	}
	if want := append(zxids(h[2:]), z); !slices.Equal(got, want) || rd.Out[0].Packet.Type != PktDiff {
		t.Fatalf("sync after the log read: %v proposals %v, want DIFF and %v", pktTypes(rd.Out), got, want)
	}
}
