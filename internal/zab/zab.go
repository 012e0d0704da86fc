// Package zab owns the replication protocol's decisions, as ZooKeeper's Zab implementation
// makes them: which zxids are committed (a quorum of acks, in order), and how a learner that
// joins a leader is brought up to date (DIFF, TRUNC or SNAP). It is pure: packets and time
// come in as values, packets and actions go out; the server does the I/O.
package zab

import "fmt"

// Quorum packet types (fact sheet §13.3).
const (
	Request           int32 = 1
	Proposal          int32 = 2
	Ack               int32 = 3
	Commit            int32 = 4
	Ping              int32 = 5
	Revalidate        int32 = 6
	Sync              int32 = 7
	Inform            int32 = 8
	CommitAndActivate int32 = 9
	NewLeader         int32 = 10
	FollowerInfo      int32 = 11
	UpToDate          int32 = 12
	Diff              int32 = 13
	Trunc             int32 = 14
	Snap              int32 = 15
	ObserverInfo      int32 = 16
	LeaderInfo        int32 = 17
	AckEpoch          int32 = 18
	InformAndActivate int32 = 19
)

// ProtocolVersion is the learner protocol version ZooKeeper 3.4+ speaks (0x10000).
const ProtocolVersion int32 = 0x10000

// MakeZxid builds a zxid from an epoch and a counter.
func MakeZxid(epoch, counter int64) int64 { return epoch<<32 | (counter & 0xffffffff) }

// Epoch is a zxid's epoch.
func Epoch(zxid int64) int64 { return int64(uint64(zxid) >> 32) }

// Counter is a zxid's counter.
func Counter(zxid int64) int64 { return zxid & 0xffffffff }

// Hex formats a zxid as ZooKeeper logs it.
func Hex(zxid int64) string { return fmt.Sprintf("0x%x", uint64(zxid)) }

// PacketName names a packet type for logs.
func PacketName(t int32) string {
	names := map[int32]string{
		Request: "REQUEST", Proposal: "PROPOSAL", Ack: "ACK", Commit: "COMMIT", Ping: "PING",
		Revalidate: "REVALIDATE", Sync: "SYNC", Inform: "INFORM", CommitAndActivate: "COMMITANDACTIVATE",
		NewLeader: "NEWLEADER", FollowerInfo: "FOLLOWERINFO", UpToDate: "UPTODATE", Diff: "DIFF",
		Trunc: "TRUNC", Snap: "SNAP", ObserverInfo: "OBSERVERINFO", LeaderInfo: "LEADERINFO",
		AckEpoch: "ACKEPOCH", InformAndActivate: "INFORMANDACTIVATE",
	}
	if n, ok := names[t]; ok {
		return n
	}
	return fmt.Sprintf("UNKNOWN(%d)", t)
}

// QuorumVerifier decides whether a set of voters is a quorum.
type QuorumVerifier interface {
	IsQuorum(sids map[int64]bool) bool
	IsVoter(sid int64) bool
}

// Majority is the default verifier: more than half of the voters.
type Majority struct {
	Voters map[int64]bool
}

// NewMajority returns a majority verifier over voters.
func NewMajority(voters ...int64) Majority {
	m := Majority{Voters: make(map[int64]bool, len(voters))}
	for _, v := range voters {
		m.Voters[v] = true
	}
	return m
}

func (m Majority) IsVoter(sid int64) bool { return m.Voters[sid] }

func (m Majority) IsQuorum(sids map[int64]bool) bool {
	n := 0
	for sid, ok := range sids {
		if ok && m.Voters[sid] {
			n++
		}
	}
	return n*2 > len(m.Voters)
}
