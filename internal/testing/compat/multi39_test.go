package compat

import (
	"fmt"

	"github.com/zkd-io/zkd/jute"
)

// differs4026 marks a step where zkd answers a create inside a multi as ZooKeeper 3.9 does.
func differs4026(zkdWant string, st step) step {
	return zkdDiffers("ZOOKEEPER-4026 (3.9.0): a create in a multi keeps its opcode unless the flags imply createContainer or createTTL; flags it cannot decode fail the request", zkdWant, st)
}

// mOp is a create of any opcode inside a multi, with a ttl for createTTL.
func mOp(typ jute.OpCode, path string, flags int32, ttl int64) jute.MultiOp {
	if typ == jute.OpCreateTTL {
		return jute.MultiOp{Type: typ, Body: &jute.CreateTTLRequest{Path: path, ACL: open, Flags: flags, TTL: ttl}}
	}
	return jute.MultiOp{Type: typ, Body: &jute.CreateRequest{Path: path, ACL: open, Flags: flags}}
}

// multi39Group is every create opcode with every flags value inside a multi, and the same
// outside one. ZooKeeper 3.9's MultiOperationRecord keeps the opcode (create2 answers with
// a Stat, createContainer makes a container whatever its other flags say) unless the flags
// make it createContainer or createTTL, and fails the whole request (MARSHALLINGERROR, a
// zxid) on a create, create2 or createContainer whose flags are a TTL mode or none. 3.8.0
// let the flags alone decide. A createTTL without a TTL flag is a plain create in both.
func multi39Group() group {
	// zkd's answers where 3.8.0's differ, by node name. 3.8.0 answers create2 and
	// createContainer without the CONTAINER flag with a plain create (path only), and fails
	// only the op with flags 7 or -1 (BADARGUMENTS); TTL flags fail the request in both.
	want := map[string]string{
		"1_7":   "err=-5 zxid=z+9",
		"1_-1":  "err=-5 zxid=z+10",
		"15_0":  `err=0 zxid=z+11 results=[create2 path="/m39/15_0" stat={cz=z+11 mz=z+11 pz=z+11 v=0 cv=0 av=0 eph=0 len=0 nc=0 c=m}]`,
		"15_1":  `err=0 zxid=z+12 results=[create2 path="/m39/15_1" stat={cz=z+12 mz=z+12 pz=z+12 v=0 cv=0 av=0 eph=sess(a) len=0 nc=0 c=m}]`,
		"15_2":  `err=0 zxid=z+13 results=[create2 path="/m39/15_20000000007" stat={cz=z+13 mz=z+13 pz=z+13 v=0 cv=0 av=0 eph=0 len=0 nc=0 c=m}]`,
		"15_3":  `err=0 zxid=z+14 results=[create2 path="/m39/15_30000000008" stat={cz=z+14 mz=z+14 pz=z+14 v=0 cv=0 av=0 eph=sess(a) len=0 nc=0 c=m}]`,
		"15_7":  "err=-5 zxid=z+18",
		"15_-1": "err=-5 zxid=z+19",
		// createContainer makes a container whatever its other flags: never ephemeral, but
		// sequential flags still name it.
		"19_0":  `err=0 zxid=z+20 results=[create2 path="/m39/19_0" stat={cz=z+20 mz=z+20 pz=z+20 v=0 cv=0 av=0 eph=0 len=0 nc=0 c=m}]`,
		"19_1":  `err=0 zxid=z+21 results=[create2 path="/m39/19_1" stat={cz=z+21 mz=z+21 pz=z+21 v=0 cv=0 av=0 eph=0 len=0 nc=0 c=m}]`,
		"19_2":  `err=0 zxid=z+22 results=[create2 path="/m39/19_20000000012" stat={cz=z+22 mz=z+22 pz=z+22 v=0 cv=0 av=0 eph=0 len=0 nc=0 c=m}]`,
		"19_3":  `err=0 zxid=z+23 results=[create2 path="/m39/19_30000000013" stat={cz=z+23 mz=z+23 pz=z+23 v=0 cv=0 av=0 eph=0 len=0 nc=0 c=m}]`,
		"19_7":  "err=-5 zxid=z+27",
		"19_-1": "err=-5 zxid=z+28",
	}
	steps := []step{create("a", "/m39", nil, persistent)}
	for _, typ := range []jute.OpCode{jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL} {
		for _, flags := range []int32{0, 1, 2, 3, 4, 5, 6, 7, -1} {
			name := fmt.Sprintf("%d_%d", typ, flags)
			st := multi("a", mOp(typ, "/m39/"+name, flags, hour))
			if w, ok := want[name]; ok {
				st = differs4026(w, st)
			}
			steps = append(steps, st)
		}
	}
	steps = append(steps,
		// createTTL without a TTL flag drops its ttl, even one that is not valid.
		multi("a", mOp(jute.OpCreateTTL, "/m39/t0", persistent, -1)),
		multi("a", mOp(jute.OpCreateTTL, "/m39/t4", jute.FlagContainer, 0)),
		multi("a", mOp(jute.OpCreateTTL, "/m39/t5", jute.FlagPersistentWithTTL, -1)),
		// Which nodes are ephemeral: createContainer's ephemeral flags make no ephemeral.
		differs4026(`list=["/m39/15_1" "/m39/15_30000000008" "/m39/1_1" "/m39/1_30000000003" "/m39/21_1" "/m39/21_30000000018"]`,
			ephemerals("a", "/m39")),
		differs4026("stat={cz=z+21 mz=z+21 pz=z+21 v=0 cv=0 av=0 eph=0 len=0 nc=0 c=m}", exists("a", "/m39/19_1", false)),
		children2("a", "/m39", false),
		// Until applied, a createContainer with ephemeral flags is ephemeral for the ops
		// after it (PrepRequestProcessor's ChangeRecord follows the flags).
		multi("a", mOp(jute.OpCreateContainer, "/m39/ce", ephemeral, 0), mCreate("/m39/ce/k", nil, persistent)),
		differs4026(`results=[create2 path="/m39/cp" stat={cz=z+42 mz=z+42 pz=z+42 v=0 cv=0 av=0 eph=0 len=0 nc=0 c=m}, create path="/m39/cp/k"]`,
			multi("a", mOp(jute.OpCreateContainer, "/m39/cp", persistent, 0), mCreate("/m39/cp/k", nil, persistent))),
		// Results and events of a mixed multi, and of a failing one.
		exists("b", "/m39/w", true),
		children("b", "/m39", true),
		differs4026(`results=[create2 path="/m39/w" stat={cz=z+43 mz=z+43 pz=z+43 v=0 cv=0 av=0 eph=0 len=1 nc=0 c=m}, `+
			`setData stat={cz=z+43 mz=z+43 pz=z+43 v=1 cv=0 av=0 eph=0 len=1 nc=0 c=m}, `+
			`create2 path="/m39/w/s-0000000000" stat={cz=z+43 mz=z+43 pz=z+43 v=0 cv=0 av=0 eph=sess(a) len=0 nc=0 c=m}, create path="/m39/w/p"]`+
			"\n  b after reply: NodeCreated /m39/w\n  b after reply: NodeChildrenChanged /m39",
			multi("a", mCreate2("/m39/w", b("w"), persistent), mSet("/m39/w", b("x"), 0), mCreate2("/m39/w/s-", nil, ephSeq), mCreate("/m39/w/p", nil, persistent))),
		multi("a", mCreate2("/m39/f", nil, persistent), mCreate2("/m39/w", nil, persistent)),
		exists("a", "/m39/f", false),
		// Flags it cannot decode fail the whole multi, the ops before them included.
		multi("a", mCreate("/m39/pre", nil, persistent), mCreate2("/m39/bad", nil, jute.FlagPersistentWithTTL)),
		differs4026("err=-5 zxid=z+46", multi("a", mCreate("/m39/pre", nil, persistent), mCreate2("/m39/bad", nil, 7), mCreate("/m39/post", nil, persistent))),
		exists("a", "/m39/pre", false),
		// A multiRead holding such a create does not decode either: no body.
		// (3.8.0 decodes it and fails at the op, after it started an empty MultiResponse.)
		differs4026("err=-5 zxid=z+46; then open",
			rawFrame("a", "multiRead [create flags=5]", frame(1001, jute.OpMultiRead, jute.Marshal(&jute.MultiRequest{Ops: []jute.MultiOp{mCreate("/m39/r", nil, jute.FlagPersistentWithTTL)}})))),
		differs4026("err=-5 zxid=z+46; then open",
			rawFrame("a", "multiRead [createContainer flags=7]", frame(1002, jute.OpMultiRead, jute.Marshal(&jute.MultiRequest{Ops: []jute.MultiOp{mOp(jute.OpCreateContainer, "/m39/r", 7, 0)}})))),
		rawFrame("a", "multiRead [create flags=0]", frame(1003, jute.OpMultiRead, jute.Marshal(&jute.MultiRequest{Ops: []jute.MultiOp{mCreate("/m39/r", nil, persistent)}}))),
	)
	// Outside a multi nothing changed: the opcode picks the txn, the flags the mode.
	for _, typ := range []jute.OpCode{jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer} {
		for _, flags := range []int32{0, 1, 2, 3, 4, 5, 6, 7, -1} {
			path := fmt.Sprintf("/m39/top%d_%d", typ, flags)
			steps = append(steps, req("a", typ, &jute.CreateRequest{Path: path, ACL: open, Flags: flags},
				fmt.Sprintf("%v %q flags=%d", typ, path, flags)))
		}
	}
	for _, flags := range []int32{0, 1, 2, 3, 4, 5, 6, 7, -1} {
		steps = append(steps, createTTL("a", fmt.Sprintf("/m39/topttl_%d", flags), flags, hour))
	}
	steps = append(steps,
		differs4026(`list=["/m39/15_1" "/m39/15_30000000008" "/m39/1_1" "/m39/1_30000000003" "/m39/21_1" "/m39/21_30000000018" `+
			`"/m39/top15_1" "/m39/top15_30000000034" "/m39/top1_1" "/m39/top1_30000000029" "/m39/w/s-0000000000"]`,
			ephemerals("a", "/m39")),
		children2("a", "/m39", false))
	return group{name: "multi39-create-types", sessions: []string{"a", "b"}, steps: steps}
}
