package difffuzz

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/zkd-io/zkd/jute"
)

// Users whose digest ACLs and credentials programs use.
var users = []string{"alice", "bob"}

// Password is every user's password; SuperPassword the super user's (the servers must be
// configured with SuperDigest).
const (
	Password      = "pw"
	SuperPassword = "s3cret"
)

// DigestID is the id of a digest ACL: user:BASE64(SHA1(user:password)).
func DigestID(user, passwd string) string {
	sum := sha1.Sum([]byte(user + ":" + passwd))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// SuperDigest is the value of zookeeper.DigestAuthenticationProvider.superDigest both
// servers need.
var SuperDigest = DigestID("super", SuperPassword)

// GenOptions shape generated programs.
type GenOptions struct {
	Ops      int // steps per program
	Sessions int // 2 or 3
	// KeeperOps mixes in the keeper-ops extension's ops (keeperops.go): such programs run
	// on zkd alone.
	KeeperOps bool
}

// gen is the generator's state: a rough model of the tree, good enough to aim most
// requests at nodes that exist without ever deciding what a server should answer.
type gen struct {
	r     *rand.Rand
	names []string
	paths []string       // paths creates were aimed at (they may or may not exist)
	kids  map[string]int // parent -> creates and deletes aimed under it (a sequence guess)
	steps []Step
	// keeper: GenOptions.KeeperOps.
	keeper bool
	// watchers counts resumeStep's pairs of watching sessions, which it names by.
	watchers int
}

// Generate returns the program of seed.
func Generate(seed int64, o GenOptions) *Program {
	g := &gen{r: rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15)), kids: map[string]int{}, keeper: o.KeeperOps}
	n := o.Sessions
	if n < 1 {
		n = 2 + g.r.IntN(2)
	}
	g.names = []string{"a", "b", "c"}[:min(n, 3)]
	p := &Program{Seed: seed, Sessions: g.names}
	g.add(Step{Sess: "a", Kind: Request, Op: jute.OpCreate,
		Body: jute.Marshal(&jute.CreateRequest{Path: Root, Data: []byte("root"), ACL: jute.OpenACLUnsafe})})
	g.paths = append(g.paths, Root)
	for len(g.steps) < o.Ops {
		g.step()
	}
	p.Steps = g.steps[:min(len(g.steps), max(o.Ops, 1))]
	return p
}

func (g *gen) add(s Step) { g.steps = append(g.steps, s) }

func (g *gen) pct(n int) bool { return g.r.IntN(100) < n }

func (g *gen) sess() string { return g.names[g.r.IntN(len(g.names))] }

// segments are node names: plain, unicode (2- and 4-byte UTF-8), a space, a sequence
// prefix.
var segments = []string{"a", "b", "c", "d", "é", "x y", "\U0001F600", "n-", "0", "ctr", "ttl"}

// oddPaths are malformed paths and system nodes.
var oddPaths = []string{"", "fz", Root + "/", Root + "//a", Root + "/.", Root + "/..", Root + "/a/../b",
	Root + "/a\x00b", Root + "/\x01", Root + "/\ufff0", "/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"}

// path picks a path: mostly one creates were aimed at, else a new one under Root, now and
// then a malformed one or a system node.
func (g *gen) path() string {
	switch x := g.r.IntN(100); {
	case x < 4:
		return oddPaths[g.r.IntN(len(oddPaths))]
	case x < 9:
		return Root
	case x < 70 && len(g.paths) > 0:
		return g.paths[g.r.IntN(len(g.paths))]
	}
	return g.newPath()
}

// newPath is a path under Root at depth 1 to 3, usually under a parent creates were aimed at.
func (g *gen) newPath() string {
	parent := Root
	if g.pct(60) {
		var under []string
		for _, p := range g.paths {
			if len(p) > len(Root) && depth(p) < 4 {
				under = append(under, p)
			}
		}
		if len(under) > 0 {
			parent = under[g.r.IntN(len(under))]
		}
	}
	return parent + "/" + segments[g.r.IntN(len(segments))]
}

func depth(p string) int {
	n := 0
	for _, c := range p {
		if c == '/' {
			n++
		}
	}
	return n
}

