package peer

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/election"
)

// member runs one election over a real transport in real time, the way a quorum peer would:
// received notifications and timer expiries go into the election, its Outs go out.
type member struct {
	e       *election.Election
	tr      Transport
	decided chan election.Decision
	stop    chan struct{}
	done    chan struct{}

	mu   sync.Mutex
	seen []election.Notification // every notification received
}

func startMember(t *testing.T, e *election.Election, tr Transport, lastZxid, epoch int64) *member {
	m := &member{e: e, tr: tr, decided: make(chan election.Decision, 16), stop: make(chan struct{}), done: make(chan struct{})}
	go m.loop(t, lastZxid, epoch)
	t.Cleanup(m.halt)
	return m
}

func (m *member) halt() {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	<-m.done
}

func (m *member) loop(t *testing.T, lastZxid, epoch int64) {
	defer close(m.done)
	start := time.Now()
	now := func() int64 { return time.Since(start).Milliseconds() }
	send := func(outs []election.Out) {
		for _, o := range outs {
			m.tr.Send(o.To, o.N.Marshal())
		}
	}
	send(m.e.Start(now(), lastZxid, epoch))
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var tick <-chan time.Time
		if at, ok := m.e.NextTick(); ok {
			timer.Reset(time.Duration(max(at-now(), 0)) * time.Millisecond)
			tick = timer.C
		}
		var outs []election.Out
		var d *election.Decision
		select {
		case <-m.stop:
			return
		case msg, ok := <-m.tr.Recv():
			if !ok {
				return
			}
			n, err := election.Unmarshal(msg.From, msg.Payload)
			if err != nil {
				t.Errorf("notification from %d: %v", msg.From, err)
				continue
			}
			m.mu.Lock()
			m.seen = append(m.seen, n)
			m.mu.Unlock()
			outs, d = m.e.Receive(now(), n)
		case <-tick:
			outs, d = m.e.Tick(now())
		}
		timer.Stop()
		send(outs)
		if d != nil {
			m.decided <- *d
		}
	}
}

func (m *member) waitDecision(t *testing.T, within time.Duration) election.Decision {
	t.Helper()
	select {
	case d := <-m.decided:
		return d
	case <-time.After(within):
		t.Fatal("no decision")
	}
	return election.Decision{}
}

// TestElectionOverTCP: three elections over real TCP transports agree on the best server.
func TestElectionOverTCP(t *testing.T) {
	ids := []int64{1, 2, 3}
	peers := map[int64]string{}
	lns := map[int64]net.Listener{}
	for _, id := range ids {
		lns[id] = listen(t)
		peers[id] = lns[id].Addr().String()
	}
	zxids := map[int64]int64{1: 0x100000005, 2: 0x100000007, 3: 0x100000006}
	members := map[int64]*member{}
	for _, id := range ids {
		tr := newTCP(t, TCPConfig{ID: id, Listener: lns[id], Peers: peers, MinBackoff: 20 * time.Millisecond, ConnectBackWait: 200 * time.Millisecond})
		// A long finalize wait keeps a stalled goroutine on a loaded machine from splitting
		// the vote.
		e := election.New(election.Config{ID: id, Voters: ids, FinalizeWaitMs: 1000})
		members[id] = startMember(t, e, tr, zxids[id], 1)
	}
	for _, id := range ids {
		d := members[id].waitDecision(t, waitLong)
		want := election.Decision{State: election.Following, Leader: 2, Zxid: 0x100000007, ElectionEpoch: 1, PeerEpoch: 1}
		if id == 2 {
			want.State = election.Leading
		}
		if d != want {
			t.Errorf("server %d decided %+v, want %+v", id, d, want)
		}
	}
}

// TestElectionOverMemNetwork drives five elections over the in-memory network in virtual
// time from this goroutine: a partitioned minority cannot elect, the majority elects its
// best, and after healing the minority learns that leader without a new round.
func TestElectionOverMemNetwork(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			net := NewMemNetwork(seed)
			net.SetDelay(0, 40*time.Millisecond)
			net.SetDuplicateRate(0.2)
			ids := []int64{1, 2, 3, 4, 5}
			// Server 5 has the best log but sits in the minority.
			zxids := map[int64]int64{1: 10, 2: 12, 3: 11, 4: 30, 5: 50}
			net.Partition([]int64{1, 2, 3}, []int64{4, 5})
			type srv struct {
				e  *election.Election
				tr *MemTransport
				d  []election.Decision
			}
			srvs := map[int64]*srv{}
			for _, id := range ids {
				srvs[id] = &srv{e: election.New(election.Config{ID: id, Voters: ids}), tr: net.Join(id)}
			}
			send := func(s *srv, outs []election.Out) {
				for _, o := range outs {
					s.tr.Send(o.To, o.N.Marshal())
				}
			}
			for _, id := range ids {
				send(srvs[id], srvs[id].e.Start(0, zxids[id], 0))
			}
			step := func() {
				now := net.Now().Milliseconds()
				for _, id := range ids {
					s := srvs[id]
					for _, m := range drain(s.tr) {
						n, err := election.Unmarshal(m.From, m.Payload)
						if err != nil {
							t.Fatal(err)
						}
						outs, d := s.e.Receive(now, n)
						send(s, outs)
						if d != nil {
							s.d = append(s.d, *d)
						}
					}
					if at, ok := s.e.NextTick(); ok && at <= now {
						outs, d := s.e.Tick(now)
						send(s, outs)
						if d != nil {
							s.d = append(s.d, *d)
						}
					}
				}
				net.Advance(5 * time.Millisecond)
			}
			for net.Now() < 30*time.Second {
				step()
			}
			for _, id := range ids {
				s := srvs[id]
				switch {
				case id >= 4 && len(s.d) != 0:
					t.Fatalf("minority server %d decided %+v", id, s.d)
				case id <= 3 && (len(s.d) != 1 || s.d[0].Leader != 2 || s.d[0].ElectionEpoch != 1):
					t.Fatalf("majority server %d decided %+v, want leader 2 in round 1", id, s.d)
				}
			}
			net.Heal()
			for net.Now() < 150*time.Second {
				step()
			}
			for _, id := range ids {
				s := srvs[id]
				if len(s.d) != 1 || s.d[0].Leader != 2 || s.d[0].ElectionEpoch != 1 {
					t.Errorf("server %d decided %+v, want leader 2 of round 1", id, s.d)
				}
			}
			for _, id := range []int64{1, 2, 3} {
				if r := srvs[id].e.Round(); r != 1 {
					t.Errorf("server %d is in round %d: the majority was disturbed", id, r)
				}
			}
		})
	}
}
