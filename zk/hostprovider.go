package zk

import (
	"math/rand/v2"
	"slices"
)

// hostProvider chooses the server for each connection attempt, as ZooKeeper's
// StaticHostProvider does: the list is shuffled once, tried round robin, and a server-list
// update moves just enough clients to the new servers to even out the load (ZOOKEEPER-1355).
//
// It is pure: no I/O, no clock, randomness only from the injected source, so the
// rebalancing statistics can be tested deterministically. Names are resolved by the dialer on
// every attempt, not here. The caller serializes access.
type hostProvider struct {
	rng     *rand.Rand
	servers []string

	current int // index of the server last returned by next, -1 before the first
	last    int // index of the server last connected to, -1 before the first attempt

	// Reconfiguration mode, entered by update when this client should move: next prefers
	// newServers with probability pNew (else oldServers), until one connects or all failed.
	reconfig       bool
	oldServers     []string
	newServers     []string
	curOld, curNew int
	pOld, pNew     float64
}

func newHostProvider(servers []string, rng *rand.Rand) *hostProvider {
	h := &hostProvider{rng: rng, current: -1, last: -1}
	h.servers = h.shuffle(servers)
	return h
}

func (h *hostProvider) shuffle(servers []string) []string {
	s := slices.Clone(servers)
	h.rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	return s
}

// next returns the server to try next. wrapped reports that every server has been tried
// since the last successful connection (or that a reconfiguration ran out of servers), so
// the caller should back off before trying.
func (h *hostProvider) next() (addr string, wrapped bool) {
	if h.reconfig {
		if a, ok := h.nextReconfig(); ok {
			h.current = slices.Index(h.servers, a)
			return a, false
		}
		h.reconfig = false
		wrapped = true
	}
	h.current++
	if h.current >= len(h.servers) {
		h.current = 0
	}
	wrapped = wrapped || h.current == h.last
	if h.last == -1 {
		// The first attempt ever does not wait; a full round from here does.
		h.last = 0
	}
	return h.servers[h.current], wrapped
}

// nextReconfig picks a new server with probability pNew while untried ones remain, or
// when all old ones were tried; otherwise an old one.
func (h *hostProvider) nextReconfig() (string, bool) {
	takeNew := h.rng.Float64() <= h.pNew
	if h.curNew+1 < len(h.newServers) && (takeNew || h.curOld+1 >= len(h.oldServers)) {
		h.curNew++
		return h.newServers[h.curNew], true
	}
	if h.curOld+1 < len(h.oldServers) {
		h.curOld++
		return h.oldServers[h.curOld], true
	}
	return "", false
}

// onConnected records that the last server returned by next accepted the session.
func (h *hostProvider) onConnected() {
	h.last = h.current
	h.reconfig = false
}

// update replaces the server list. currentHost is the server the client is connected to ("" if
// none). It reports whether the client should drop its connection and reconnect (next then
// chooses where): always when its server was removed; with probability 1 - old/new when the
// ensemble grew (3 -> 5 servers: 0.4), so each server ends up with an equal share; never when
// its server stayed and the ensemble did not grow.
func (h *hostProvider) update(servers []string, currentHost string) bool {
	shuffled := h.shuffle(servers)
	myServer := currentHost
	if h.reconfig {
		// Still looking for a server after an earlier update: judge by where we would go.
		myServer, _ = h.next()
	}
	if myServer == "" {
		if h.last >= 0 && h.last < len(h.servers) {
			myServer = h.servers[h.last]
		} else {
			myServer = h.servers[0]
		}
	}
	inNew := slices.Contains(shuffled, myServer)

	h.reconfig = true
	h.oldServers, h.newServers = h.oldServers[:0], h.newServers[:0]
	for _, a := range shuffled {
		if slices.Contains(h.servers, a) {
			h.oldServers = append(h.oldServers, a)
		} else {
			h.newServers = append(h.newServers, a)
		}
	}
	numOld, numNew, prev := len(h.oldServers), len(h.newServers), len(h.servers)
	if numOld+numNew > prev {
		// Growing: each old server must shed 1 - prev/new of its clients to the new ones.
		if inNew {
			if h.rng.Float64() <= 1-float64(prev)/float64(numOld+numNew) {
				h.pNew, h.pOld = 1, 0
			} else {
				h.reconfig = false
			}
		} else {
			h.pNew, h.pOld = 1, 0
		}
	} else if inNew {
		// Same size or shrinking and our server stays: it gains load, so stay.
		h.reconfig = false
	} else {
		// Our server left a list that did not grow: spread over old and new servers so
		// that every remaining server ends up with the same expected load.
		h.pOld = float64(numOld*(prev-(numOld+numNew))) / float64((numOld+numNew)*(prev-numOld))
		h.pNew = 1 - h.pOld
	}

	if !h.reconfig {
		cur := ""
		if h.current >= 0 && h.current < len(h.servers) {
			cur = h.servers[h.current]
		}
		h.current = slices.Index(shuffled, cur)
	} else {
		h.current = -1
	}
	h.servers = shuffled
	h.curOld, h.curNew = -1, -1
	h.last = h.current
	return h.reconfig
}

func (h *hostProvider) size() int { return len(h.servers) }

// pointAt makes addr the server last returned by next, when the client goes to a server
// it chose itself (a read-write server found while on a read-only one).
func (h *hostProvider) pointAt(addr string) {
	if i := slices.Index(h.servers, addr); i >= 0 {
		h.current = i
	}
}