// readPath also aims at the built-in nodes, which only reads may touch: the fuzzer does not
// write to /zookeeper (quotas are issue 14's).
func (g *gen) readPath() string {
	if g.pct(5) {
		return []string{"/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"}[g.r.IntN(4)]
	}
	return g.path()
}

// writePath is a path for a write: never under /zookeeper.
func (g *gen) writePath() string {
	for range 8 {
		p := g.path()
		if !isSystem(p) {
			return p
		}
	}
	return g.newPath()
}

// isSystem reports the root and the nodes under /zookeeper: the fuzzer does not write them
// (root ACLs and data would outlive the program; quotas are issue 14's).
func isSystem(p string) bool {
	return p == "/" || p == "/zookeeper" || strings.HasPrefix(p, "/zookeeper/")
}

func (g *gen) remember(path string, flags int32) {
	parent := path
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			parent = path[:i]
			break
		}
	}
	g.kids[parent]++
	if flags == jute.FlagPersistentSequential || flags == jute.FlagEphemeralSequential || flags == jute.FlagPersistentSequentialTTL {
		// The name the server gives is the parent's cversion: guess near the count of
		// creates and deletes aimed under the parent.
		path = fmt.Sprintf("%s%010d", path, max(0, g.kids[parent]-1-g.r.IntN(2)))
	}
	if !slices.Contains(g.paths, path) && len(path) > len(Root) {
		g.paths = append(g.paths, path)
	}
}

func (g *gen) data() []byte {
	switch x := g.r.IntN(1000); {
	case x < 100:
		return nil
	case x < 200:
		return []byte{}
	case x < 800:
		return fmt.Appendf(nil, "d%d", g.r.IntN(1000))
	case x < 900:
		b := make([]byte, g.r.IntN(40))
		for i := range b {
			b[i] = byte(g.r.IntN(256))
		}
		return b
	case x < 975:
		return make([]byte, 1000+g.r.IntN(8000))
	case x < 995:
		return make([]byte, 100_000+g.r.IntN(400_000))
	}
	// Near jute.maxbuffer (1048575): the frame limit and the data limit.
	return make([]byte, 1048575-200+g.r.IntN(400))
}

func (g *gen) version() int32 {
	switch x := g.r.IntN(100); {
	case x < 55:
		return -1
	case x < 90:
		return int32(g.r.IntN(3))
	case x < 95:
		return -2
	}
	return 1 << 30
}

func (g *gen) acl() []jute.ACL {
	world := func(p int32) jute.ACL { return jute.ACL{Perms: p, ID: jute.WorldAnyone} }
	digest := func(u string, p int32) jute.ACL {
		return jute.ACL{Perms: p, ID: jute.ID{Scheme: "digest", ID: DigestID(u, Password)}}
	}
	switch x := g.r.IntN(1000); {
	case x < 450:
		return jute.OpenACLUnsafe
	case x < 520:
		return jute.ReadACLUnsafe
	case x < 590:
		return []jute.ACL{world(int32(g.r.IntN(32)))}
	case x < 660:
		return jute.CreatorAllACL
	case x < 730:
		return []jute.ACL{digest("alice", jute.PermAll)}
	case x < 790:
		return []jute.ACL{digest("bob", jute.PermRead|jute.PermWrite), world(jute.PermRead)}
	case x < 830:
		return []jute.ACL{digest("alice", jute.PermAll), digest("bob", int32(g.r.IntN(32)))}
	case x < 880:
		return []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "ip", ID: "127.0.0.1"}}}
	case x < 900:
		return []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "ip", ID: "127.0.0.0/8"}}, world(jute.PermRead)}
	case x < 910:
		return []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "ip", ID: []string{"10.1.2.3", "300.1.1.1", "1.2.3.4/33", "abc"}[g.r.IntN(4)]}}}
	case x < 915:
		return []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "ip", ID: "::1"}}} // row ZOOKEEPER-4240
	case x < 935:
		return []jute.ACL{}
	case x < 950:
		return nil
	case x < 965:
		return []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "foo", ID: "bar"}}}
	case x < 980:
		return []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "digest", ID: "alice"}}}
	case x < 990:
		return []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "world", ID: "someone"}}}
	}
	return []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "auth", ID: "alice"}}, world(jute.PermRead)}
}

