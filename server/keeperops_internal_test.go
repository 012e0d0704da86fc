package server

import (
	"testing"

	"github.com/zkd-io/zkd/jute"
)

// TestKeeperCreatesUpgradeLocalSessions: the keeper-ops creates make ephemerals as create
// does, so a local session sending one is upgraded first (an ephemeral needs a session the
// quorum knows).
func TestKeeperCreatesUpgradeLocalSessions(t *testing.T) {
	eph := &jute.CreateRequest{Path: "/a/b", ACL: jute.OpenACLUnsafe, Flags: jute.FlagEphemeral}
	per := &jute.CreateRequest{Path: "/a/b", ACL: jute.OpenACLUnsafe}
	for _, op := range []jute.OpCode{jute.OpCreateIfNotExists, jute.OpCreateWithParents} {
		if !createsEphemeral(op, eph) || createsEphemeral(op, per) {
			t.Errorf("%v: ephemeral %v, persistent %v", op, createsEphemeral(op, eph), createsEphemeral(op, per))
		}
	}
	m := &jute.MultiRequest{Ops: []jute.MultiOp{{Type: jute.OpCreateIfNotExists, Body: eph}}}
	if !createsEphemeral(jute.OpMulti, m) {
		t.Error("a multi holding an ephemeral createIfNotExists")
	}
}
