package jute

import (
	"fmt"
	"slices"

	"github.com/zkd-io/zkd/internal/ext"
)

// OpCode is RequestHeader.type, TxnHeader.type and MultiHeader.type.
type OpCode int32

// The opcodes of ZooDefs.OpCode. Each has a row in the opcode table (LookupOp).
const (
	OpNotification         OpCode = 0
	OpCreate               OpCode = 1
	OpDelete               OpCode = 2
	OpExists               OpCode = 3
	OpGetData              OpCode = 4
	OpSetData              OpCode = 5
	OpGetACL               OpCode = 6
	OpSetACL               OpCode = 7
	OpGetChildren          OpCode = 8
	OpSync                 OpCode = 9
	OpPing                 OpCode = 11
	OpGetChildren2         OpCode = 12
	OpCheck                OpCode = 13
	OpMulti                OpCode = 14
	OpCreate2              OpCode = 15
	OpReconfig             OpCode = 16
	OpCheckWatches         OpCode = 17
	OpRemoveWatches        OpCode = 18
	OpCreateContainer      OpCode = 19
	OpDeleteContainer      OpCode = 20
	OpCreateTTL            OpCode = 21
	OpMultiRead            OpCode = 22
	OpAuth                 OpCode = 100
	OpSetWatches           OpCode = 101
	OpSASL                 OpCode = 102
	OpGetEphemerals        OpCode = 103
	OpGetAllChildrenNumber OpCode = 104
	OpSetWatches2          OpCode = 105
	OpAddWatch             OpCode = 106
	OpWhoAmI               OpCode = 107
	OpCreateSession        OpCode = -10
	OpCloseSession         OpCode = -11
	OpError                OpCode = -1
)

// The opcodes of zkd's extensions (OpInfo.Ext). A stock client never sends them, and a
// server without the extension answers them as any opcode it does not know.
const (
	// ClickHouse Keeper's extension opcodes (ClickHouse's
	// src/Common/ZooKeeper/ZooKeeperConstants.h, OpNum): FilteredList 500, CheckNotExists
	// 501, CreateIfNotExists 502, RemoveRecursive 503.
	OpFilteredList      OpCode = 500
	OpCheckNotExists    OpCode = 501
	OpCreateIfNotExists OpCode = 502
	OpRemoveRecursive   OpCode = 503
	// OpCreateWithParents is zkd's own: ClickHouse has no such opcode (its client creates
	// ancestors one request at a time). It is outside ClickHouse's 500 range, which
	// ClickHouse keeps extending (504 CheckStat ... 507 ListRecursive, 997 SessionID).
	OpCreateWithParents OpCode = 1500
	// OpListPage is zkd's paged listing (ext.PagedList): a node's children a page at a
	// time, every page from one consistent view.
	OpListPage OpCode = 1030
	// OpAddWatchSince is zkd's watch resume (ext.WatchResume): addWatch plus the zxid the
	// client last saw, answered with the events it missed.
	OpAddWatchSince OpCode = 1040
	// OpSetMaxBuffer is zkd's large-replies extension (ext.LargeReplies): the connection asks
	// for a larger limit on the frames it reads and the server sends, and is answered with
	// the limit granted.
	OpSetMaxBuffer OpCode = 1050
)

