package session

// IDGenerator hands out session ids the way ZooKeeper's SessionTrackerImpl does:
// the top 8 bits are the server id, the next 40 bits the low 40 bits of the start-up time,
// the low 16 bits a counter that simply increments (and may carry into the time bits).
// Ids are stored in ephemeralOwner, where 0 means "not ephemeral" and 0x8000000000000000
// marks a container, so neither is ever produced. It is not safe for concurrent use.
type IDGenerator struct {
	next   uint64
	server uint64 // top byte, to recognise our own ids in Observe
}

const containerOwner = uint64(1) << 63 // EphemeralType.CONTAINER_EPHEMERAL_OWNER

// NewIDGenerator starts a generator for serverID (ZooKeeper standalone uses 1; with TTL
// nodes enabled the server id must be at most 254 so ids never start with 0xFF) at start-up
// time nowMs.
func NewIDGenerator(serverID int64, nowMs int64) *IDGenerator {
	// initializeNextSessionId: (now << 24) >>> 8 | id << 56.
	next := uint64(nowMs)<<24>>8 | uint64(serverID)<<56
	return &IDGenerator{next: next, server: uint64(serverID) << 56}
}

// Next returns a fresh session id.
func (g *IDGenerator) Next() int64 {
	for {
		id := g.next
		g.next++
		if id != 0 && id != containerOwner {
			return int64(id)
		}
	}
}

// Observe tells the generator about an id that already exists (for example one loaded from a
// snapshot or seen in a replayed log) so that Next never hands it out again. ZooKeeper
// relies on the start-up time differing between runs; after a reboot the monotonic clock
// restarts, so we also skip past any of our own ids that are ahead of the counter.
func (g *IDGenerator) Observe(id int64) {
	u := uint64(id)
	if u&(0xFF<<56) != g.server {
		return // another server's prefix: cannot collide with ours
	}
	if u >= g.next {
		g.next = u + 1
	}
}

// Password returns the session password ZooKeeper derives from a session id
// (ZooKeeperServer.generatePasswd): the first 16 bytes of
// java.util.Random(sessionID ^ 0xB3415C00).nextBytes. Snapshots do not store passwords, so
// reproducing the formula lets clients of a migrated server reconnect to their sessions.
func Password(sessionID int64) [16]byte {
	const (
		multiplier = 0x5DEECE66D
		addend     = 0xB
		mask       = 1<<48 - 1
	)
	seed := (uint64(sessionID) ^ 0xB3415C00 ^ multiplier) & mask
	var p [16]byte
	for i := 0; i < len(p); i += 4 {
		seed = (seed*multiplier + addend) & mask
		r := uint32(seed >> 16) // next(32)
		// nextBytes writes each int low byte first.
		p[i], p[i+1], p[i+2], p[i+3] = byte(r), byte(r>>8), byte(r>>16), byte(r>>24)
	}
	return p
}

// Negotiate clamps a requested session timeout to [min, max] in the order ZooKeeper applies
// the bounds (processConnectRequest), so a misconfigured min > max yields max.
func Negotiate(requested, min, max int32) int32 {
	t := requested
	if t < min {
		t = min
	}
	if t > max {
		t = max
	}
	return t
}
