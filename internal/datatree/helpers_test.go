package datatree

import (
	"bytes"
	"fmt"
	"hash/adler32"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"unicode/utf16"

	"github.com/zkd-io/zkd/jute"
)

// ---- building and applying txns by hand ----

// applier applies hand-built txns with increasing zxids and times, as a leader would log them.
type applier struct {
	tb      testing.TB
	tr      *Tree
	zxid    int64
	time    int64
	session int64
}

func newApplier(tb testing.TB) *applier {
	tb.Helper()
	tr := New()
	tr.ExtendedTypes = true
	return &applier{tb: tb, tr: tr, time: 1_700_000_000_000, session: 0x1000000abc0000}
}

func (a *applier) hdr(typ jute.OpCode) *jute.TxnHeader {
	a.zxid++
	a.time += 7
	return &jute.TxnHeader{ClientID: a.session, Cxid: int32(a.zxid), Zxid: a.zxid, Time: a.time, Type: typ}
}

func (a *applier) apply(typ jute.OpCode, body jute.Record) Result {
	a.tb.Helper()
	return a.tr.Apply(a.hdr(typ), body)
}

// pcv is what PrepRequestProcessor logs as CreateTxn.parentCVersion: the parent's stored
// cversion + 1.
func (a *applier) pcv(path string) int32 {
	if p := a.tr.Get(Parent(path)); p != nil {
		return p.Stat.Cversion + 1
	}
	return 1
}

func (a *applier) mustOK(r Result) Result {
	a.tb.Helper()
	if r.Err != jute.OK {
		a.tb.Fatalf("apply %v %s: %v", r.Type, r.Path, r.Err)
	}
	return r
}

func (a *applier) create(path, data string) Result {
	a.tb.Helper()
	return a.mustOK(a.apply(jute.OpCreate, &jute.CreateTxn{Path: path, Data: []byte(data), ACL: jute.OpenACLUnsafe, ParentCVersion: a.pcv(path)}))
}

func (a *applier) createEph(path string) Result {
	a.tb.Helper()
	return a.mustOK(a.apply(jute.OpCreate, &jute.CreateTxn{Path: path, Data: []byte{}, ACL: jute.OpenACLUnsafe, Ephemeral: true, ParentCVersion: a.pcv(path)}))
}

func (a *applier) createContainer(path string) Result {
	a.tb.Helper()
	return a.mustOK(a.apply(jute.OpCreateContainer, &jute.CreateContainerTxn{Path: path, Data: []byte{}, ACL: jute.OpenACLUnsafe, ParentCVersion: a.pcv(path)}))
}

func (a *applier) createTTL(path string, ttl int64) Result {
	a.tb.Helper()
	return a.mustOK(a.apply(jute.OpCreateTTL, &jute.CreateTTLTxn{Path: path, Data: []byte{}, ACL: jute.OpenACLUnsafe, ParentCVersion: a.pcv(path), TTL: ttl}))
}

func (a *applier) del(path string) Result {
	a.tb.Helper()
	return a.apply(jute.OpDelete, &jute.DeleteTxn{Path: path})
}

func (a *applier) setData(path, data string) Result {
	a.tb.Helper()
	n := a.tr.Get(path)
	v := int32(1)
	if n != nil {
		v = n.Stat.Version + 1
	}
	return a.apply(jute.OpSetData, &jute.SetDataTxn{Path: path, Data: []byte(data), Version: v})
}

func (a *applier) setACL(path string, acl []jute.ACL) Result {
	a.tb.Helper()
	n := a.tr.Get(path)
	v := int32(1)
	if n != nil {
		v = n.Stat.Aversion + 1
	}
	return a.apply(jute.OpSetACL, &jute.SetACLTxn{Path: path, ACL: acl, Version: v})
}

func (a *applier) stat(path string) jute.Stat {
	a.tb.Helper()
	n := a.tr.Get(path)
	if n == nil {
		a.tb.Fatalf("%s: no node", path)
	}
	return a.tr.StatOf(n)
}

