package election

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The simulator runs whole ensembles of Elections over an in-memory router in virtual time:
// seeded random delays (which reorder), drops, duplicates and partitions. Everything is
// driven from one goroutine, so a seed always replays the same run.

type simServer struct {
	id          int64
	e           *Election
	zxid, epoch int64
	startAt     int64 // first Start; -1 never
	running     bool
	decisions   []Decision
	badSince    int64 // zab model: when this server's role stopped making sense, or -1
	restarts    int
}

type simMsg struct {
	at, seq int64
	to      int64
	n       Notification
}

type simOpts struct {
	minDelay, maxDelay int64
	drop, dup          float64
	faultsUntil        int64 // drops, slow links and partitions end here
	// cut reports whether the link from→to is down at a time (nil: never).
	cut func(now, from, to int64) bool
	// zab models what Zab does after FLE: a follower whose leader is not leading, or a leader
	// without a quorum of followers, goes back to LOOKING after zabTimeout; a leader with a
	// follower ahead of it gives up at once (Leader.waitForEpochAck).
	zab        bool
	zabTimeout int64
}

type sim struct {
	t       *testing.T
	rng     *rand.Rand
	opts    simOpts
	now     int64
	seq     int64
	servers []*simServer
	byID    map[int64]*simServer
	queue   []simMsg
	trace   []string
}

func newSim(t *testing.T, seed uint64, opts simOpts, cfg Config, servers []*simServer) *sim {
	s := &sim{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), opts: opts, servers: servers, byID: map[int64]*simServer{}}
	for _, sv := range servers {
		c := cfg
		c.ID = sv.id
		sv.e = New(c)
		sv.badSince = -1
		s.byID[sv.id] = sv
	}
	return s
}

func (s *sim) logf(format string, args ...any) {
	if len(s.trace) < 4000 {
		s.trace = append(s.trace, fmt.Sprintf("%7d ", s.now)+fmt.Sprintf(format, args...))
	}
}

func (s *sim) send(from int64, outs []Out) {
	for _, o := range outs {
		copies := 1
		faulty := s.now < s.opts.faultsUntil
		if faulty && s.rng.Float64() < s.opts.drop {
			continue
		}
		if faulty && s.opts.cut != nil && s.opts.cut(s.now, from, o.To) {
			continue
		}
		if s.rng.Float64() < s.opts.dup {
			copies = 2
		}
		for range copies {
			maxDelay := s.opts.maxDelay
			if !faulty {
				maxDelay = min(maxDelay, 50)
			}
			d := s.opts.minDelay
			if maxDelay > d {
				d += s.rng.Int64N(maxDelay - d + 1)
			}
			s.seq++
			s.queue = append(s.queue, simMsg{at: s.now + d, seq: s.seq, to: o.To, n: o.N})
		}
	}
}

func (s *sim) record(sv *simServer, d *Decision) {
	if d == nil {
		return
	}
	sv.decisions = append(sv.decisions, *d)
	sv.badSince = -1
	s.logf("%d decides %v leader %d round %d", sv.id, d.State, d.Leader, d.ElectionEpoch)
}

func (s *sim) start(sv *simServer) {
	sv.running = true
	s.logf("%d starts (zxid %#x epoch %d)", sv.id, sv.zxid, sv.epoch)
	s.send(sv.id, sv.e.Start(s.now, sv.zxid, sv.epoch))
}

// step advances to the next event and handles everything due then. It reports false when
// nothing will ever happen again or the next event is after until.
func (s *sim) step(until int64) bool {
	next := int64(-1)
	consider := func(at int64) {
		if next < 0 || at < next {
			next = at
		}
	}
	for _, m := range s.queue {
		consider(m.at)
	}
	for _, sv := range s.servers {
		if !sv.running && sv.startAt >= 0 {
			consider(sv.startAt)
		}
		if sv.running {
			if at, ok := sv.e.NextTick(); ok {
				consider(at)
			}
		}
	}
	if s.opts.zab {
		consider(s.now + 50 - s.now%50) // the Zab model looks every 50 ms
	}
	if next < 0 || next > until {
		return false
	}
	s.now = max(s.now, next)

	for _, sv := range s.servers {
		if !sv.running && sv.startAt >= 0 && sv.startAt <= s.now {
			s.start(sv)
		}
	}
	slices.SortFunc(s.queue, func(a, b simMsg) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.seq, b.seq)) })
	for len(s.queue) > 0 && s.queue[0].at <= s.now {
		m := s.queue[0]
		s.queue = s.queue[1:]
		sv := s.byID[m.to]
		if sv != nil && !sv.running && sv.startAt > s.now {
			// ZooKeeper's transport keeps messages for a peer that is not up yet and sends
			// them once it connects.
			m.at = sv.startAt
			s.queue = append(s.queue, m)
			continue
		}
		if sv == nil || !sv.running {
			continue
		}
		outs, d := sv.e.Receive(s.now, m.n)
		s.send(sv.id, outs)
		s.record(sv, d)
	}
	for _, sv := range s.servers {
		if !sv.running {
			continue
		}
		if at, ok := sv.e.NextTick(); ok && at <= s.now {
			outs, d := sv.e.Tick(s.now)
			s.send(sv.id, outs)
			s.record(sv, d)
		}
	}
	if s.opts.zab {
		s.zabCheck()
	}
	return true
}

