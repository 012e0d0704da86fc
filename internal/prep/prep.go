// Package prep turns client write requests into idempotent transactions, as ZooKeeper's
// PrepRequestProcessor does: it validates paths, checks ACLs and versions, picks sequential
// names, and decides every value the txn carries, so applying the txn needs no decisions.
// Writes are pipelined: a request is prepared before earlier txns are durable and applied,
// so prep keeps an overlay of outstanding changes on top of the tree. It is a pure state
// machine; the owner of the tree calls it from one goroutine.
package prep

import (
	"errors"
	"fmt"

	"github.com/zkd-io/zkd/internal/auth"
	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/jute"
)

// record is ZooKeeper's ChangeRecord: what prep believes about a path once every
// outstanding txn is applied. exists=false marks a pending delete.
type record struct {
	zxid       int64
	exists     bool
	stat       jute.StatPersisted
	childCount int
	acl        []jute.ACL
	dataLen    int // ChangeRecord.data's length: what a setData's quota check subtracts
	// data is the node's data once the txn is applied (shared, never changed in place),
	// and treeOwner its ephemeralOwner as the tree will hold it: the pending stat's can
	// differ for a create whose opcode and flags disagree (see create). Both go into the
	// node's digest.
	data      []byte
	treeOwner int64
	// digest is the node's share of the tree digest once the txn is applied, set when the
	// txn commits into the overlay (newDigest); only overlay records' is read (oldDigest),
	// so a record read from the tree does not hash the node for it.
	digest uint32
}

type pending struct {
	zxid int64
	path string
}

// txnDelta is what one prepared txn adds to the tree digest (mod 2^64).
type txnDelta struct {
	zxid  int64
	delta uint64
}

// Preparer holds the overlay of outstanding changes.
type Preparer struct {
	Tree *datatree.Tree
	// ExtendedTypes allows TTL nodes (zookeeper.extendedTypesEnabled).
	ExtendedTypes bool
	// SkipACL disables ACL checks (zookeeper.skipACL).
	SkipACL bool
	// Providers is the configured authentication providers (sasl, x509).
	Providers auth.Providers
	// EnforceQuota checks creates and setData against the quotas under /zookeeper/quota
	// (zookeeper.enforceQuota): a hard limit refuses the write with QUOTAEXCEEDED.
	EnforceQuota bool
	// OnQuotaExceeded, when set, is told of every limit a checked write passes, soft or
	// hard (ZooKeeper logs each; the refused ones count in its metrics).
	OnQuotaExceeded func(datatree.QuotaExceeded)
	// Reconfig computes the configuration a reconfig request asks for, with the checks
	// PrepRequestProcessor makes before the ACL's (a reconfig in progress, the version,
	// the request's form, a synced quorum of the new configuration): its text, or the
	// error code. zxid is the reconfig's, the new configuration's version. nil means
	// reconfig is disabled (RECONFIGDISABLED, after taking a zxid).
	Reconfig func(req *jute.ReconfigRequest, zxid int64) ([]byte, jute.Code)
	// NoDigest leaves the TxnDigest off every txn (zookeeper.digest.enabled=false). By
	// default each txn but an error txn carries the tree digest it leaves, computed as
	// ZooKeeper's PrepRequestProcessor does before the txn is applied (precalculateDigest):
	// the tree's digest plus what each outstanding txn changes, node by node.
	NoDigest bool
	// MaxTxnBytes is the largest txn a member accepts (jute.maxbuffer); a removeRecursive
	// whose txn would be larger fails. 0: no limit.
	MaxTxnBytes int
	// Wide serves the 64-bit sequential create modes (the wide extension,
	// jute.FlagPersistentSequential64): without it their flags are refused as ZooKeeper
	// refuses any flag it does not know.
	Wide bool

	overlay map[string]*record
	order   []pending // from head on: prepared txns' changes, oldest first
	head    int
	// deltas (from deltaHead on) are the digest changes of the prepared txns not yet
	// applied, and pendingDelta their sum: the digest after them all is the tree's plus it.
	deltas       []txnDelta
	deltaHead    int
	pendingDelta uint64
	scratch      []byte // NodeDigest's buffer
	// st is the state of the txn being prepared, reused from one to the next: nothing
	// keeps it past the call that prepares the txn (commit copies its changes out).
	st txnState
}

// New returns a preparer over tree.
func New(tree *datatree.Tree) *Preparer {
	return &Preparer{Tree: tree, overlay: make(map[string]*record)}
}

// Request is a client write as prep sees it. Body is nil when the request could not be
// decoded; AuthIDs are the connection's identities.
type Request struct {
	SessionID int64
	Cxid      int32
	Type      jute.OpCode
	Body      jute.Record
	AuthIDs   []jute.ID
	// EphemeralErr, when set, fails every ephemeral create of the request with it, before
	// any other check but the create mode's and TTL's (ZooKeeper's validateCreateRequest):
	// the session is one the quorum does not know, a local session that may not be
	// upgraded or another member's.
	EphemeralErr jute.Code
}

