package compat

import (
	"testing"

	"github.com/zkd-io/zkd/jute"
)

const (
	persistent = jute.FlagPersistent
	ephemeral  = jute.FlagEphemeral
	seq        = jute.FlagPersistentSequential
	ephSeq     = jute.FlagEphemeralSequential
	hour       = int64(3600 * 1000)
)

// TestDifferentialOps runs the scripted sessions below against Apache ZooKeeper 3.8 and zkd
// and compares every reply (error code, zxid delta, body, Stat), every notification and every
// connection close, step by step.
func TestDifferentialOps(t *testing.T) {
	targets := startPair(t)
	compareScript(t, targets, scriptGroups())
}

func scriptGroups() []group {
	_ = digestID
	return []group{
		{name: "create-modes", sessions: []string{"a", "b"}, steps: []step{
			create("a", "/cm", b("root"), persistent),
			create2("a", "/cm/p", b("x"), persistent),
			create("a", "/cm/p", b("again"), persistent), // NODEEXISTS consumes a zxid
			create2("a", "/cm/e", b("eph"), ephemeral),
			create("a", "/cm/e/child", nil, persistent), // NOCHILDRENFOREPHEMERALS
			create2("a", "/cm/s-", b("1"), seq),
			create("a", "/cm/s-", b("2"), ephSeq),
			del("a", "/cm/s-0000000002", -1),
			create("a", "/cm/s-", nil, seq), // deletes do not lower the counter
			create("a", "/cm/p", nil, persistent),
			create("a", "/cm/s-", nil, seq), // failed creates do not raise it
			multi("a", mCreate("/cm/s-", nil, seq), mCreate("/cm/p", nil, persistent)),
			create("a", "/cm/s-", nil, seq), // a failed multi leaves it alone
			children2("a", "/cm", false),
			container("a", "/cm/ctr", jute.FlagContainer),
			create2("a", "/cm/ctr/kid", nil, persistent),
			container("a", "/cm/ctr0", persistent),
			create("a", "/cm/ctr1", nil, jute.FlagContainer),
			createTTL("a", "/cm/ttl", jute.FlagPersistentWithTTL, hour),
			createTTL("a", "/cm/ttls-", jute.FlagPersistentSequentialTTL, hour),
			createTTL("a", "/cm/ttl0", jute.FlagPersistentWithTTL, 0),
			createTTL("a", "/cm/ttlneg", jute.FlagPersistentWithTTL, -1),
			createTTL("a", "/cm/ttlmax", jute.FlagPersistentWithTTL, jute.MaxTTL),
			createTTL("a", "/cm/ttlbig", jute.FlagPersistentWithTTL, jute.MaxTTL+1),
			createTTL("a", "/cm/ttlp", persistent, hour),
			createTTL("a", "/cm/ttle", ephemeral, hour),
			createTTL("a", "/cm/ttlc", jute.FlagContainer, hour),
			create("a", "/cm/ttlf", nil, jute.FlagPersistentWithTTL),
			create("a", "/cm/ttlf", nil, jute.FlagPersistentSequentialTTL),
			create("a", "/cm/f7", nil, 7),
			create("a", "/cm/fneg", nil, -1),
			createTTL("a", "/cm/e/ttl", jute.FlagPersistentWithTTL, hour),
			create2("a", "/cm/ttl/kid", nil, persistent),
			create2("a", "/cm/ctr/kid/e", nil, ephemeral),
			exists("a", "/cm/ttl", false),
			getData("a", "/cm/ctr", false),
			exists("a", "/cm/e", false),
			children2("a", "/cm", false),
			create2("b", "/cm/be", b("b"), ephemeral),
			exists("a", "/cm/be", true),
			children("a", "/cm", true),
			getData("b", "/cm/be", false),
			closeSession("b"),
			exists("a", "/cm/be", false),
			children2("a", "/cm", false),
		}},
	}
}