func (s *sim) zabCheck() {
	voters := 0
	for _, sv := range s.servers {
		if sv.e.voter {
			voters++
		}
	}
	for _, sv := range s.servers {
		if !sv.running || sv.e.State() == Looking {
			continue
		}
		ok := true
		leader := sv.e.Vote().Leader
		switch sv.e.State() {
		case Following, Observing:
			l := s.byID[leader]
			ok = l != nil && l.running && l.e.State() == Leading && l.e.Vote().Leader == leader
		case Leading:
			followers := 1
			for _, f := range s.servers {
				if f == sv || !f.running || f.e.State() != Following || f.e.Vote().Leader != sv.id {
					continue
				}
				followers++
				if f.epoch > sv.epoch || (f.epoch == sv.epoch && f.zxid > sv.zxid) {
					s.logf("%d: follower %d is ahead, leader gives up", sv.id, f.id)
					s.restart(sv)
					ok = true
					break
				}
			}
			if sv.e.State() == Leading {
				ok = followers > voters/2
			}
		}
		switch {
		case ok:
			sv.badSince = -1
		case sv.badSince < 0:
			sv.badSince = s.now
		case s.now-sv.badSince >= s.opts.zabTimeout:
			s.logf("%d: %v leader %d does not hold, back to LOOKING", sv.id, sv.e.State(), leader)
			s.restart(sv)
		}
	}
}

func (s *sim) restart(sv *simServer) {
	sv.restarts++
	sv.badSince = -1
	s.start(sv)
}

func (s *sim) run(until int64, done func() bool) {
	for !done() && s.step(until) {
	}
}

func (s *sim) dump() string { return strings.Join(s.trace, "\n") }

// best is the voter FLE should elect: highest (epoch, zxid, sid).
func best(servers []*simServer) *simServer {
	var b *simServer
	for _, sv := range servers {
		if !sv.e.voter {
			continue
		}
		if b == nil || sv.epoch > b.epoch || (sv.epoch == b.epoch && (sv.zxid > b.zxid || (sv.zxid == b.zxid && sv.id > b.id))) {
			b = sv
		}
	}
	return b
}

// randomServers makes n voters (sids 1..n) and k observers with random logs; epochs and
// zxids are drawn from small ranges so that ties occur.
func randomServers(rng *rand.Rand, n, k int) ([]*simServer, Config) {
	var servers []*simServer
	cfg := Config{ConfigText: []byte("version=0")}
	for i := 1; i <= n+k; i++ {
		epoch := rng.Int64N(3)
		sv := &simServer{id: int64(i), epoch: epoch, zxid: epoch<<32 | rng.Int64N(3)}
		servers = append(servers, sv)
		if i <= n {
			cfg.Voters = append(cfg.Voters, sv.id)
		} else {
			cfg.Observers = append(cfg.Observers, sv.id)
		}
	}
	rng.Shuffle(len(servers), func(i, j int) { servers[i], servers[j] = servers[j], servers[i] })
	return servers, cfg
}

// TestSimPromptNetworkElectsBest: when every server starts at about the same time and every
// message arrives within less than the finalize wait (reordered and duplicated at will), all
// servers decide once, in round 1, for the voter with the highest (epoch, zxid, sid).
func TestSimPromptNetworkElectsBest(t *testing.T) {
	for _, size := range [][2]int{{3, 0}, {5, 0}, {3, 1}, {5, 2}} {
		for seed := uint64(1); seed <= 60; seed++ {
			t.Run(fmt.Sprintf("%dv%do/seed%d", size[0], size[1], seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, uint64(size[0])))
				servers, cfg := randomServers(rng, size[0], size[1])
				for _, sv := range servers {
					sv.startAt = rng.Int64N(30)
				}
				s := newSim(t, seed, simOpts{maxDelay: 60, dup: 0.2}, cfg, servers)
				allDecided := func() bool {
					for _, sv := range servers {
						if len(sv.decisions) == 0 {
							return false
						}
					}
					return true
				}
				s.run(5000, allDecided)
				// Let late duplicates land; nobody may change its mind.
				s.run(s.now+1000, func() bool { return false })
				want := best(servers)
				for _, sv := range servers {
					if len(sv.decisions) != 1 {
						t.Fatalf("server %d decided %d times: %+v\n%s", sv.id, len(sv.decisions), sv.decisions, s.dump())
					}
					d := sv.decisions[0]
					wantState := Following
					switch {
					case sv == want:
						wantState = Leading
					case !sv.e.voter:
						wantState = Observing
					}
					if d.Leader != want.id || d.State != wantState || d.ElectionEpoch != 1 || d.Zxid != want.zxid || d.PeerEpoch != want.epoch {
						t.Fatalf("server %d decided %+v; want %v of %d (zxid %#x epoch %d) in round 1\n%s",
							sv.id, d, wantState, want.id, want.zxid, want.epoch, s.dump())
					}
				}
			})
		}
	}
}