// IsWrite reports whether a client request with this opcode goes through prep and the log
// (jute's opcode table: a write a client may send).
func IsWrite(op jute.OpCode) bool {
	r := jute.LookupOp(op)
	return r != nil && r.Write && !r.Internal
}

// Pending reports whether any txn is prepared but not yet applied.
func (p *Preparer) Pending() int { return len(p.order) - p.head }

// Applied tells prep that every txn up to zxid is now in the tree.
func (p *Preparer) Applied(zxid int64) {
	i := p.head
	for ; i < len(p.order) && p.order[i].zxid <= zxid; i++ {
		pe := p.order[i]
		if r := p.overlay[pe.path]; r != nil && r.zxid == pe.zxid {
			delete(p.overlay, pe.path)
		}
		p.order[i] = pending{}
	}
	p.head = i
	j := p.deltaHead
	for ; j < len(p.deltas) && p.deltas[j].zxid <= zxid; j++ {
		p.pendingDelta -= p.deltas[j].delta
	}
	p.deltaHead = j
	if j == len(p.deltas) {
		p.deltas, p.deltaHead = p.deltas[:0], 0
	} else if j >= 1024 && 2*j >= len(p.deltas) {
		n := copy(p.deltas, p.deltas[j:])
		p.deltas, p.deltaHead = p.deltas[:n], 0
	}
	// A queue, not a shift per call: applied entries are dropped in bulk once they are
	// most of the slice.
	switch {
	case p.head == len(p.order):
		p.order, p.head = p.order[:0], 0
	case p.head >= 1024 && 2*p.head >= len(p.order):
		n := copy(p.order, p.order[p.head:])
		p.order, p.head = p.order[:n], 0
	}
}

// Reset drops the overlay (after the pipeline is discarded, e.g. on leader change).
func (p *Preparer) Reset() {
	p.overlay = make(map[string]*record)
	clear(p.order)
	p.order, p.head = p.order[:0], 0
	p.deltas, p.deltaHead, p.pendingDelta = p.deltas[:0], 0, 0
}

// Digest is the tree digest once every prepared txn is applied.
func (p *Preparer) Digest() int64 { return p.Tree.Digest() + int64(p.pendingDelta) }

// seal gives a prepared txn its TxnDigest: every txn but an error txn carries one
// (ZooKeeper's setTxnDigest; a failed multi too, with the digest unchanged).
func (p *Preparer) seal(t *jute.LoggedTxn) *jute.LoggedTxn {
	if !p.NoDigest && t.Header.Type != jute.OpError {
		t.Digest = &jute.TxnDigest{Version: jute.DigestVersion, TreeDigest: p.Digest()}
	}
	return t
}

// oldDigest is path's share of the tree digest before the txn being committed: the
// outstanding record's, else the tree node's.
func (p *Preparer) oldDigest(path string) uint32 {
	if r, ok := p.overlay[path]; ok {
		if !r.exists {
			return 0
		}
		return r.digest
	}
	if n, ok := p.Tree.Lookup(path); ok {
		return n.Digest()
	}
	return 0
}

// newDigest computes and keeps r's share of the tree digest once its txn is applied.
func (p *Preparer) newDigest(path string, r *record) uint32 {
	if !r.exists {
		return 0
	}
	st := r.stat
	st.EphemeralOwner = r.treeOwner
	r.digest, p.scratch = datatree.NodeDigest(p.scratch, path, r.data, &st)
	return r.digest
}

func (p *Preparer) get(path string) (*record, error) {
	if r, ok := p.overlay[path]; ok {
		if !r.exists {
			return nil, jute.ErrNoNode
		}
		return r, nil
	}
	n, ok := p.Tree.Lookup(path)
	if !ok {
		return nil, jute.ErrNoNode
	}
	return &record{zxid: -1, exists: true, stat: n.Stat, childCount: n.NumChildren(), acl: p.Tree.ACL(n.ACL), dataLen: len(n.Data),
		data: n.Data, treeOwner: n.Stat.EphemeralOwner}, nil
}

// txnState collects the changes of one txn so a failing multi can drop them. Most txns
// change one or two nodes: a list is cheaper than a map until it grows.
type txnState struct {
	zxid    int64
	time    int64
	changes []change
	index   map[string]int // into changes, once there are more than smallTxn
	// seq64Parents are the parents under which the txn made a 64-bit sequential node:
	// their suffix is the txn's zxid, so one per parent (seq64Suffix).
	seq64Parents []string
}

type change struct {
	path string
	r    *record
}

const smallTxn = 16