// OpInfo is one row of the opcode table: what the code base knows about an opcode apart
// from the handler that carries it out. A new opcode is a constant, a row here and a handler.
type OpInfo struct {
	Code OpCode
	// Name is the opcode as ZooKeeper prints it (Request.op2String): in logs, in the client's
	// errors and by OpCode.String.
	Name string
	// LastOp is what FinalRequestProcessor records as the connection's last operation, shown
	// by cons as lop=; empty where it records none (cons then shows "NA").
	LastOp string

	// Request returns an empty record for the request body, ready to decode into; it
	// returns nil for requests without a body (ping, closeSession, whoAmI). Request itself is
	// nil when there is no request frame with this opcode: notification, error, and
	// createSession, whose request is the connect handshake's ConnectRequest.
	Request func() Record
	// Response returns an empty record for the body of a successful reply; nil when that
	// reply has no body. It is also the body of the op's result inside a multi or multiRead.
	Response func() Record
	// Txn returns an empty record for the txn the op writes to the log; nil for ops that
	// write none.
	Txn func() Record

	// Write marks ops that become txns and go through the txn pipeline (prep, log or
	// quorum, apply), as ZooKeeper's Request.isQuorum (for global sessions). Reads are
	// answered from the serving server's tree. sync is a read here; zkd's ensemble orders it
	// through the leader as well.
	Write bool
	// Sessionless marks requests answered as they arrive, outside the session's request
	// queue and even while the session is closing: auth and sasl, which ZooKeeper's
	// processPacket handles before submitting anything, and createSession, which makes the
	// session. Every other request, ping included, runs in its session's order and fails
	// with SESSIONEXPIRED once the session is closing.
	Sessionless bool
	// Internal marks opcodes a client may not send as a request of its own; zkd answers them
	// UNIMPLEMENTED and closes the connection. Besides those without a request frame, that
	// is check, which belongs inside a multi (a top-level check poisons ZooKeeper 3.8.0's log,
	// ZOOKEEPER-2623; 3.8.5 and 3.9.3 answer it as zkd does), and deleteContainer, which is the server's own txn (ZooKeeper accepts
	// it from clients and checks no ACL).
	Internal bool
	// Multi says whether the op may appear inside a multi or a multiRead.
	Multi MultiKind

	// Perm is the ACL permission the op needs, as PrepRequestProcessor (writes) and
	// FinalRequestProcessor (reads) check it; 0 for none. It is checked against the node's
	// ACL, or its parent's when PermOnParent is set. exists checks it only when the node
	// exists; getACL masks digests unless the caller also has ADMIN; reconfig checks the
	// ACL of /zookeeper/config.
	Perm         int32
	PermOnParent bool

	// Ext is the extension the opcode belongs to; "" for ZooKeeper's own. A server that
	// does not enable it treats the opcode as unknown, inside a multi too.
	Ext ext.Name
	// LoggedAs is the type of the txn a write of an extension is logged under: one of
	// ZooKeeper's, so the log, snapshots and peers never see the extension's opcode. 0 for
	// ZooKeeper's own ops (logged under their opcode) and for reads.
	LoggedAs OpCode
}

// MultiKind is where an op may appear as part of a multi-op request.
type MultiKind uint8

const (
	// NotInMulti ops are refused inside multi and multiRead.
	NotInMulti MultiKind = iota
	// InMulti ops may appear in a multi (14): all or none of them apply.
	InMulti
	// InMultiRead ops may appear in a multiRead (22).
	InMultiRead
)

// newRec returns a constructor of an empty *T; the table's columns are made of these.
func newRec[T any, P interface {
	*T
	Record
}]() Record {
	return P(new(T))
}

// noBody is the Request of requests whose header is the whole frame.
func noBody() Record { return nil }

func newSetWatches2() Record { return &SetWatches{V2: true} }