// TestSimFaultyNetworkConverges: with drops, slow links, partitions and staggered starts, FLE
// alone may pick different or lesser leaders (ZooKeeper relies on Zab to notice); with the
// Zab model restarting servers whose role does not hold, the ensemble settles on a voter with
// the best log once the faults end, every voter following it and every observer observing it.
func TestSimFaultyNetworkConverges(t *testing.T) {
	for _, size := range [][2]int{{3, 0}, {5, 0}, {3, 1}, {5, 2}} {
		for seed := uint64(1); seed <= 40; seed++ {
			t.Run(fmt.Sprintf("%dv%do/seed%d", size[0], size[1], seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, uint64(100+size[0])))
				servers, cfg := randomServers(rng, size[0], size[1])
				for _, sv := range servers {
					sv.startAt = rng.Int64N(3000)
				}
				// Two partitions of random shape and time.
				type part struct {
					from, to int64
					side     map[int64]bool
				}
				var parts []part
				for range 2 {
					p := part{from: rng.Int64N(15000), side: map[int64]bool{}}
					p.to = p.from + 500 + rng.Int64N(5000)
					for _, sv := range servers {
						if rng.IntN(2) == 0 {
							p.side[sv.id] = true
						}
					}
					parts = append(parts, p)
				}
				opts := simOpts{
					maxDelay: 400, drop: 0.25, dup: 0.1, faultsUntil: 20000,
					zab: true, zabTimeout: 2000,
					cut: func(now, from, to int64) bool {
						for _, p := range parts {
							if now >= p.from && now < p.to && p.side[from] != p.side[to] {
								return true
							}
						}
						return false
					},
				}
				cfg.MaxNotificationIntervalMs = 8000
				s := newSim(t, seed, opts, cfg, servers)
				// Zab only insists that no follower is ahead of the leader, so among voters with
				// the best log any one may end up leading.
				top := best(servers)
				settled := func() bool {
					l := s.byID[servers[0].e.Vote().Leader]
					if l == nil || l.epoch != top.epoch || l.zxid != top.zxid || !l.e.voter {
						return false
					}
					for _, sv := range servers {
						st := sv.e.State()
						if sv.e.Vote().Leader != l.id ||
							(sv == l && st != Leading) ||
							(sv != l && sv.e.voter && st != Following) ||
							(!sv.e.voter && st != Observing) {
							return false
						}
					}
					return true
				}
				s.run(20000, func() bool { return false })
				s.run(20000+10*60*1000, settled)
				if !settled() {
					var states []string
					for _, sv := range servers {
						states = append(states, fmt.Sprintf("%d:%v/%d", sv.id, sv.e.State(), sv.e.Vote().Leader))
					}
					t.Fatalf("not settled on a voter with epoch %d zxid %#x by %d ms: %v\n%s", top.epoch, top.zxid, s.now, states, s.dump())
				}
				// And it stays settled.
				s.run(s.now+30000, func() bool { return !settled() })
				if !settled() {
					t.Fatalf("settled, then moved at %d\n%s", s.now, s.dump())
				}
			})
		}
	}
}