func (s *txnState) find(path string) int {
	if s.index != nil {
		if i, ok := s.index[path]; ok {
			return i
		}
		return -1
	}
	for i := range s.changes {
		if s.changes[i].path == path {
			return i
		}
	}
	return -1
}

func (s *txnState) put(path string, r *record) {
	r.zxid = s.zxid
	if i := s.find(path); i >= 0 {
		s.changes[i].r = r
		return
	}
	s.changes = append(s.changes, change{path, r})
	switch {
	case s.index != nil:
		s.index[path] = len(s.changes) - 1
	case len(s.changes) > smallTxn:
		s.index = make(map[string]int, 2*len(s.changes))
		for i, c := range s.changes {
			s.index[c.path] = i
		}
	}
}

func (p *Preparer) lookup(s *txnState, path string) (*record, error) {
	if i := s.find(path); i >= 0 {
		r := s.changes[i].r
		if !r.exists {
			return nil, jute.ErrNoNode
		}
		return r, nil
	}
	return p.get(path)
}

func (p *Preparer) commit(s *txnState) {
	var delta uint64
	for _, c := range s.changes {
		if !p.NoDigest {
			// The overlay still holds the state before this txn: the change of each
			// node is its new share less its old (mod 2^64, as the tree sums them).
			delta += uint64(p.newDigest(c.path, c.r)) - uint64(p.oldDigest(c.path))
		}
		p.overlay[c.path] = c.r
		p.order = append(p.order, pending{s.zxid, c.path})
	}
	if delta != 0 {
		p.deltas = append(p.deltas, txnDelta{s.zxid, delta})
		p.pendingDelta += delta
	}
}

func (p *Preparer) newState(zxid, time int64) *txnState {
	clear(p.st.changes)
	p.st = txnState{zxid: zxid, time: time, changes: p.st.changes[:0], seq64Parents: p.st.seq64Parents[:0]}
	if cap(p.st.changes) > 4*smallTxn {
		p.st.changes = nil // a large multi's: not kept for every later txn
	}
	return &p.st
}

// Prepare turns a write request into its txn. A request that fails becomes an error txn
// (or, for multi, a MultiTxn of error sub-txns): failed writes still consume their zxid.
func (p *Preparer) Prepare(r *Request, zxid, timeMs int64) *jute.LoggedTxn {
	t := &jute.LoggedTxn{Header: jute.TxnHeader{ClientID: r.SessionID, Cxid: r.Cxid, Zxid: zxid, Time: timeMs, Type: r.Type}}
	s := p.newState(zxid, timeMs)
	if r.Body == nil {
		return errorTxn(t, jute.ErrMarshallingError)
	}
	if r.Type == jute.OpMulti {
		if err := CheckMultiCreates(r.Body.(*jute.MultiRequest), p.Wide); err != nil {
			return errorTxn(t, jute.ErrMarshallingError)
		}
		t.Body = p.prepareMulti(r, s)
		return p.seal(t)
	}
	if et, ok := p.prepareExt(r, t, s); ok {
		return et
	}
	body, err := p.prepareOp(r, r.Type, r.Body, s)
	if err != nil {
		return errorTxn(t, codeOf(err))
	}
	t.Body = body
	p.commit(s)
	return p.seal(t)
}

func errorTxn(t *jute.LoggedTxn, c jute.Code) *jute.LoggedTxn {
	t.Header.Type = jute.OpError
	t.Body = &jute.ErrorTxn{Err: c}
	return t
}

func codeOf(err error) jute.Code {
	if c, ok := err.(jute.Code); ok {
		return c
	}
	return jute.ErrSystemError
}

func (p *Preparer) prepareMulti(r *Request, s *txnState) jute.Record {
	m := r.Body.(*jute.MultiRequest)
	txns := make([]jute.Txn, 0, len(m.Ops))
	var failed error
	// starts[i] is where op i's sub-txns begin: an extension op writes none or several.
	var starts []int
	for _, op := range m.Ops {
		starts = append(starts, len(txns))
		if failed != nil {
			txns = append(txns, jute.Txn{Type: jute.OpError, Data: jute.Marshal(&jute.ErrorTxn{Err: jute.ErrRuntimeInconsistency})})
			continue
		}
		var body jute.Record
		var err error
		op.Type, op.Body = multiCreateType(op.Type, op.Body)
		row := jute.LookupOp(op.Type)
		switch {
		case row != nil && row.Multi == jute.InMulti && row.Ext != "":
			var sub []jute.Txn
			if sub, err = p.prepareExtOp(r, op.Type, op.Body, s); err == nil {
				txns = append(txns, sub...)
				continue
			}
		case row != nil && row.Multi == jute.InMulti:
			body, err = p.prepareOp(r, op.Type, op.Body, s)
		default:
			err = jute.ErrBadArguments
		}
		if err != nil {
			failed = err
			txns = append(txns, jute.Txn{Type: jute.OpError, Data: jute.Marshal(&jute.ErrorTxn{Err: codeOf(err)})})
			continue
		}
		txns = append(txns, jute.Txn{Type: loggedSubType(op.Type), Data: jute.Marshal(body)})
	}
	if failed == nil {
		p.commit(s)
		return &jute.MultiTxn{Txns: txns}
	}
	if len(txns) != len(m.Ops) {
		txns = oneTxnPerOp(m, txns, starts)
	}
	return &jute.MultiTxn{Txns: txns}
}

