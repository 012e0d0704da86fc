package peer

import (
	"bytes"
	"cmp"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// MemNetwork is an in-memory network of Transports for tests. Its faults (drops, duplicates,
// delays, partitions) are drawn from a seeded generator, and delays run on a virtual clock
// that only Advance moves, so a test that drives it from one goroutine replays exactly.
// Messages without delay are delivered during Send.
type MemNetwork struct {
	mu       sync.Mutex
	rng      *rand.Rand
	now      time.Duration
	seq      uint64
	nodes    map[int64]*MemTransport
	inflight []memMsg
	drop     float64
	dup      float64
	minDelay time.Duration
	maxDelay time.Duration
	group    map[int64]int // nil: no partition
	queueLen int
	stats    MemStats
}

// MemStats counts what the network did with the messages sent.
type MemStats struct {
	Sent       int // Send calls
	Delivered  int // messages put on a receive queue (duplicates count twice)
	Dropped    int // lost to the drop rate, a partition, or a missing or closed receiver
	Duplicated int // extra copies made
	Overflowed int // oldest messages pushed out of a full receive queue
}

type memMsg struct {
	at  time.Duration
	seq uint64
	to  int64
	m   Message
}

// NewMemNetwork returns a fault-free network whose randomness comes from seed.
func NewMemNetwork(seed uint64) *MemNetwork {
	return &MemNetwork{rng: rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d)), nodes: make(map[int64]*MemTransport), queueLen: 1024}
}

// SetQueueLen sets the receive queue length of transports joined afterwards (default 1024);
// a full queue drops its oldest message.
func (m *MemNetwork) SetQueueLen(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queueLen = max(n, 1)
}

// SetDropRate makes each message (other than to oneself) lost with probability p.
func (m *MemNetwork) SetDropRate(p float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.drop = p
}

// SetDuplicateRate makes each delivered message arrive twice with probability p.
func (m *MemNetwork) SetDuplicateRate(p float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dup = p
}

// SetDelay delays each message (each copy independently, which reorders them) by a uniform
// random virtual duration in [lo, hi].
func (m *MemNetwork) SetDelay(lo, hi time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.minDelay, m.maxDelay = lo, max(lo, hi)
}

// Partition splits the network: messages sent from then on only pass between members of the
// same group. A sid in no group is cut off from everyone.
func (m *MemNetwork) Partition(groups ...[]int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.group = make(map[int64]int)
	for i, g := range groups {
		for _, id := range g {
			m.group[id] = i
		}
	}
}

// Heal ends a partition.
func (m *MemNetwork) Heal() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.group = nil
}

// Now is the virtual time.
func (m *MemNetwork) Now() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Advance moves the virtual clock by d and delivers the delayed messages that are due, in the
// order of their delivery times.
func (m *MemNetwork) Advance(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now += d
	slices.SortFunc(m.inflight, func(a, b memMsg) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.seq, b.seq)) })
	i := 0
	for ; i < len(m.inflight) && m.inflight[i].at <= m.now; i++ {
		m.deliverLocked(m.inflight[i].to, m.inflight[i].m)
	}
	m.inflight = slices.Delete(m.inflight, 0, i)
}

// InFlight is the number of delayed messages not delivered yet.
func (m *MemNetwork) InFlight() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.inflight)
}

// Stats returns the counters so far.
func (m *MemNetwork) Stats() MemStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

// Join returns the transport of server id, replacing an earlier one.
func (m *MemNetwork) Join(id int64) *MemTransport {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := &MemTransport{net: m, id: id, ch: make(chan Message, m.queueLen)}
	if old := m.nodes[id]; old != nil && !old.closed {
		old.closed = true
		close(old.ch)
	}
	m.nodes[id] = t
	return t
}

func (m *MemNetwork) connected(a, b int64) bool {
	if m.group == nil || a == b {
		return true
	}
	ga, okA := m.group[a]
	gb, okB := m.group[b]
	return okA && okB && ga == gb
}

func (m *MemNetwork) send(from, to int64, payload []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats.Sent++
	msg := Message{From: from, Payload: payload}
	if to == from {
		m.deliverLocked(to, msg)
		return
	}
	if !m.connected(from, to) || (m.drop > 0 && m.rng.Float64() < m.drop) {
		m.stats.Dropped++
		return
	}
	copies := 1
	if m.dup > 0 && m.rng.Float64() < m.dup {
		copies = 2
		m.stats.Duplicated++
	}
	for range copies {
		d := m.minDelay
		if m.maxDelay > m.minDelay {
			d += time.Duration(m.rng.Int64N(int64(m.maxDelay-m.minDelay) + 1))
		}
		if d == 0 {
			m.deliverLocked(to, msg)
			continue
		}
		m.seq++
		m.inflight = append(m.inflight, memMsg{at: m.now + d, seq: m.seq, to: to, m: msg})
	}
}

func (m *MemNetwork) deliverLocked(to int64, msg Message) {
	t := m.nodes[to]
	if t == nil || t.closed {
		m.stats.Dropped++
		return
	}
	msg.Payload = bytes.Clone(msg.Payload)
	if deliver(t.ch, msg) {
		m.stats.Overflowed++
	}
	m.stats.Delivered++
}

// MemTransport is one server's end of a MemNetwork.
type MemTransport struct {
	net    *MemNetwork
	id     int64
	ch     chan Message
	closed bool // guarded by net.mu
}

// Send hands payload to the network.
func (t *MemTransport) Send(to int64, payload []byte) {
	t.net.mu.Lock()
	closed := t.closed
	t.net.mu.Unlock()
	if closed {
		return
	}
	t.net.send(t.id, to, bytes.Clone(payload))
}

// Recv delivers received messages; it is closed by Close.
func (t *MemTransport) Recv() <-chan Message { return t.ch }

// Close detaches the transport: messages to it are dropped from now on.
func (t *MemTransport) Close() error {
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	if !t.closed {
		t.closed = true
		close(t.ch)
	}
	return nil
}
