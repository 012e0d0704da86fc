package zab

import (
	"bytes"
	"strconv"
)

// Config is a quorum configuration as Zab uses it: who votes, and the text ZooKeeper's
// QuorumVerifier.toString gives it, which NEWLEADER and a reconfig txn carry. Its version
// is the zxid of the reconfig that made it (0 for a configuration only ever written in
// zoo.cfg).
type Config struct {
	QV      QuorumVerifier
	Version int64
	Text    []byte
	// Addrs are the members' quorum addresses, observers' too: a leader whose address a
	// reconfig changes hands over to another voter, as one the reconfig removed does, and
	// an in-place rollover (wide) waits for every member it names.
	Addrs map[int64]string
}

// WithVersion returns c as version v: the same members, with the text's "version=" line
// rewritten (ZOOKEEPER-1783: a new leader gives the zoo.cfg configuration, version 0, the
// version of its epoch, so that it outranks the partial views of servers still joining).
func (c Config) WithVersion(v int64) Config {
	c.Version = v
	c.Text = SetTextVersion(c.Text, v)
	return c
}

// SetTextVersion replaces (or appends) the "version=" line of a configuration text.
func SetTextVersion(text []byte, v int64) []byte {
	lines := bytes.Split(bytes.TrimRight(text, "\n"), []byte("\n"))
	out := make([][]byte, 0, len(lines)+1)
	for _, l := range lines {
		if len(l) == 0 || bytes.HasPrefix(l, []byte("version=")) {
			continue
		}
		out = append(out, l)
	}
	out = append(out, []byte("version="+strconv.FormatUint(uint64(v), 16)))
	return bytes.Join(out, []byte("\n"))
}

// TextVersion reads a configuration text's "version=" line (hex); 0 without one, as
// ZooKeeper reads a configuration that names no version.
func TextVersion(text []byte) int64 {
	for _, l := range bytes.Split(text, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if v, ok := bytes.CutPrefix(l, []byte("version=")); ok {
			n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 16, 64)
			if err == nil {
				return int64(n)
			}
		}
	}
	return 0
}

// ConfigKind says what a ConfigEvent asks of the owner.
type ConfigKind int

const (
	// ConfigSeen: a reconfig was proposed (QuorumPeer.setLastSeenQuorumVerifier).
	ConfigSeen ConfigKind = iota + 1
	// ConfigActivated: a reconfig committed (COMMITANDACTIVATE, INFORMANDACTIVATE, or the
	// leader's own commit); Designated names the leader the committing leader chose.
	ConfigActivated
	// ConfigFromLeader: NEWLEADER carried the leader's last seen configuration.
	ConfigFromLeader
	// ConfigLeaderActivated: UPTODATE made the NEWLEADER configuration current (a
	// learner), or the leader was established with its last seen one (Designated set).
	ConfigLeaderActivated
)

// ConfigEvent is a configuration change for the owner to carry out (QuorumPeer's
// processReconfig and setLastSeenQuorumVerifier), after the Ready's Apply.
type ConfigEvent struct {
	Kind ConfigKind
	Zxid int64
	Text []byte
	// Designated is the leader the committing leader designated; NoLeader when none.
	Designated int64
}

// NoLeader is ConfigEvent.Designated when no leader was designated.
const NoLeader int64 = -1