// oneTxnPerOp rewrites a failed multi holding extension ops so it has one sub-txn per op,
// as every failed multi has: its results are then one per op, as the client expects. A
// failed multi applies nothing, so an op before the failure that wrote none or several
// keeps one: its first, or a check of its path (any real type reads as OK).
func oneTxnPerOp(m *jute.MultiRequest, txns []jute.Txn, starts []int) []jute.Txn {
	out := make([]jute.Txn, len(m.Ops))
	for i := range m.Ops {
		end := len(txns)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		if end > starts[i] {
			out[i] = txns[starts[i]]
			continue
		}
		out[i] = jute.Txn{Type: jute.OpCheck, Data: jute.Marshal(&jute.CheckVersionTxn{Path: "/", Version: -1})}
	}
	return out
}

// loggedSubType is the type a multi's sub-txn is logged under. ZooKeeper 3.9 logs a create2
// as create2 (15), but 3.8.0 and 3.8.1 cannot read that back: their DataTree stops applying
// the multi at it, so a 3.8 follower or a 3.8 server started on zkd's data directory would
// silently lose the rest of the txn. Its body is a CreateTxn either way, so zkd logs it as a
// plain create (1), which every release applies alike, and answers it as create2 from the
// request (server.multiResponse).
func loggedSubType(typ jute.OpCode) jute.OpCode {
	if typ == jute.OpCreate2 {
		return jute.OpCreate
	}
	return typ
}

// CheckMultiCreates fails a multi (or multiRead) holding a create, create2 or
// createContainer whose flags name no create mode, or a TTL one: ZooKeeper 3.9 fails to
// decode such a request (MultiOperationRecord: CreateMode.fromFlag, then CreateOptions'
// TTL check without a ttl), which it answers with MARSHALLINGERROR for the whole request.
// wide: the 64-bit sequential modes are served (the wide extension), else refused as any
// flag ZooKeeper does not know.
func CheckMultiCreates(m *jute.MultiRequest, wide bool) error {
	for i, op := range m.Ops {
		b, ok := op.Body.(*jute.CreateRequest)
		if !ok || (op.Type != jute.OpCreate && op.Type != jute.OpCreate2 && op.Type != jute.OpCreateContainer) {
			continue
		}
		if mode, ok := modeOf(b.Flags); !ok || mode.ttl || (mode.seq64 && !wide) {
			return fmt.Errorf("prep: multi op %d: %v with flags %d: %w", i, op.Type, b.Flags, errMultiCreateFlags)
		}
	}
	return nil
}

var errMultiCreateFlags = errors.New("no create mode for a create without a ttl")

// multiCreateType gives the op a create inside a multi really is, as ZooKeeper 3.9's
// MultiOperationRecord and Op.Create build it (ZOOKEEPER-4026): a CONTAINER flag makes it
// createContainer (answered with a Stat) whatever opcode was sent; otherwise create, create2
// and createContainer keep their opcode, so create2 answers with a Stat and createContainer
// makes a container (with the ephemeral and sequential flags' checks and naming). A
// createTTL without a TTL flag is a plain create (or createContainer) whose ttl is dropped.
// (3.8.0 let the flags alone decide: create2 and createContainer without the flag were
// plain creates.) Flags naming no mode are left to create's own checks; CheckMultiCreates
// has refused them where 3.9 does.
func multiCreateType(typ jute.OpCode, body jute.Record) (jute.OpCode, jute.Record) {
	switch b := body.(type) {
	case *jute.CreateRequest:
		if typ != jute.OpCreate && typ != jute.OpCreate2 && typ != jute.OpCreateContainer {
			return typ, body
		}
		if m, ok := modeOf(b.Flags); ok && m.container {
			return jute.OpCreateContainer, body
		}
		return typ, body
	case *jute.CreateTTLRequest:
		if typ != jute.OpCreateTTL {
			return typ, body
		}
		m, ok := modeOf(b.Flags)
		if !ok || m.ttl {
			return typ, body
		}
		cr := &jute.CreateRequest{Path: b.Path, Data: b.Data, ACL: b.ACL, Flags: b.Flags}
		if m.container {
			return jute.OpCreateContainer, cr
		}
		return jute.OpCreate, cr
	}
	return typ, body
}