func (g *gen) flags() int32 {
	switch x := g.r.IntN(100); {
	case x < 45:
		return jute.FlagPersistent
	case x < 60:
		return jute.FlagEphemeral
	case x < 72:
		return jute.FlagPersistentSequential
	case x < 80:
		return jute.FlagEphemeralSequential
	case x < 88:
		return jute.FlagContainer
	case x < 93:
		return jute.FlagPersistentWithTTL
	case x < 97:
		return jute.FlagPersistentSequentialTTL
	}
	return []int32{7, -1, 100}[g.r.IntN(3)]
}

func (g *gen) ttl() int64 {
	switch x := g.r.IntN(100); {
	case x < 80:
		return 3600_000 + int64(g.r.IntN(1000))
	case x < 87:
		return 0
	case x < 92:
		return -1
	case x < 96:
		return jute.MaxTTL
	}
	return jute.MaxTTL + 1
}

// createOp returns a create of one of the four create opcodes.
func (g *gen) createOp() (jute.OpCode, jute.Record) {
	path, data, acl, flags := g.writePath(), g.data(), g.acl(), g.flags()
	if g.pct(60) && !isSystem(path) {
		path = g.newPath()
	}
	op := []jute.OpCode{jute.OpCreate, jute.OpCreate, jute.OpCreate2, jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL}[g.r.IntN(6)]
	switch op {
	case jute.OpCreateContainer:
		if g.pct(85) {
			flags = jute.FlagContainer
		}
	case jute.OpCreateTTL:
		if g.pct(80) {
			flags = []int32{jute.FlagPersistentWithTTL, jute.FlagPersistentSequentialTTL}[g.r.IntN(2)]
		}
		ttl := g.ttl()
		if m := flags; ttl < 0 && m != jute.FlagPersistentWithTTL && m != jute.FlagPersistentSequentialTTL {
			// A createTTL whose flags are not a TTL mode, with a negative ttl, passes
			// ZooKeeper's checks and then kills it (3.8.0 to 3.9.4: EphemeralType.TTL.
			// toEphemeralOwner throws on the commit path; row zkd-createttl-mode).
			ttl = -ttl
		}
		g.remember(path, flags)
		return op, &jute.CreateTTLRequest{Path: path, Data: data, ACL: acl, Flags: flags, TTL: ttl}
	}
	g.remember(path, flags)
	return op, &jute.CreateRequest{Path: path, Data: data, ACL: acl, Flags: flags}
}

func (g *gen) request(sess string, op jute.OpCode, rec jute.Record) {
	st := Step{Sess: sess, Kind: Request, Op: op}
	if rec != nil {
		st.Body = jute.Marshal(rec)
	}
	switch op {
	case jute.OpAuth:
		st.Xid = jute.XidAuth
	case jute.OpSetWatches, jute.OpSetWatches2:
		st.Xid = jute.XidSetWatches
	case jute.OpPing:
		st.Xid = jute.XidPing
	}
	g.add(st)
}

// multiOps returns 0 to 5 ops for a multi, or for a multiRead.
func (g *gen) multiOps(read bool) []jute.MultiOp {
	ops := make([]jute.MultiOp, g.r.IntN(6))
	for i := range ops {
		if read {
			if g.pct(50) {
				ops[i] = jute.MultiOp{Type: jute.OpGetData, Body: &jute.PathWatchRequest{Path: g.readPath()}}
			} else {
				ops[i] = jute.MultiOp{Type: jute.OpGetChildren, Body: &jute.PathWatchRequest{Path: g.readPath()}}
			}
			continue
		}
		switch g.r.IntN(4) {
		case 0:
			op, rec := g.createOp()
			ops[i] = jute.MultiOp{Type: op, Body: rec}
		case 1:
			path := g.writePath()
			g.remember(path, 0)
			ops[i] = jute.MultiOp{Type: jute.OpDelete, Body: &jute.PathVersionRequest{Path: path, Version: g.version()}}
		case 2:
			ops[i] = jute.MultiOp{Type: jute.OpSetData, Body: &jute.SetDataRequest{Path: g.writePath(), Data: g.data(), Version: g.version()}}
		case 3:
			ops[i] = jute.MultiOp{Type: jute.OpCheck, Body: &jute.PathVersionRequest{Path: g.path(), Version: g.version()}}
		}
	}
	return ops
}