// opTable is the opcode table, in opcode order within each range.
var opTable = []OpInfo{
	{Code: OpNotification, Name: "notification", Internal: true,
		Response: newRec[WatcherEvent]}, // the body of an xid -1 frame
	{Code: OpCreate, Name: "create", LastOp: "CREA", Write: true, Multi: InMulti,
		Perm: PermCreate, PermOnParent: true,
		Request: newRec[CreateRequest], Response: newRec[CreateResponse], Txn: newRec[CreateTxn]},
	{Code: OpDelete, Name: "delete", LastOp: "DELE", Write: true, Multi: InMulti,
		Perm: PermDelete, PermOnParent: true,
		Request: newRec[DeleteRequest], Txn: newRec[DeleteTxn]},
	{Code: OpExists, Name: "exists", LastOp: "EXIS", Perm: PermRead,
		Request: newRec[ExistsRequest], Response: newRec[ExistsResponse]},
	{Code: OpGetData, Name: "getData", LastOp: "GETD", Multi: InMultiRead, Perm: PermRead,
		Request: newRec[GetDataRequest], Response: newRec[GetDataResponse]},
	{Code: OpSetData, Name: "setData", LastOp: "SETD", Write: true, Multi: InMulti,
		Perm:    PermWrite,
		Request: newRec[SetDataRequest], Response: newRec[SetDataResponse], Txn: newRec[SetDataTxn]},
	{Code: OpGetACL, Name: "getACL", LastOp: "GETA", Perm: PermRead | PermAdmin,
		Request: newRec[GetACLRequest], Response: newRec[GetACLResponse]},
	{Code: OpSetACL, Name: "setACL", LastOp: "SETA", Write: true, Perm: PermAdmin,
		Request: newRec[SetACLRequest], Response: newRec[SetACLResponse], Txn: newRec[SetACLTxn]},
	{Code: OpGetChildren, Name: "getChildren", LastOp: "GETC", Multi: InMultiRead, Perm: PermRead,
		Request: newRec[GetChildrenRequest], Response: newRec[GetChildrenResponse]},
	{Code: OpSync, Name: "sync", LastOp: "SYNC",
		Request: newRec[SyncRequest], Response: newRec[SyncResponse]},
	{Code: OpPing, Name: "ping", LastOp: "PING", Request: noBody},
	{Code: OpGetChildren2, Name: "getChildren2", LastOp: "GETC", Perm: PermRead,
		Request: newRec[GetChildren2Request], Response: newRec[GetChildren2Response]},
	{Code: OpCheck, Name: "check", LastOp: "CHEC", Write: true, Internal: true, Multi: InMulti,
		Perm:    PermRead,
		Request: newRec[CheckVersionRequest], Txn: newRec[CheckVersionTxn]},
	{Code: OpMulti, Name: "multi", LastOp: "MULT", Write: true,
		Request: newRec[MultiRequest], Response: newRec[MultiResponse], Txn: newRec[MultiTxn]},
	{Code: OpCreate2, Name: "create2", LastOp: "CREA", Write: true, Multi: InMulti,
		Perm: PermCreate, PermOnParent: true,
		Request: newRec[CreateRequest], Response: newRec[Create2Response], Txn: newRec[CreateTxn]},
	// Dynamic reconfiguration is off (ZooKeeper 3.8's default): the handler answers
	// RECONFIGDISABLED, but the layouts are ZooKeeper's.
	{Code: OpReconfig, Name: "reconfig", LastOp: "RECO", Write: true, Perm: PermWrite,
		Request: newRec[ReconfigRequest], Response: newRec[GetDataResponse], Txn: newRec[SetDataTxn]},
	{Code: OpCheckWatches, Name: "checkWatches", LastOp: "CHKW",
		Request: newRec[WatchesRequest]},
	{Code: OpRemoveWatches, Name: "removeWatches", LastOp: "REMW",
		Request: newRec[WatchesRequest]},
	{Code: OpCreateContainer, Name: "createContainer", LastOp: "CREA", Write: true, Multi: InMulti,
		Perm: PermCreate, PermOnParent: true,
		Request: newRec[CreateRequest], Response: newRec[Create2Response], Txn: newRec[CreateContainerTxn]},
	{Code: OpDeleteContainer, Name: "deleteContainer", LastOp: "DELE", Write: true, Internal: true,
		Request: newRec[DeleteContainerRequest], Txn: newRec[DeleteTxn]},
	{Code: OpCreateTTL, Name: "createTTL", LastOp: "CREA", Write: true, Multi: InMulti,
		Perm: PermCreate, PermOnParent: true,
		Request: newRec[CreateTTLRequest], Response: newRec[Create2Response], Txn: newRec[CreateTTLTxn]},
	{Code: OpMultiRead, Name: "multiRead", LastOp: "MLTR",
		Request: newRec[MultiRequest], Response: newRec[MultiResponse]},

	{Code: OpAuth, Name: "auth", Sessionless: true, Request: newRec[AuthPacket]},
	{Code: OpSetWatches, Name: "setWatches", LastOp: "SETW", Request: newRec[SetWatches]},
	// No SASL provider: the answer is an empty challenge.
	{Code: OpSASL, Name: "sasl", Sessionless: true,
		Request: newRec[SASLToken], Response: newRec[SASLToken]},
	{Code: OpGetEphemerals, Name: "getEphemerals", LastOp: "GETE",
		Request: newRec[GetEphemeralsRequest], Response: newRec[GetEphemeralsResponse]},
	{Code: OpGetAllChildrenNumber, Name: "getAllChildrenNumber", LastOp: "GETACN", Perm: PermRead,
		Request: newRec[GetAllChildrenNumberRequest], Response: newRec[GetAllChildrenNumberResponse]},
	{Code: OpSetWatches2, Name: "setWatches2", LastOp: "STW2", Request: newSetWatches2},
	// The reply is an ErrorResponse holding 0.
	{Code: OpAddWatch, Name: "addWatch", LastOp: "ADDW",
		Request: newRec[AddWatchRequest], Response: newRec[ErrorResponse]},
	{Code: OpWhoAmI, Name: "whoAmI", LastOp: "HOMI",
		Request: noBody, Response: newRec[WhoAmIResponse]},

	// zkd's extensions.
	{Code: OpAddWatchSince, Name: "addWatchSince", LastOp: "ADWS", Ext: ext.WatchResume,
		Request: newRec[AddWatchSinceRequest], Response: newRec[AddWatchSinceResponse]},

	{Code: OpCreateSession, Name: "createSession", LastOp: "SESS", Write: true, Sessionless: true,
		Internal: true, Txn: newRec[CreateSessionTxn]},
	{Code: OpCloseSession, Name: "closeSession", LastOp: "CLOS", Write: true,
		Request: noBody, Txn: newRec[CloseSessionTxn]},
	// The type of a failed txn, and of a failed op's result in a multi (its body is an
	// ErrorResponse with the code).
	{Code: OpError, Name: "error", Write: true, Internal: true,
		Response: newRec[ErrorResponse], Txn: newRec[ErrorTxn]},

	// ext.KeeperOps. Layouts: ClickHouse's src/Common/ZooKeeper/ZooKeeperCommon.cpp.
	// FilteredList answers as ClickHouse's ZooKeeperListResponse (names, then the node's
	// Stat), which is getChildren2's layout; inside a multiRead its result type is 12.
	{Code: OpFilteredList, Name: "filteredList", LastOp: "FLST", Multi: InMultiRead, Perm: PermRead,
		Request: newRec[FilteredListRequest], Response: newRec[GetChildren2Response], Ext: ext.KeeperOps},
	// CheckNotExists has check's body; it fails with NODEEXISTS when the node exists and
	// version is -1 or the node's (ClickHouse's src/Coordination/KeeperStorage.cpp). Inside
	// a multi it is checked by prep and writes no sub-txn. On its own it is ordered like a
	// write and logged as an error txn holding its answer (0 or NODEEXISTS), which changes
	// nothing: never as a top-level check txn, which poisons ZooKeeper 3.8.0's log.
	{Code: OpCheckNotExists, Name: "checkNotExists", LastOp: "CHNE", Write: true, Multi: InMulti, Perm: PermRead,
		Request: newRec[CheckVersionRequest], Txn: newRec[ErrorTxn], LoggedAs: OpError, Ext: ext.KeeperOps},
	// CreateIfNotExists has create's body and answers create's; when the node exists it
	// answers OK with the path, and logs an error txn (NODEEXISTS) that changes nothing.
	{Code: OpCreateIfNotExists, Name: "createIfNotExists", LastOp: "CRIN", Write: true, Multi: InMulti,
		Perm: PermCreate, PermOnParent: true,
		Request: newRec[CreateRequest], Response: newRec[CreateResponse], Txn: newRec[CreateTxn], LoggedAs: OpCreate,
		Ext: ext.KeeperOps},
	// RemoveRecursive deletes a node and its subtree atomically: one multi txn of deletes,
	// children first. Its reply has no body.
	{Code: OpRemoveRecursive, Name: "removeRecursive", LastOp: "RMRC", Write: true, Multi: InMulti,
		Perm: PermDelete, PermOnParent: true,
		Request: newRec[RemoveRecursiveRequest], Txn: newRec[MultiTxn], LoggedAs: OpMulti, Ext: ext.KeeperOps},
	// CreateWithParents is create with the missing ancestors made first (persistent, empty,
	// with the request's ACL): one multi txn of creates. Its reply is create2's.
	{Code: OpCreateWithParents, Name: "createWithParents", LastOp: "CRWP", Write: true,
		Perm: PermCreate, PermOnParent: true,
		Request: newRec[CreateRequest], Response: newRec[Create2Response], Txn: newRec[MultiTxn], LoggedAs: OpMulti,
		Ext: ext.KeeperOps},

	// ext.LargeReplies. A read: nothing is logged, the grant is the connection's.
	{Code: OpSetMaxBuffer, Name: "setMaxBuffer", LastOp: "SMXB", Ext: ext.LargeReplies,
		Request: newRec[SetMaxBufferRequest], Response: newRec[SetMaxBufferResponse]},

	// ext.PagedList.
	{Code: OpListPage, Name: "listPage", LastOp: "LSPG", Perm: PermRead,
		Request: newRec[ListPageRequest], Response: newRec[ListPageResponse], Ext: ext.PagedList},
}