func (p *Preparer) checkACL(r *Request, acl []jute.ACL, perm int32) error {
	if p.SkipACL || p.Providers.Check(acl, perm, r.AuthIDs) {
		return nil
	}
	return jute.ErrNoAuth
}

// checkVersion returns the version after a change, failing if the expected one does not match.
// checkQuota is ZooKeeperServer.checkQuota, called where PrepRequestProcessor calls it
// (a create after its other checks, a setData before its version check). Like ZooKeeper it
// reads the limits and stats of the applied tree, not of the outstanding changes: writes
// in flight together, or in one multi, are each checked against the same stats.
func (p *Preparer) checkQuota(path string, countDiff, bytesDiff int64) error {
	if !p.EnforceQuota {
		return nil
	}
	var err error
	for _, e := range p.Tree.CheckQuota(path, countDiff, bytesDiff) {
		if p.OnQuotaExceeded != nil {
			p.OnQuotaExceeded(e)
		}
		if e.Hard {
			err = jute.ErrQuotaExceeded
		}
	}
	return err
}

func checkVersion(current, expected int32) (int32, error) {
	if expected != -1 && expected != current {
		return 0, jute.ErrBadVersion
	}
	return current + 1, nil
}

func parentForWrite(path string) (string, error) {
	i := lastSlash(path)
	if i < 0 || hasNUL(path) {
		return "", jute.ErrBadArguments
	}
	if i == 0 {
		return "/", nil
	}
	return path[:i], nil
}

func lastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}

func hasNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

func isSpecial(path string) bool {
	switch path {
	case "/", datatree.ZookeeperPath, datatree.QuotaPath, datatree.ConfigPath:
		return true
	}
	return false
}

func (p *Preparer) prepareOp(r *Request, typ jute.OpCode, body jute.Record, s *txnState) (jute.Record, error) {
	switch typ {
	case jute.OpCreate, jute.OpCreate2, jute.OpCreateContainer:
		b, ok := body.(*jute.CreateRequest)
		if !ok {
			return nil, jute.ErrMarshallingError
		}
		return p.create(r, typ, b.Path, b.Data, b.ACL, b.Flags, -1, s)
	case jute.OpCreateTTL:
		b, ok := body.(*jute.CreateTTLRequest)
		if !ok {
			return nil, jute.ErrMarshallingError
		}
		return p.create(r, typ, b.Path, b.Data, b.ACL, b.Flags, b.TTL, s)
	case jute.OpDelete:
		b, ok := body.(*jute.DeleteRequest)
		if !ok {
			return nil, jute.ErrMarshallingError
		}
		return p.delete(r, b, s)
	case jute.OpSetData:
		b, ok := body.(*jute.SetDataRequest)
		if !ok {
			return nil, jute.ErrMarshallingError
		}
		return p.setData(r, b, s)
	case jute.OpSetACL:
		b, ok := body.(*jute.SetACLRequest)
		if !ok {
			return nil, jute.ErrMarshallingError
		}
		return p.setACL(r, b, s)
	case jute.OpCheck:
		b, ok := body.(*jute.CheckVersionRequest)
		if !ok {
			return nil, jute.ErrMarshallingError
		}
		if !datatree.ValidatePath(b.Path) {
			return nil, jute.ErrBadArguments
		}
		n, err := p.lookup(s, b.Path)
		if err != nil {
			return nil, err
		}
		if err := p.checkACL(r, n.acl, jute.PermRead); err != nil {
			return nil, err
		}
		v, err := checkVersion(n.stat.Version, b.Version)
		if err != nil {
			return nil, err
		}
		return &jute.CheckVersionTxn{Path: b.Path, Version: v}, nil
	case jute.OpReconfig:
		b, ok := body.(*jute.ReconfigRequest)
		if !ok {
			return nil, jute.ErrMarshallingError
		}
		return p.reconfig(r, b, s)
	}
	return nil, jute.ErrUnimplemented
}

// createMode decodes create flags. seq64 is one of the wide extension's 64-bit sequential
// modes (sequential is set too); whether it is served is the caller's to check (Wide).
type createMode struct {
	ephemeral, sequential, container, ttl, seq64 bool
}

func modeOf(flags int32) (createMode, bool) {
	switch flags {
	case jute.FlagPersistent:
		return createMode{}, true
	case jute.FlagEphemeral:
		return createMode{ephemeral: true}, true
	case jute.FlagPersistentSequential:
		return createMode{sequential: true}, true
	case jute.FlagEphemeralSequential:
		return createMode{ephemeral: true, sequential: true}, true
	case jute.FlagContainer:
		return createMode{container: true}, true
	case jute.FlagPersistentWithTTL:
		return createMode{ttl: true}, true
	case jute.FlagPersistentSequentialTTL:
		return createMode{ttl: true, sequential: true}, true
	case jute.FlagPersistentSequential64:
		return createMode{sequential: true, seq64: true}, true
	case jute.FlagEphemeralSequential64:
		return createMode{ephemeral: true, sequential: true, seq64: true}, true
	}
	return createMode{}, false
}