func (g *gen) watchList() []string {
	var v []string
	for range g.r.IntN(3) {
		v = append(v, g.readPath())
	}
	return v
}

// step appends one step (sometimes two).
func (g *gen) step() {
	s := g.sess()
	if g.keeper && g.pct(25) {
		g.keeperStep(s)
		return
	}
	switch x := g.r.IntN(1000); {
	case x < 200:
		op, rec := g.createOp()
		g.request(s, op, rec)
	case x < 270:
		path := g.writePath()
		g.remember(path, 0)
		g.request(s, jute.OpDelete, &jute.PathVersionRequest{Path: path, Version: g.version()})
	case x < 360:
		g.request(s, jute.OpSetData, &jute.SetDataRequest{Path: g.writePath(), Data: g.data(), Version: g.version()})
	case x < 430:
		g.request(s, jute.OpGetData, &jute.PathWatchRequest{Path: g.readPath(), Watch: g.pct(50)})
	case x < 480:
		g.request(s, jute.OpExists, &jute.PathWatchRequest{Path: g.readPath(), Watch: g.pct(50)})
	case x < 525:
		g.request(s, jute.OpGetChildren, &jute.PathWatchRequest{Path: g.readPath(), Watch: g.pct(50)})
	case x < 570:
		g.request(s, jute.OpGetChildren2, &jute.PathWatchRequest{Path: g.readPath(), Watch: g.pct(50)})
	case x < 595:
		g.request(s, jute.OpGetACL, &jute.PathRequest{Path: g.readPath()})
	case x < 630:
		g.request(s, jute.OpSetACL, &jute.SetACLRequest{Path: g.writePath(), ACL: g.acl(), Version: g.version()})
	case x < 645:
		g.request(s, jute.OpSync, &jute.PathRequest{Path: g.readPath()})
	case x < 650:
		g.request(s, jute.OpPing, nil)
	case x < 720:
		g.request(s, jute.OpMulti, &jute.MultiRequest{Ops: g.multiOps(false)})
	case x < 745:
		g.request(s, jute.OpMultiRead, &jute.MultiRequest{Ops: g.multiOps(true)})
	case x < 775:
		g.auth(s)
	case x < 810:
		mode := int32(g.r.IntN(2))
		if g.pct(5) {
			mode = []int32{2, -1}[g.r.IntN(2)]
		}
		g.request(s, jute.OpAddWatch, &jute.AddWatchRequest{Path: g.readPath(), Mode: mode})
	case x < 840:
		g.request(s, jute.OpRemoveWatches, &jute.WatchesRequest{Path: g.readPath(), Type: g.watcherType()})
	case x < 855:
		g.request(s, jute.OpCheckWatches, &jute.WatchesRequest{Path: g.readPath(), Type: g.watcherType()})
	case x < 875:
		v2 := g.pct(60)
		sw := &jute.SetWatches{RelativeZxid: int64(g.r.IntN(3)), V2: v2,
			DataWatches: g.watchList(), ExistWatches: g.watchList(), ChildWatches: g.watchList()}
		op := jute.OpSetWatches
		if v2 {
			op = jute.OpSetWatches2
			sw.PersistentWatches, sw.PersistentRecursiveWatches = g.watchList(), g.watchList()
		}
		g.request(s, op, sw)
	case x < 890:
		prefix := g.readPath()
		if g.pct(30) {
			prefix = prefix[:g.r.IntN(len(prefix)+1)]
		}
		g.request(s, jute.OpGetEphemerals, &jute.PathRequest{Path: prefix})
	case x < 905:
		g.request(s, jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: g.readPath()})
	case x < 915:
		g.request(s, jute.OpWhoAmI, nil)
	case x < 919:
		g.request(s, jute.OpSASL, &jute.SASLToken{Token: g.data()})
	case x < 923:
		g.request(s, jute.OpReconfig, &jute.ReconfigRequest{JoiningServers: jute.Str("server.9=127.0.0.1:2888:3888"), CurConfigID: -1})
	case x < 933:
		g.request(s, jute.OpCloseSession, nil)
		if g.pct(70) {
			g.add(Step{Sess: s, Kind: Open})
		}
	case x < 943:
		g.add(Step{Sess: s, Kind: Open})
	case x < 958:
		g.add(Step{Sess: s, Kind: Reconnect})
	case x < 968:
		g.add(Step{Sess: s, Kind: Drop})
		if g.pct(80) {
			g.add(Step{Sess: s, Kind: Reconnect})
		}
	case x < 980:
		g.batch(s)
	case x < 985:
		g.quota(s)
	default:
		g.raw(s)
		if g.pct(70) {
			g.add(Step{Sess: s, Kind: Reconnect})
		}
	}
}