// opBias maps the smallest opcode (closeSession, -11) to a non-negative index.
const opBias = 16

var opIndex, extIndex = indexOps(opTable)

// indexOps indexes ZooKeeper's opcodes densely and the extensions' (far apart) in a map.
func indexOps(rows []OpInfo) (*[128]*OpInfo, map[OpCode]*OpInfo) {
	var idx [128]*OpInfo
	exts := map[OpCode]*OpInfo{}
	for i := range rows {
		r := &rows[i]
		if r.Ext != "" {
			if exts[r.Code] != nil || r.Code < 128-opBias {
				panic(fmt.Sprintf("jute: opcode table: extension opcode %d repeated or in ZooKeeper's range", int32(r.Code)))
			}
			exts[r.Code] = r
			continue
		}
		n := int(r.Code) + opBias
		if n < 0 || n >= len(idx) || idx[n] != nil {
			panic(fmt.Sprintf("jute: opcode table: bad or repeated opcode %d", int32(r.Code)))
		}
		idx[n] = r
	}
	return &idx, exts
}

// LookupOp returns the opcode table's row for o, or nil for an opcode ZooKeeper does not
// define. The row must not be modified.
func LookupOp(o OpCode) *OpInfo {
	// Wrapping arithmetic: a huge o lands outside the index rather than inside it.
	if n := uint32(o + opBias); n < uint32(len(opIndex)) {
		return opIndex[n]
	}
	if o >= 500 {
		return extIndex[o]
	}
	return nil
}

// LoggedType is the txn type a write with opcode o is logged under.
func LoggedType(o OpCode) OpCode {
	if r := LookupOp(o); r != nil && r.LoggedAs != 0 {
		return r.LoggedAs
	}
	return o
}

// Ops returns a copy of the opcode table.
func Ops() []OpInfo { return slices.Clone(opTable) }

func (o OpCode) String() string {
	if r := LookupOp(o); r != nil {
		return r.Name
	}
	return fmt.Sprintf("op(%d)", int32(o))
}

// NewRequestBody returns an empty record for the body of a client request with opcode op.
// ok is false for opcodes with no client request layout; body is nil for requests without a
// body (ping, closeSession, whoAmI).
func NewRequestBody(op OpCode) (body Record, ok bool) {
	r := LookupOp(op)
	if r == nil || r.Request == nil {
		return nil, false
	}
	return r.Request(), true
}

// NewTxnBody returns an empty txn record for a txn type, or nil for an unknown type.
func NewTxnBody(t OpCode) Record {
	if r := LookupOp(t); r != nil && r.Txn != nil {
		return r.Txn()
	}
	return nil
}