// modeOfServed is modeOf for a preparer: the 64-bit sequential modes are modes only with
// the wide extension.
func (p *Preparer) modeOfServed(flags int32) (createMode, bool) {
	m, ok := modeOf(flags)
	if m.seq64 && !p.Wide {
		return createMode{}, false
	}
	return m, ok
}

// errSeq64Twice: a txn may make one 64-bit sequential node per parent (seq64Suffix).
var errSeq64Twice = jute.ErrBadArguments

// seq64Suffix is a 64-bit sequential node's suffix: the zxid of the txn that creates it,
// %019d. A zxid is unique, strictly increasing (across restarts, elections and snapshots:
// it is in every txn and snapshot already) and positive, so the names under a parent are
// too, with nothing new in the data files; ZooKeeper's suffix, the parent's 32-bit
// cversion, wraps past 2^31. One txn has one zxid, so a multi may make only one such node
// per parent: the second is BADARGUMENTS (and the multi fails).
func (s *txnState) seq64Suffix(parent string) (string, error) {
	for _, p := range s.seq64Parents {
		if p == parent {
			return "", errSeq64Twice
		}
	}
	s.seq64Parents = append(s.seq64Parents, parent)
	return fmt.Sprintf("%0*d", jute.Seq64Width, s.zxid), nil
}

func (p *Preparer) create(r *Request, typ jute.OpCode, path string, data []byte, acl []jute.ACL, flags int32, ttl int64, s *txnState) (jute.Record, error) {
	mode, ok := p.modeOfServed(flags)
	if !ok {
		return nil, jute.ErrBadArguments
	}
	if mode.ttl && !p.ExtendedTypes {
		return nil, jute.ErrUnimplemented
	}
	if mode.ttl {
		if ttl <= 0 || ttl > jute.MaxTTL {
			return nil, jute.ErrBadArguments
		}
	} else if ttl >= 0 || typ == jute.OpCreateTTL {
		// A createTTL whose flags are not a TTL mode: ZooKeeper refuses a ttl >= 0, but with
		// a negative one it logs a CreateTTLTxn its own DataTree cannot apply (the commit
		// processor dies, and the server fails to start on that log again). zkd refuses it
		// too rather than write such a log.
		return nil, jute.ErrBadArguments
	}
	if mode.ephemeral && r.EphemeralErr != jute.OK {
		return nil, r.EphemeralErr
	}
	parentPath, err := parentForWrite(path)
	if err != nil {
		return nil, err
	}
	fixed, err := p.Providers.FixupACL(acl, r.AuthIDs)
	if err != nil {
		return nil, jute.ErrInvalidACL
	}
	parent, err := p.lookup(s, parentPath)
	if err != nil {
		return nil, err
	}
	if err := p.checkACL(r, parent.acl, jute.PermCreate); err != nil {
		return nil, err
	}
	switch {
	case mode.seq64:
		suffix, err := s.seq64Suffix(parentPath)
		if err != nil {
			return nil, err
		}
		path += suffix
	case mode.sequential:
		path = fmt.Sprintf("%s%010d", path, parent.stat.Cversion)
	}
	if !datatree.ValidatePath(path) {
		return nil, jute.ErrBadArguments
	}
	if path == "/" {
		return nil, jute.ErrNodeExists
	}
	if _, err := p.lookup(s, path); err == nil {
		return nil, jute.ErrNodeExists
	}
	if o := parent.stat.EphemeralOwner; o != 0 && o != datatree.ContainerOwner {
		if _, isTTL := p.Tree.IsTTL(o); !isTTL {
			return nil, jute.ErrNoChildrenForEphemerals
		}
	}
	newCversion := parent.stat.Cversion + 1
	if err := p.checkQuota(path, 1, int64(len(data))); err != nil {
		return nil, err
	}
	// The opcode picks the txn (and so what the tree makes of it: a createContainer with
	// ephemeral flags is a container once applied), the flags the pending record, as in
	// ZooKeeper's PrepRequestProcessor: until the txn is applied, later requests see the
	// node the flags describe.
	var txn jute.Record
	switch typ {
	case jute.OpCreateContainer:
		txn = &jute.CreateContainerTxn{Path: path, Data: data, ACL: fixed, ParentCVersion: newCversion}
	case jute.OpCreateTTL:
		txn = &jute.CreateTTLTxn{Path: path, Data: data, ACL: fixed, ParentCVersion: newCversion, TTL: ttl}
	default:
		txn = &jute.CreateTxn{Path: path, Data: data, ACL: fixed, Ephemeral: mode.ephemeral, ParentCVersion: newCversion}
	}
	var owner int64
	switch {
	case mode.container:
		owner = datatree.ContainerOwner
	case mode.ttl:
		owner = datatree.TTLOwner(ttl)
	case mode.ephemeral:
		owner = r.SessionID
	}
	// The tree makes the owner of the txn's type, which the digest follows.
	treeOwner := int64(0)
	switch t := txn.(type) {
	case *jute.CreateContainerTxn:
		treeOwner = datatree.ContainerOwner
	case *jute.CreateTTLTxn:
		treeOwner = datatree.TTLOwner(t.TTL)
	case *jute.CreateTxn:
		if t.Ephemeral {
			treeOwner = r.SessionID
		}
	}
	np := *parent
	np.childCount++
	np.stat.Cversion = newCversion
	np.stat.Pzxid = s.zxid
	s.put(parentPath, &np)
	s.put(path, &record{exists: true, acl: fixed, dataLen: len(data), data: data, treeOwner: treeOwner, stat: jute.StatPersisted{
		Czxid: s.zxid, Mzxid: s.zxid, Pzxid: s.zxid, Ctime: s.time, Mtime: s.time, EphemeralOwner: owner,
	}})
	return txn, nil
}

