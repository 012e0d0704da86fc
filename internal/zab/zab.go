package zab

import (
	"fmt"

	"github.com/zkd-io/zkd/internal/quorum"
)

// Quorum packet types (QuorumPacket.Type); see the package doc for what each carries.
const (
	PktRequest           int32 = 1
	PktProposal          int32 = 2
	PktAck               int32 = 3
	PktCommit            int32 = 4
	PktPing              int32 = 5
	PktRevalidate        int32 = 6
	PktSync              int32 = 7
	PktInform            int32 = 8
	PktCommitAndActivate int32 = 9
	PktNewLeader         int32 = 10
	PktFollowerInfo      int32 = 11
	PktUpToDate          int32 = 12
	PktDiff              int32 = 13
	PktTrunc             int32 = 14
	PktSnap              int32 = 15
	PktObserverInfo      int32 = 16
	PktLeaderInfo        int32 = 17
	PktAckEpoch          int32 = 18
	PktInformAndActivate int32 = 19
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
		PktRequest: "REQUEST", PktProposal: "PROPOSAL", PktAck: "ACK", PktCommit: "COMMIT", PktPing: "PING",
		PktRevalidate: "REVALIDATE", PktSync: "SYNC", PktInform: "INFORM", PktCommitAndActivate: "COMMITANDACTIVATE",
		PktNewLeader: "NEWLEADER", PktFollowerInfo: "FOLLOWERINFO", PktUpToDate: "UPTODATE", PktDiff: "DIFF",
		PktTrunc: "TRUNC", PktSnap: "SNAP", PktObserverInfo: "OBSERVERINFO", PktLeaderInfo: "LEADERINFO",
		PktAckEpoch: "ACKEPOCH", PktInformAndActivate: "INFORMANDACTIVATE",
	}
	if n, ok := names[t]; ok {
		return n
	}
	return fmt.Sprintf("UNKNOWN(%d)", t)
}

// QuorumVerifier decides whether a set of voters is a quorum (internal/quorum owns the
// rules, so that election and Zab count alike).
type QuorumVerifier = quorum.Verifier

// Majority is the default verifier: more than half of the voters.
type Majority = quorum.Majority

// NewMajority returns a majority verifier over voters.
func NewMajority(voters ...int64) Majority { return quorum.NewMajority(voters...) }