func (a *applier) stored(path string) jute.StatPersisted {
	a.tb.Helper()
	n := a.tr.Get(path)
	if n == nil {
		a.tb.Fatalf("%s: no node", path)
	}
	return n.Stat
}

// sub builds one sub-txn of a MultiTxn.
func sub(typ jute.OpCode, rec jute.Record) jute.Txn {
	return jute.Txn{Type: typ, Data: jute.Marshal(rec)}
}

func errSub(code jute.Code) jute.Txn {
	return sub(jute.OpError, &jute.ErrorTxn{Err: code})
}

// ---- comparing trees ----

// diffTrees lists every observable difference between two trees: node set, data, stored stat,
// ACL list, children, digest and the ephemeral/container/TTL indexes. (ApproximateDataSize has
// its own tests.)
func diffTrees(want, got *Tree) []string {
	var d []string
	add := func(f string, args ...any) {
		if len(d) < 40 {
			d = append(d, fmt.Sprintf(f, args...))
		}
	}
	wn, gn := nodesOf(want), nodesOf(got)
	for _, p := range sortedPaths(want) {
		w, g := wn[p], gn[p]
		if g == nil {
			add("%s: missing", p)
			continue
		}
		if !bytes.Equal(w.Data, g.Data) {
			add("%s: data %q, want %q", p, g.Data, w.Data)
		}
		if w.Stat != g.Stat {
			add("%s: stat %+v, want %+v", p, g.Stat, w.Stat)
		}
		if wa, ga := want.ACL(w.ACL), got.ACL(g.ACL); !slices.Equal(wa, ga) {
			add("%s: acl %v (key %d), want %v (key %d)", p, ga, g.ACL, wa, w.ACL)
		}
		if wc, gc := sorted(w.Children()), sorted(g.Children()); !slices.Equal(wc, gc) {
			add("%s: children %v, want %v", p, gc, wc)
		}
	}
	for _, p := range sortedPaths(got) {
		if wn[p] == nil {
			add("%s: unexpected node", p)
		}
	}
	if want.Digest() != got.Digest() {
		add("digest %#x, want %#x", got.Digest(), want.Digest())
	}
	if w, g := fmt.Sprint(want.EphemeralSessions()), fmt.Sprint(got.EphemeralSessions()); w != g {
		add("ephemeral sessions %s, want %s", g, w)
	}
	for s := range want.EphemeralSessions() {
		if w, g := want.Ephemerals(s), got.Ephemerals(s); !slices.Equal(w, g) {
			add("ephemerals of %#x: %v, want %v", s, g, w)
		}
	}
	if w, g := setKeys(want.containers), setKeys(got.containers); !slices.Equal(w, g) {
		add("containers %v, want %v", g, w)
	}
	if w, g := setKeys(want.ttls), setKeys(got.ttls); !slices.Equal(w, g) {
		add("ttls %v, want %v", g, w)
	}
	return d
}

// nodesOf is every node the tree indexes, by path.
func nodesOf(t *Tree) map[string]*Node {
	m := make(map[string]*Node, t.NodeCount())
	for i := uint32(0); i < t.nrecs; i++ {
		if !t.rd(i).free() {
			n := t.node(i)
			m[t.pathOf(i)] = &n
		}
	}
	return m
}