// parentForDelete returns the parent of path, which deleting path needs to exist and to
// grant DELETE.
func (p *Preparer) parentForDelete(r *Request, path string, s *txnState) (string, *record, error) {
	parentPath, err := parentForWrite(path)
	if err != nil {
		return "", nil, err
	}
	parent, err := p.lookup(s, parentPath)
	if err != nil {
		return "", nil, err
	}
	if err := p.checkACL(r, parent.acl, jute.PermDelete); err != nil {
		return "", nil, err
	}
	return parentPath, parent, nil
}

func (p *Preparer) delete(r *Request, b *jute.DeleteRequest, s *txnState) (jute.Record, error) {
	if isSpecial(b.Path) {
		return nil, jute.ErrBadArguments
	}
	parentPath, parent, err := p.parentForDelete(r, b.Path, s)
	if err != nil {
		return nil, err
	}
	n, err := p.lookup(s, b.Path)
	if err != nil {
		return nil, err
	}
	if _, err := checkVersion(n.stat.Version, b.Version); err != nil {
		return nil, err
	}
	if n.childCount > 0 {
		return nil, jute.ErrNotEmpty
	}
	p.markDeleted(s, parentPath, parent, b.Path)
	return &jute.DeleteTxn{Path: b.Path}, nil
}

func (p *Preparer) markDeleted(s *txnState, parentPath string, parent *record, path string) {
	np := *parent
	np.childCount--
	np.stat.Pzxid = s.zxid
	s.put(parentPath, &np)
	s.put(path, &record{exists: false})
}

func (p *Preparer) setData(r *Request, b *jute.SetDataRequest, s *txnState) (jute.Record, error) {
	if !datatree.ValidatePath(b.Path) {
		return nil, jute.ErrBadArguments
	}
	n, err := p.lookup(s, b.Path)
	if err != nil {
		return nil, err
	}
	if err := p.checkACL(r, n.acl, jute.PermWrite); err != nil {
		return nil, err
	}
	if err := p.checkQuota(b.Path, 0, int64(len(b.Data)-n.dataLen)); err != nil {
		return nil, err
	}
	v, err := checkVersion(n.stat.Version, b.Version)
	if err != nil {
		return nil, err
	}
	nn := n
	if n.zxid != -1 {
		// The record is an outstanding txn's (or this one's): a copy, so the change can be
		// dropped. One get made fresh from the tree is nobody else's and is changed in place.
		c := *n
		nn = &c
	}
	nn.dataLen = len(b.Data)
	nn.data = b.Data
	nn.stat.Version = v
	nn.stat.Mzxid = s.zxid
	nn.stat.Mtime = s.time
	s.put(b.Path, nn)
	return &jute.SetDataTxn{Path: b.Path, Data: b.Data, Version: v}, nil
}

// reconfig is PrepRequestProcessor's case OpCode.reconfig: the new configuration, then the
// WRITE permission on /zookeeper/config (whose ACL is world READ: only a super user, or an
// ACL a super user set, may reconfigure; skipACL skips it), then a SetDataTxn on the node
// with version -1, as ZooKeeper writes it.
func (p *Preparer) reconfig(r *Request, b *jute.ReconfigRequest, s *txnState) (jute.Record, error) {
	if p.Reconfig == nil {
		return nil, jute.ErrReconfigDisabled
	}
	text, code := p.Reconfig(b, s.zxid)
	if code != jute.OK {
		return nil, code
	}
	n, err := p.lookup(s, datatree.ConfigPath)
	if err != nil {
		return nil, err
	}
	if err := p.checkACL(r, n.acl, jute.PermWrite); err != nil {
		return nil, err
	}
	nn := *n
	nn.dataLen = len(text)
	nn.data = text
	nn.stat.Version = -1
	nn.stat.Mzxid = s.zxid
	nn.stat.Mtime = s.time
	s.put(datatree.ConfigPath, &nn)
	return &jute.SetDataTxn{Path: datatree.ConfigPath, Data: text, Version: -1}, nil
}