func (g *gen) watcherType() jute.WatcherType {
	if g.pct(90) {
		return jute.WatcherType(1 + g.r.IntN(3))
	}
	return jute.WatcherType([]int32{0, 4, 5, 6, -1}[g.r.IntN(5)])
}

func (g *gen) auth(s string) {
	scheme, cred := "digest", users[g.r.IntN(len(users))]+":"+Password
	switch x := g.r.IntN(100); {
	case x < 70:
	case x < 76:
		cred = "super:" + SuperPassword
	case x < 82:
		cred = "alice:wrong"
	case x < 86:
		cred = "nocolon"
	case x < 90:
		scheme, cred = "foo", "bar"
	case x < 94:
		scheme, cred = "ip", "127.0.0.1"
	case x < 97:
		scheme, cred = "world", "anyone"
	default:
		scheme, cred = "", ""
	}
	g.request(s, jute.OpAuth, &jute.AuthPacket{Scheme: scheme, Auth: []byte(cred)})
}

// rawOps are opcodes raw frames may carry beyond the defined client requests: undefined
// ones and the internal ones. Not check (13): ZooKeeper 3.8.0 logs a txn it cannot read
// back (row ZOOKEEPER-2623), which would end the reference server at its next start. Not
// createSession (-10): ZooKeeper makes a session of it that nobody closes, whose expiry
// later takes a zxid in the middle of another program (row zkd-internal-ops).
var rawOps = []jute.OpCode{10, 23, 50, 99, 108, 1000, -3, -12, jute.OpDeleteContainer,
	jute.OpNotification, jute.OpError}

// raw appends a frame no client library would send: a well-formed request, changed.
func (g *gen) raw(s string) {
	// A well-formed request to start from.
	for g.step(); g.steps[len(g.steps)-1].Kind != Request; g.step() {
		if len(g.steps) > 1<<20 {
			panic("difffuzz: no request generated")
		}
	}
	base := g.steps[len(g.steps)-1]
	g.steps = g.steps[:len(g.steps)-1]
	xid := base.Xid
	if xid == 0 {
		xid = 1_000_000 + int32(g.r.IntN(1000))
	}
	op, body := base.Op, slices.Clone(base.Body)
	wire := false
	switch g.r.IntN(9) {
	case 0: // a truncated body
		if len(body) > 0 {
			body = body[:g.r.IntN(len(body))]
		}
	case 1: // trailing bytes
		for range 1 + g.r.IntN(8) {
			body = append(body, byte(g.r.IntN(256)))
		}
	case 2: // the first field (a path for most requests) as null, negative or huge
		if len(body) >= 4 {
			v := []int32{-1, -2, 1 << 30, 0x7fffffff}[g.r.IntN(4)]
			binary.BigEndian.PutUint32(body, uint32(v))
		}
	case 3: // an opcode with no client request
		op = rawOps[g.r.IntN(len(rawOps))]
	case 4: // the header alone
		body = nil
	case 5: // a reserved xid on an ordinary request
		xid = []int32{0, jute.XidAuth, jute.XidSetWatches, -3, 1 << 31 / -2}[g.r.IntN(5)]
	case 6: // a random byte changed
		if len(body) > 0 {
			body[g.r.IntN(len(body))] = byte(g.r.IntN(256))
		}
	case 7: // a frame length no server accepts, or an empty frame
		wire = true
		l := []int32{-1, 0, 1048576 + 1024 + 10, 1 << 30}[g.r.IntN(4)]
		b := binary.BigEndian.AppendUint32(nil, uint32(l))
		if l == 0 {
			g.add(Step{Sess: s, Kind: Raw, RawWire: true, Body: b})
			return
		}
		g.add(Step{Sess: s, Kind: Raw, RawWire: true, Body: append(b, request(xid, op, body)...)})
		return
	case 8: // a header shorter than 8 bytes
		g.add(Step{Sess: s, Kind: Raw, Body: request(xid, op, nil)[:g.r.IntN(8)]})
		return
	}
	if xid == jute.XidPing && op != jute.OpPing || xid == jute.XidNotification {
		// The runner tells its own pong and notifications by these xids.
		xid = 1_000_000
	}
	g.add(Step{Sess: s, Kind: Raw, RawWire: wire, Body: request(xid, op, body)})
}