func sortedPaths(t *Tree) []string {
	out := make([]string, 0, t.NodeCount())
	for p := range nodesOf(t) {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func sorted(s []string) []string { sort.Strings(s); return s }

func setKeys(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func requireEqualTrees(tb testing.TB, want, got *Tree) {
	tb.Helper()
	if d := diffTrees(want, got); len(d) > 0 {
		tb.Fatalf("trees differ:\n  %s", joinLines(d))
	}
}

func joinLines(d []string) string {
	var b bytes.Buffer
	for i, s := range d {
		if i > 0 {
			b.WriteString("\n  ")
		}
		b.WriteString(s)
	}
	return b.String()
}

// ---- the real files ----

func readTestdata(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// logEntry is one record of a txn log file.
type logEntry struct {
	offset int
	txn    []byte
}

// parseLog splits a txn log: a 16-byte FileHeader, then {long checksum, int len, txn, 0x42}
// until a zero length or the end of the data.
func parseLog(tb testing.TB, b []byte) []logEntry {
	tb.Helper()
	d := jute.Decoder{B: b}
	var fh jute.FileHeader
	fh.Decode(&d)
	if fh.Magic != jute.LogMagic || fh.Version != 2 {
		tb.Fatalf("log header %+v", fh)
	}
	var out []logEntry
	for d.Remaining() >= 12 {
		off := d.Off
		sum := d.Long()
		n := d.Int()
		if n == 0 {
			break
		}
		if d.Remaining() < int(n)+1 {
			tb.Fatalf("entry at %#x: truncated", off)
		}
		txn := d.B[d.Off : d.Off+int(n)]
		d.Off += int(n)
		if eor := d.Byte(); eor != 0x42 {
			tb.Fatalf("entry at %#x: end marker %#x", off, eor)
		}
		if got := int64(adler32.Checksum(txn)); got != sum {
			tb.Fatalf("entry at %#x: checksum %#x, file says %#x", off, got, sum)
		}
		out = append(out, logEntry{off, txn})
	}
	if d.Err() != nil {
		tb.Fatal(d.Err())
	}
	return out
}

// snapFile is a parsed snapshot file.
type snapFile struct {
	sessions      map[int64]int32
	acls          map[int64][]jute.ACL
	nodes         []SnapNode
	zxid          int64
	digestVersion int32
	digest        int64
}

func parseSnapshot(tb testing.TB, b []byte) *snapFile {
	tb.Helper()
	d := jute.Decoder{B: b}
	var fh jute.FileHeader
	fh.Decode(&d)
	if fh.Magic != jute.SnapMagic || fh.Version != 2 {
		tb.Fatalf("snapshot header %+v", fh)
	}
	s := &snapFile{sessions: map[int64]int32{}, acls: map[int64][]jute.ACL{}}
	for n := d.Int(); n > 0; n-- {
		id := d.Long()
		s.sessions[id] = d.Int()
	}
	for n := d.Int(); n > 0; n-- {
		k := d.Long()
		s.acls[k] = jute.DecodeACLs(&d)
	}
	for {
		p := d.String()
		if d.Err() != nil {
			tb.Fatal(d.Err())
		}
		if p == "/" {
			break
		}
		sn := SnapNode{Path: p}
		sn.Data = d.Buffer()
		sn.ACLKey = d.Long()
		sn.Stat.Decode(&d)
		s.nodes = append(s.nodes, sn)
	}
	seal := func() {
		want := int64(adler32.Checksum(b[:d.Off]))
		if got := d.Long(); got != want {
			tb.Fatalf("seal at %#x: %#x, want %#x", d.Off-8, got, want)
		}
		if t := d.String(); t != "/" {
			tb.Fatalf("seal terminator %q", t)
		}
	}
	seal()
	s.zxid = d.Long()
	s.digestVersion = d.Int()
	s.digest = d.Long()
	seal()
	if d.Err() != nil {
		tb.Fatal(d.Err())
	}
	if d.Remaining() != 0 {
		tb.Fatalf("%d bytes after the digest seal", d.Remaining())
	}
	return s
}

// load builds a tree from a parsed snapshot through the Loader.
func (s *snapFile) load(tb testing.TB, extended bool) *Tree {
	tb.Helper()
	l := NewLoader()
	for k, v := range s.acls {
		l.ACL(k, v)
	}
	for _, n := range s.nodes {
		if err := l.Node(n); err != nil {
			tb.Fatal(err)
		}
	}
	t, err := l.Finish(extended, s.zxid)
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

func snapPath(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// checkInvariants verifies the indexes a tree keeps against its nodes: the digest, the
// parent/child links, the ephemeral/container/TTL sets (classified as EphemeralType.get does)
// and the ACL reference counts.
func checkInvariants(tb testing.TB, t *Tree) {
	tb.Helper()
	var sum uint64
	nodes := nodesOf(t)
	for p, n := range nodes {
		d := uint64(t.nodeDigest(n.i))
		sum += d
		if uint64(n.Digest()) != d {
			tb.Errorf("%s: digest of the node as read %#x, of the record %#x", p, n.Digest(), d)
		}
		if p != "/" {
			if par := nodes[Parent(p)]; par == nil || t.rd(n.i).parent != par.i {
				tb.Errorf("%s: not linked from its parent", p)
			}
		}
		seen := map[string]bool{}
		for i, c := range n.Children() {
			if seen[c] {
				tb.Errorf("%s: child %q listed twice", p, c)
			}
			seen[c] = true
			if cn := nodes[Join(p, c)]; cn == nil {
				tb.Errorf("%s: child %q has no node", p, c)
			} else if pos := t.rd(cn.i).pos; int(pos) != i {
				tb.Errorf("%s: child %q is at %d of the list, its node says %d", p, c, i, pos)
			}
		}
		if t.rd(n.i).kids != 0 && n.NumChildren() == 0 {
			tb.Errorf("%s: empty child list kept", p)
		}
	}
	if uint64(t.Digest()) != sum {
		tb.Errorf("Digest() = %#x, recomputed %#x", t.Digest(), int64(sum))
	}
	eph := map[int64][]string{}
	var conts, ttls []string
	for p, n := range nodes {
		o := n.Stat.EphemeralOwner
		switch {
		case o == 0:
		case t.ExtendedTypes && o&ttlMask == ttlMask:
			ttls = append(ttls, p)
		case o == ContainerOwner:
			conts = append(conts, p)
		default:
			eph[o] = append(eph[o], p)
		}
	}
	sort.Strings(conts)
	sort.Strings(ttls)
	if got := setKeys(t.containers); !slices.Equal(got, conts) {
		tb.Errorf("containers %v, nodes say %v", got, conts)
	}
	if got := setKeys(t.ttls); !slices.Equal(got, ttls) {
		tb.Errorf("ttls %v, nodes say %v", got, ttls)
	}
	total := 0
	for s, ps := range eph {
		total += len(ps)
		if got := t.Ephemerals(s); !slices.Equal(got, sorted(ps)) {
			tb.Errorf("Ephemerals(%#x) = %v, nodes say %v", s, got, ps)
		}
	}
	for s, n := range t.EphemeralSessions() {
		if n != len(eph[s]) {
			tb.Errorf("EphemeralSessions()[%#x] = %d, nodes say %d", s, n, len(eph[s]))
		}
	}
	if t.EphemeralCount() != total {
		tb.Errorf("EphemeralCount() = %d, nodes say %d", t.EphemeralCount(), total)
	}
	refs := map[int64]int64{}
	for p, n := range nodes {
		if n.ACL == OpenACLKey {
			continue
		}
		refs[n.ACL]++
		if _, ok := t.acls.byKey[n.ACL]; !ok {
			tb.Errorf("%s: ACL key %d not in the table", p, n.ACL)
		}
	}
	if t.acls.pinned == 0 {
		for k := range t.acls.byKey {
			if refs[k] == 0 {
				tb.Errorf("ACL key %d unused but kept", k)
			} else if t.acls.refs[k] != refs[k] {
				tb.Errorf("ACL key %d: %d references counted, %d nodes", k, t.acls.refs[k], refs[k])
			}
		}
	}
	for k, v := range t.acls.byKey {
		if t.acls.byValue[aclString(v)] != k {
			tb.Errorf("ACL key %d: value index says %d", k, t.acls.byValue[aclString(v)])
		}
	}
	if len(t.acls.byValue) != len(t.acls.byKey) {
		tb.Errorf("ACL table: %d values, %d keys", len(t.acls.byValue), len(t.acls.byKey))
	}
}

// zkDataSize is ZooKeeper's approximateDataSize(): path length in UTF-16 units plus data length
// over every map entry, where the root appears twice ("" and "/").
func zkDataSize(t *Tree) int64 {
	var s int64
	for p, n := range nodesOf(t) {
		if p == "/" {
			s += 1 + 2*int64(len(n.Data))
			continue
		}
		s += int64(len(utf16.Encode([]rune(p)))) + int64(len(n.Data))
	}
	return s
}