func (p *Preparer) setACL(r *Request, b *jute.SetACLRequest, s *txnState) (jute.Record, error) {
	if !datatree.ValidatePath(b.Path) {
		return nil, jute.ErrBadArguments
	}
	fixed, err := p.Providers.FixupACL(b.ACL, r.AuthIDs)
	if err != nil {
		return nil, jute.ErrInvalidACL
	}
	n, err := p.lookup(s, b.Path)
	if err != nil {
		return nil, err
	}
	if err := p.checkACL(r, n.acl, jute.PermAdmin); err != nil {
		return nil, err
	}
	v, err := checkVersion(n.stat.Aversion, b.Version)
	if err != nil {
		return nil, err
	}
	nn := *n
	nn.stat.Aversion = v
	nn.acl = fixed
	s.put(b.Path, &nn)
	return &jute.SetACLTxn{Path: b.Path, ACL: fixed, Version: v}, nil
}

// CreateSession returns the txn that opens a session.
func (p *Preparer) CreateSession(session int64, timeout int32, zxid, timeMs int64) *jute.LoggedTxn {
	return p.seal(&jute.LoggedTxn{
		Header: jute.TxnHeader{ClientID: session, Zxid: zxid, Time: timeMs, Type: jute.OpCreateSession},
		Body:   &jute.CreateSessionTxn{TimeOut: timeout},
	})
}

// CloseSession returns the txn that closes a session and deletes its ephemerals, counting
// the ephemerals that outstanding txns create or delete.
func (p *Preparer) CloseSession(session int64, cxid int32, zxid, timeMs int64) *jute.LoggedTxn {
	applied := p.Tree.Ephemerals(session)
	kept := make([]ephemeral, 0, len(applied))
	inTree := make(map[string]bool, len(applied))
	for _, path := range applied {
		inTree[path] = true
		n := p.Tree.Get(path)
		if n == nil {
			continue
		}
		if rec, ok := p.overlay[path]; ok && (!rec.exists || rec.stat.EphemeralOwner != session || rec.stat.Czxid != n.Stat.Czxid) {
			// Deleted, or recreated by someone else (not this session's to delete), or
			// recreated by this session (ZooKeeper removes and re-adds it: see below).
			continue
		}
		kept = append(kept, ephemeral{path, n.Stat.Czxid})
	}
	var added []string
	seen := make(map[string]bool)
	for _, pd := range p.order[p.head:] {
		rec := p.overlay[pd.path]
		if rec == nil || !rec.exists || rec.stat.EphemeralOwner != session || rec.stat.Czxid != pd.zxid {
			continue
		}
		if seen[pd.path] || inTree[pd.path] && p.Tree.Get(pd.path).Stat.Czxid == rec.stat.Czxid {
			continue
		}
		seen[pd.path] = true
		added = append(added, pd.path)
	}
	paths := closeOrder(kept, len(applied), added)
	s := p.newState(zxid, timeMs)
	for _, path := range paths {
		parentPath := datatree.Parent(path)
		if parent, err := p.lookup(s, parentPath); err == nil {
			p.markDeleted(s, parentPath, parent, path)
		}
	}
	p.commit(s)
	return p.seal(&jute.LoggedTxn{
		Header: jute.TxnHeader{ClientID: session, Cxid: cxid, Zxid: zxid, Time: timeMs, Type: jute.OpCloseSession},
		Body:   &jute.CloseSessionTxn{Paths2Delete: paths},
	})
}

// ContainerDeletable reports whether DeleteContainer would produce a txn for path.
func (p *Preparer) ContainerDeletable(path string) bool {
	n, err := p.get(path)
	if err != nil || n.childCount > 0 {
		return false
	}
	_, err = p.get(datatree.Parent(path))
	return err == nil
}

// DeleteContainer returns the server-made txn that removes an expired container or TTL
// node, or nil if the node no longer qualifies once outstanding changes are counted.
func (p *Preparer) DeleteContainer(path string, zxid, timeMs int64) *jute.LoggedTxn {
	s := p.newState(zxid, timeMs)
	n, err := p.lookup(s, path)
	if err != nil || n.childCount > 0 {
		return nil
	}
	parentPath := datatree.Parent(path)
	parent, err := p.lookup(s, parentPath)
	if err != nil {
		return nil
	}
	p.markDeleted(s, parentPath, parent, path)
	p.commit(s)
	return p.seal(&jute.LoggedTxn{
		Header: jute.TxnHeader{Zxid: zxid, Time: timeMs, Type: jute.OpDeleteContainer},
		Body:   &jute.DeleteTxn{Path: path},
	})
}