// TestSimLateJoinerLearnsLeader: servers 1 and 2 elect 2; server 3, with the best log but
// started later, joins without a new round: it follows 2, and 1 and 2 are untouched.
func TestSimLateJoinerLearnsLeader(t *testing.T) {
	for _, previousRounds := range []int{0, 4} {
		t.Run(fmt.Sprintf("joiner had %d earlier rounds", previousRounds), func(t *testing.T) {
			servers := []*simServer{{id: 1, zxid: 5, startAt: 0}, {id: 2, zxid: 5, startAt: 0}, {id: 3, zxid: 500, epoch: 3, startAt: -1}}
			s := newSim(t, 1, simOpts{maxDelay: 20}, Config{Voters: []int64{1, 2, 3}}, servers)
			s.run(10000, func() bool { return len(servers[0].decisions) > 0 && len(servers[1].decisions) > 0 })
			if d := servers[1].decisions; len(d) != 1 || d[0].State != Leading {
				t.Fatalf("2 decided %+v\n%s", d, s.dump())
			}
			joiner := servers[2]
			for range previousRounds {
				joiner.e.Start(s.now, joiner.zxid, joiner.epoch)
			}
			joiner.startAt = s.now + 5000
			s.run(s.now+60000, func() bool { return len(joiner.decisions) > 0 })
			want := Decision{State: Following, Leader: 2, Zxid: 5, ElectionEpoch: 1, PeerEpoch: 0}
			if len(joiner.decisions) != 1 || joiner.decisions[0] != want {
				t.Fatalf("joiner decided %+v, want %+v\n%s", joiner.decisions, want, s.dump())
			}
			for _, sv := range servers[:2] {
				if len(sv.decisions) != 1 || sv.e.Round() != 1 {
					t.Errorf("server %d: decisions %+v round %d; an established server must not start over", sv.id, sv.decisions, sv.e.Round())
				}
			}
		})
	}
}

// TestSimMinorityCannotElect: two of five voters keep resending, with the interval capped,
// and never decide.
func TestSimMinorityCannotElect(t *testing.T) {
	servers := []*simServer{{id: 1, startAt: 0}, {id: 2, startAt: 10}, {id: 3, startAt: -1}, {id: 4, startAt: -1}, {id: 5, startAt: -1}}
	s := newSim(t, 7, simOpts{maxDelay: 30}, Config{Voters: []int64{1, 2, 3, 4, 5}, MaxNotificationIntervalMs: 10000}, servers)
	s.run(10*60*1000, func() bool {
		for _, sv := range servers {
			if len(sv.decisions) > 0 {
				return true
			}
		}
		return false
	})
	for _, sv := range servers {
		if len(sv.decisions) > 0 {
			t.Fatalf("server %d decided %+v with two of five voters\n%s", sv.id, sv.decisions, s.dump())
		}
	}
	if s.now < 9*60*1000 {
		t.Fatalf("the simulation stopped at %d ms", s.now)
	}
	for _, sv := range servers[:2] {
		if v := sv.e.Vote(); v.Leader != 2 || v.State != Looking {
			t.Errorf("server %d vote %+v, want LOOKING for 2", sv.id, v)
		}
		if sv.e.notTimeout != 10000 {
			t.Errorf("server %d resend interval %d, want the 10000 cap", sv.id, sv.e.notTimeout)
		}
	}
}

// TestSimTieBrokenBySid: identical logs elect the highest sid.
func TestSimTieBrokenBySid(t *testing.T) {
	servers := []*simServer{{id: 4, zxid: 9, epoch: 1}, {id: 9, zxid: 9, epoch: 1}, {id: 2, zxid: 9, epoch: 1}}
	s := newSim(t, 3, simOpts{maxDelay: 40}, Config{Voters: []int64{2, 4, 9}}, servers)
	s.run(10000, func() bool {
		for _, sv := range servers {
			if len(sv.decisions) == 0 {
				return false
			}
		}
		return true
	})
	for _, sv := range servers {
		if len(sv.decisions) != 1 || sv.decisions[0].Leader != 9 {
			t.Fatalf("server %d decided %+v, want leader 9\n%s", sv.id, sv.decisions, s.dump())
		}
	}
}

// TestSimObserverNeverWinsAndLearns: an observer with the best log and highest sid never
// becomes leader, and learns the leader when it joins late.
func TestSimObserverNeverWinsAndLearns(t *testing.T) {
	servers := []*simServer{{id: 1, zxid: 3}, {id: 2, zxid: 4}, {id: 3, zxid: 2}, {id: 10, zxid: 1 << 40, epoch: 256}, {id: 11, zxid: 1 << 41, epoch: 512, startAt: 4000}}
	s := newSim(t, 5, simOpts{maxDelay: 40, dup: 0.3}, Config{Voters: []int64{1, 2, 3}, Observers: []int64{10, 11}}, servers)
	s.run(60000, func() bool {
		for _, sv := range servers {
			if len(sv.decisions) == 0 {
				return false
			}
		}
		return true
	})
	for _, sv := range servers {
		want := Following
		switch sv.id {
		case 2:
			want = Leading
		case 10, 11:
			want = Observing
		}
		if len(sv.decisions) != 1 || sv.decisions[0].Leader != 2 || sv.decisions[0].State != want {
			t.Fatalf("server %d decided %+v, want %v of 2\n%s", sv.id, sv.decisions, want, s.dump())
		}
	}
}