// batch turns the next 2 to 6 requests of one session into one batch: pipelined, as the
// clients that keep many requests outstanding send them.
func (g *gen) batch(s string) {
	var body []byte
	xid := int32(2_000_000 + g.r.IntN(1_000_000))
	for n := 2 + g.r.IntN(5); n > 0; {
		mark := len(g.steps)
		g.step()
		added := g.steps[mark:]
		g.steps = g.steps[:mark]
		if len(added) != 1 || added[0].Kind != Request {
			continue
		}
		if !batchable(&added[0]) {
			continue
		}
		xid++
		f := request(xid, added[0].Op, added[0].Body)
		body = jute.AppendFrame(body, f)
		n--
	}
	g.add(Step{Sess: s, Kind: Batch, Body: body})
}

// batchable reports a request a batch may hold: not auth, sasl, setWatches, ping or a close,
// whose replies are not ordinary, and nothing a row of the version table may explain (the
// acceptances look at single requests): no exists (ZOOKEEPER-2590), watch requests
// (-4466), multi (-4026), IPv6 ip ACL (-4240) or setACL.
func batchable(st *Step) bool {
	switch st.Op {
	case jute.OpAuth, jute.OpSASL, jute.OpSetWatches, jute.OpSetWatches2, jute.OpPing, jute.OpCloseSession,
		jute.OpExists, jute.OpAddWatch, jute.OpRemoveWatches, jute.OpCheckWatches, jute.OpMulti,
		jute.OpSetACL: // a request prepared behind a setACL sees ZooKeeper's old ACL (row zkd-setacl-outstanding)
		return false
	}
	rec, ok := st.Decode()
	if !ok {
		return false
	}
	switch r := rec.(type) {
	case *jute.PathWatchRequest:
		return !r.Watch
	case *jute.CreateRequest:
		return !ipv6ACL(r.ACL)
	case *jute.CreateTTLRequest:
		return !ipv6ACL(r.ACL)
	}
	return true
}

// quota sets a quota on a path under Root as zkCli's setquota does (the /zookeeper/quota
// parents, the limits node, a stats node the server recounts), or reads a stats node.
// Servers run with zookeeper.enforceQuota, so hard limits refuse writes.
func (g *gen) quota(s string) {
	var under []string
	for _, p := range g.paths {
		if depth(p) <= 3 {
			under = append(under, p)
		}
	}
	path := Root
	if len(under) > 0 && g.pct(50) {
		path = under[g.r.IntN(len(under))]
	}
	q := quotaRoot + path
	if g.pct(40) {
		g.request(s, jute.OpGetData, &jute.PathWatchRequest{Path: q + "/zookeeper_stats", Watch: g.pct(30)})
		return
	}
	limits := []string{
		fmt.Sprintf("count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=%d", 1+g.r.IntN(6)),
		fmt.Sprintf("count=-1,bytes=-1=;byteHardLimit=%d;countHardLimit=-1", g.r.IntN(40)),
		fmt.Sprintf("count=%d,bytes=-1", 1+g.r.IntN(5)),
		fmt.Sprintf("count=-1,bytes=%d", g.r.IntN(30)),
	}[g.r.IntN(4)]
	parent := quotaRoot
	for _, c := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		parent += "/" + c
		g.request(s, jute.OpCreate, &jute.CreateRequest{Path: parent, ACL: jute.OpenACLUnsafe})
	}
	g.request(s, jute.OpCreate, &jute.CreateRequest{Path: q + "/zookeeper_limits", Data: []byte(limits), ACL: jute.OpenACLUnsafe})
	g.request(s, jute.OpCreate, &jute.CreateRequest{Path: q + "/zookeeper_stats", Data: []byte("count=0,bytes=0"), ACL: jute.OpenACLUnsafe})
	g.request(s, jute.OpGetData, &jute.PathWatchRequest{Path: q + "/zookeeper_stats"})
}
