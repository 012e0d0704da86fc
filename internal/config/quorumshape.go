package config

import (
	"fmt"
	"maps"
	"slices"
)

// Quorum shape keys (issue 13): several addresses per server.N line, listening on all
// interfaces, retrying the election port's bind, and the observer master port.
const (
	// MultiAddressKey allows server.N lines with several '|'-separated addresses
	// (QuorumPeer.CONFIG_KEY_MULTI_ADDRESS_ENABLED).
	MultiAddressKey = "multiAddress.enabled"
	// MultiAddressReachabilityKey and MultiAddressTimeoutKey tune ZooKeeper's ICMP check of
	// which address to use. zkd dials the addresses in turn instead and accepts both keys
	// for compatibility.
	MultiAddressReachabilityKey = "multiAddress.reachabilityCheckEnabled"
	MultiAddressTimeoutKey      = "multiAddress.reachabilityCheckTimeoutMs"
	// QuorumListenOnAllIPsKey makes the quorum and election ports listen on every interface.
	QuorumListenOnAllIPsKey = "quorumListenOnAllIPs"
	// ElectionPortBindRetryKey is how many times the election port's bind is tried before
	// the server gives up (ZooKeeper's zookeeper.electionPortBindRetry); 0 = forever.
	ElectionPortBindRetryKey = "electionPortBindRetry"
	// ObserverMasterPortKey makes every follower serve observers on that port (on its
	// quorum address's host), and observers sync from a follower rather than the leader.
	ObserverMasterPortKey = "observerMasterPort"
)

// QuorumShape is the configuration of how ensemble members reach each other beyond the
// single address of a server.N line. The zero value is ZooKeeper's defaults.
type QuorumShape struct {
	MultiAddressEnabled bool
	// ReachabilityCheckDisabled and ReachabilityCheckTimeoutMs (0 = 1000) are accepted and
	// unused: zkd dials each address in turn rather than pinging them first.
	ReachabilityCheckDisabled  bool
	ReachabilityCheckTimeoutMs int
	ListenOnAllIPs             bool
	// ElectionPortBindRetry is the number of bind attempts for the election port: 0 means
	// ZooKeeper's default (3) and -1 forever (a zoo.cfg value of 0). Use
	// ElectionPortBindRetries.
	ElectionPortBindRetry int
	// ObserverMasterPort, when > 0, is the port followers serve observers on (ZooKeeper
	// takes a value <= 0 as unset).
	ObserverMasterPort int
}

// DefaultElectionPortBindRetry is ZooKeeper's DEFAULT_PORT_BIND_MAX_RETRY (the key table's
// default for electionPortBindRetry).
const DefaultElectionPortBindRetry = 3

// ElectionPortBindRetries is how many times to try binding the election port; 0 = forever,
// as ZooKeeper counts.
func (q *QuorumShape) ElectionPortBindRetries() int {
	switch {
	case q.ElectionPortBindRetry < 0:
		return 0
	case q.ElectionPortBindRetry == 0:
		return DefaultElectionPortBindRetry
	}
	return q.ElectionPortBindRetry
}

// setQuorumShapeKey applies key when it is a quorum shape key; handled is false otherwise.
// The key table has taken any "zookeeper." prefix off.
func (q *QuorumShape) setQuorumShapeKey(key, v string) (handled bool, err error) {
	bare := key
	switch {
	case bare == MultiAddressKey:
		q.MultiAddressEnabled, err = parseBool(v)
	case bare == MultiAddressReachabilityKey:
		var on bool
		on, err = parseBool(v)
		q.ReachabilityCheckDisabled = !on
	case bare == MultiAddressTimeoutKey:
		q.ReachabilityCheckTimeoutMs, err = javaParseInt(v)
	case bare == ElectionPortBindRetryKey:
		// Integer.getInteger: a value that is not a number leaves the default, and
		// QuorumCnxManager takes the default for a negative one.
		switch n, perr := javaParseInt(v); {
		case perr != nil || n < 0:
			q.ElectionPortBindRetry = 0
		case n == 0:
			q.ElectionPortBindRetry = -1
		default:
			q.ElectionPortBindRetry = n
		}
	case key == QuorumListenOnAllIPsKey:
		q.ListenOnAllIPs, err = parseBool(v)
	case key == ObserverMasterPortKey:
		q.ObserverMasterPort, err = javaParseInt(v)
	default:
		return false, nil
	}
	return true, err
}

// validate applies ZooKeeper's rule that several addresses need multiAddress.enabled (which
// QuorumServer checks whatever the order of the keys).
func (q *QuorumShape) validate(servers map[int]Member, bad func(key string, value any, format string, args ...any)) {
	if !q.MultiAddressEnabled {
		for _, id := range slices.Sorted(maps.Keys(servers)) {
			if s := servers[id]; len(s.MoreAddrs) > 0 {
				bad(fmt.Sprintf("server.%d", id), s, "Multiple address feature is disabled, but multiple "+
					"addresses were specified for sid %d (set %s=true)", id, MultiAddressKey)
			}
		}
	}
}
