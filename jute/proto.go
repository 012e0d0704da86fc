package jute

// ConnectRequest opens or resumes a session. HasReadOnly records whether the readOnly byte
// was present (old clients send 44 bytes); the response mirrors it.
//
// XID64 selects ClickHouse Keeper's layout of a request for ProtocolVersionXID64: a
// Compression byte follows the version. Decode reads ZooKeeper's layout whatever the
// version says (ZooKeeper ignores the version), DecodeXID64 ClickHouse's.
type ConnectRequest struct {
	ProtocolVersion int32
	XID64           bool // ClickHouse's layout (with ProtocolVersionXID64)
	Compression     bool // XID64 only
	LastZxidSeen    int64
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
	HasReadOnly     bool
}

// XID64ConnectUndercount is by how much ClickHouse's client undercounts a version-11
// ConnectRequest's frame: it always writes the length 45 (ZooKeeper's request with its
// readOnly byte) and then sends 46 bytes, the compression byte uncounted; ClickHouse Keeper
// reads the fields from the stream and checks only that the length is 44 or 45
// (KeeperTCPHandler::isHandShake, receiveHandshake). A client that wants ClickHouse Keeper
// to take its request writes the same length, and zkd reads the byte the length leaves out.
const XID64ConnectUndercount = 1

func (r *ConnectRequest) Encode(e *Encoder) {
	e.Int(r.ProtocolVersion)
	if r.XID64 {
		e.Bool(r.Compression)
	}
	e.Long(r.LastZxidSeen)
	e.Int(r.TimeOut)
	e.Long(r.SessionID)
	e.Buffer(r.Passwd)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

func (r *ConnectRequest) Decode(d *Decoder) {
	*r = ConnectRequest{}
	r.ProtocolVersion = d.Int()
	r.LastZxidSeen = d.Long()
	r.TimeOut = d.Int()
	r.SessionID = d.Long()
	r.Passwd = d.Buffer()
	r.HasReadOnly = d.err == nil && d.Remaining() > 0
	if r.HasReadOnly {
		r.ReadOnly = d.Bool()
	}
}

// DecodeXID64 decodes a request in ClickHouse Keeper's version-11 layout, the compression
// byte after the version.
func (r *ConnectRequest) DecodeXID64(d *Decoder) {
	*r = ConnectRequest{XID64: true}
	r.ProtocolVersion = d.Int()
	r.Compression = d.Bool()
	r.LastZxidSeen = d.Long()
	r.TimeOut = d.Int()
	r.SessionID = d.Long()
	r.Passwd = d.Buffer()
	r.HasReadOnly = d.err == nil && d.Remaining() > 0
	if r.HasReadOnly {
		r.ReadOnly = d.Bool()
	}
}

// ConnectResponse answers a ConnectRequest.
type ConnectResponse struct {
	ProtocolVersion int32
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
	HasReadOnly     bool
}

func (r *ConnectResponse) Encode(e *Encoder) {
	e.Int(r.ProtocolVersion)
	e.Int(r.TimeOut)
	e.Long(r.SessionID)
	e.Buffer(r.Passwd)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

func (r *ConnectResponse) Decode(d *Decoder) {
	*r = ConnectResponse{}
	r.ProtocolVersion = d.Int()
	r.TimeOut = d.Int()
	r.SessionID = d.Long()
	r.Passwd = d.Buffer()
	r.HasReadOnly = d.err == nil && d.Remaining() > 0
	if r.HasReadOnly {
		r.ReadOnly = d.Bool()
	}
}

type RequestHeader struct {
	Xid  int32
	Type OpCode
}

func (r *RequestHeader) Encode(e *Encoder) { e.Int(r.Xid); e.Int(int32(r.Type)) }
func (r *RequestHeader) Decode(d *Decoder) { r.Xid = d.Int(); r.Type = OpCode(d.Int()) }

type ReplyHeader struct {
	Xid  int32
	Zxid int64
	Err  Code
}

// ReplyHeaderSize is the encoded size of ReplyHeader.
const ReplyHeaderSize = 16

func (r *ReplyHeader) Encode(e *Encoder) { e.Int(r.Xid); e.Long(r.Zxid); e.Int(int32(r.Err)) }
func (r *ReplyHeader) Decode(d *Decoder) {
	r.Xid = d.Int()
	r.Zxid = d.Long()
	r.Err = Code(d.Int())
}

// RequestHeader64 and ReplyHeader64 are the headers of a session in ProtocolVersionXID64:
// the xid is a long, the special xids (XidNotification, XidPing, XidAuth, XidSetWatches)
// the same values as longs (ClickHouse's ZooKeeperConstants.h: XID is int64_t).
type RequestHeader64 struct {
	Xid  int64
	Type OpCode
}

// RequestHeader64Size is the encoded size of RequestHeader64.
const RequestHeader64Size = 12

func (r *RequestHeader64) Encode(e *Encoder) { e.Long(r.Xid); e.Int(int32(r.Type)) }
func (r *RequestHeader64) Decode(d *Decoder) { r.Xid = d.Long(); r.Type = OpCode(d.Int()) }

type ReplyHeader64 struct {
	Xid  int64
	Zxid int64
	Err  Code
}

// ReplyHeader64Size is the encoded size of ReplyHeader64.
const ReplyHeader64Size = 20

func (r *ReplyHeader64) Encode(e *Encoder) { e.Long(r.Xid); e.Long(r.Zxid); e.Int(int32(r.Err)) }
func (r *ReplyHeader64) Decode(d *Decoder) {
	r.Xid = d.Long()
	r.Zxid = d.Long()
	r.Err = Code(d.Int())
}

type MultiHeader struct {
	Type OpCode
	Done bool
	Err  Code
}

func (r *MultiHeader) Encode(e *Encoder) { e.Int(int32(r.Type)); e.Bool(r.Done); e.Int(int32(r.Err)) }
func (r *MultiHeader) Decode(d *Decoder) {
	r.Type = OpCode(d.Int())
	r.Done = d.Bool()
	r.Err = Code(d.Int())
}

type AuthPacket struct {
	Type   int32
	Scheme string
	Auth   []byte
}

func (r *AuthPacket) Encode(e *Encoder) { e.Int(r.Type); e.String(r.Scheme); e.Buffer(r.Auth) }
func (r *AuthPacket) Decode(d *Decoder) {
	r.Type = d.Int()
	r.Scheme = d.String()
	r.Auth = d.Buffer()
}

// SetWatches is both SetWatches (101) and SetWatches2 (105); the persistent lists are
// encoded only when V2 is set.
type SetWatches struct {
	RelativeZxid               int64
	DataWatches                []string
	ExistWatches               []string
	ChildWatches               []string
	PersistentWatches          []string
	PersistentRecursiveWatches []string
	V2                         bool
}

func (r *SetWatches) Encode(e *Encoder) {
	e.Long(r.RelativeZxid)
	e.Strings(r.DataWatches)
	e.Strings(r.ExistWatches)
	e.Strings(r.ChildWatches)
	if r.V2 {
		e.Strings(r.PersistentWatches)
		e.Strings(r.PersistentRecursiveWatches)
	}
}

func (r *SetWatches) Decode(d *Decoder) {
	r.RelativeZxid = d.Long()
	r.DataWatches = d.Strings()
	r.ExistWatches = d.Strings()
	r.ChildWatches = d.Strings()
	if r.V2 {
		r.PersistentWatches = d.Strings()
		r.PersistentRecursiveWatches = d.Strings()
	}
}

// CreateRequest serves create, create2 and createContainer.
type CreateRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
}

func (r *CreateRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	EncodeACLs(e, r.ACL)
	e.Int(r.Flags)
}

func (r *CreateRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = DecodeACLs(d)
	r.Flags = d.Int()
}

type CreateTTLRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
	TTL   int64
}

func (r *CreateTTLRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	EncodeACLs(e, r.ACL)
	e.Int(r.Flags)
	e.Long(r.TTL)
}

func (r *CreateTTLRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = DecodeACLs(d)
	r.Flags = d.Int()
	r.TTL = d.Long()
}

// PathVersionRequest is DeleteRequest and CheckVersionRequest.
type PathVersionRequest struct {
	Path    string
	Version int32
}

func (r *PathVersionRequest) Encode(e *Encoder) { e.String(r.Path); e.Int(r.Version) }
func (r *PathVersionRequest) Decode(d *Decoder) { r.Path = d.String(); r.Version = d.Int() }

type (
	DeleteRequest       = PathVersionRequest
	CheckVersionRequest = PathVersionRequest
)

// PathWatchRequest is GetDataRequest, ExistsRequest, GetChildrenRequest, GetChildren2Request.
type PathWatchRequest struct {
	Path  string
	Watch bool
}

func (r *PathWatchRequest) Encode(e *Encoder) { e.String(r.Path); e.Bool(r.Watch) }
func (r *PathWatchRequest) Decode(d *Decoder) { r.Path = d.String(); r.Watch = d.Bool() }

type (
	GetDataRequest      = PathWatchRequest
	ExistsRequest       = PathWatchRequest
	GetChildrenRequest  = PathWatchRequest
	GetChildren2Request = PathWatchRequest
)

type SetDataRequest struct {
	Path    string
	Data    []byte
	Version int32
}

func (r *SetDataRequest) Encode(e *Encoder) { e.String(r.Path); e.Buffer(r.Data); e.Int(r.Version) }
func (r *SetDataRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.Version = d.Int()
}

// PathRequest is GetACLRequest, SyncRequest, GetAllChildrenNumberRequest,
// GetEphemeralsRequest, CreateResponse and SyncResponse.
type PathRequest struct {
	Path string
}

func (r *PathRequest) Encode(e *Encoder) { e.String(r.Path) }
func (r *PathRequest) Decode(d *Decoder) { r.Path = d.String() }

type (
	GetACLRequest               = PathRequest
	SyncRequest                 = PathRequest
	SyncResponse                = PathRequest
	GetAllChildrenNumberRequest = PathRequest
	GetEphemeralsRequest        = PathRequest
	CreateResponse              = PathRequest
	DeleteContainerRequest      = PathRequest
)

type SetACLRequest struct {
	Path    string
	ACL     []ACL
	Version int32
}

func (r *SetACLRequest) Encode(e *Encoder) { e.String(r.Path); EncodeACLs(e, r.ACL); e.Int(r.Version) }
func (r *SetACLRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.ACL = DecodeACLs(d)
	r.Version = d.Int()
}

// ReconfigRequest's strings may be null (nil), and ZooKeeper tells the two kinds of
// reconfig apart by it: NewMembers null is an incremental one (JoiningServers,
// LeavingServers), anything else, even "", a bulk one.
type ReconfigRequest struct {
	JoiningServers *string
	LeavingServers *string
	NewMembers     *string
	CurConfigID    int64
}

func (r *ReconfigRequest) Encode(e *Encoder) {
	for _, s := range []*string{r.JoiningServers, r.LeavingServers, r.NewMembers} {
		if s == nil {
			e.Int(-1)
		} else {
			e.String(*s)
		}
	}
	e.Long(r.CurConfigID)
}

func (r *ReconfigRequest) Decode(d *Decoder) {
	for _, p := range []**string{&r.JoiningServers, &r.LeavingServers, &r.NewMembers} {
		*p = nil
		if s, null := d.NullString(); !null {
			*p = &s
		}
	}
	r.CurConfigID = d.Long()
}

// Str is a ReconfigRequest string: s itself, not null.
func Str(s string) *string { return &s }

// StrValue is a ReconfigRequest string's value, "" for null.
func StrValue(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

type AddWatchRequest struct {
	Path string
	Mode int32
}

func (r *AddWatchRequest) Encode(e *Encoder) { e.String(r.Path); e.Int(r.Mode) }
func (r *AddWatchRequest) Decode(d *Decoder) { r.Path = d.String(); r.Mode = d.Int() }

// AddWatchSinceRequest is zkd's addWatchSince (watch-resume extension): an addWatch whose
// server first delivers the events the watch would have fired for every change after
// SinceZxid. SinceZxid -1 asks for no replay.
type AddWatchSinceRequest struct {
	Path      string
	Mode      int32
	SinceZxid int64
}

func (r *AddWatchSinceRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Int(r.Mode)
	e.Long(r.SinceZxid)
}
func (r *AddWatchSinceRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Mode = d.Int()
	r.SinceZxid = d.Long()
}

// AddWatchSinceResponse is addWatchSince's reply body. On success Zxid is the zxid the watch
// was registered at: every matching event up to it was delivered before the reply, every
// later one follows it. With ErrWatchHistoryCompacted (the one error that has a body) Zxid is
// the oldest zxid a resume may still name.
type AddWatchSinceResponse struct {
	Zxid int64
}

func (r *AddWatchSinceResponse) Encode(e *Encoder) { e.Long(r.Zxid) }
func (r *AddWatchSinceResponse) Decode(d *Decoder) { r.Zxid = d.Long() }

// SetMaxBufferRequest is zkd's setMaxBuffer (large-replies extension): the largest frame,
// in bytes, the client asks to read and send on this connection.
type SetMaxBufferRequest struct {
	Limit int32
}

func (r *SetMaxBufferRequest) Encode(e *Encoder) { e.Int(r.Limit) }
func (r *SetMaxBufferRequest) Decode(d *Decoder) { r.Limit = d.Int() }

// SetMaxBufferResponse is setMaxBuffer's reply: the limit granted, never below the server's
// jute.maxbuffer nor above its zkd.maxBufferLimit.
type SetMaxBufferResponse struct {
	Limit int32
}

func (r *SetMaxBufferResponse) Encode(e *Encoder) { e.Int(r.Limit) }
func (r *SetMaxBufferResponse) Decode(d *Decoder) { r.Limit = d.Int() }

// WatchesRequest is CheckWatchesRequest and RemoveWatchesRequest.
type WatchesRequest struct {
	Path string
	Type WatcherType
}

func (r *WatchesRequest) Encode(e *Encoder) { e.String(r.Path); e.Int(int32(r.Type)) }
func (r *WatchesRequest) Decode(d *Decoder) { r.Path = d.String(); r.Type = WatcherType(d.Int()) }

// SASLToken is GetSASLRequest, SetSASLRequest and SetSASLResponse.
type SASLToken struct {
	Token []byte
}

func (r *SASLToken) Encode(e *Encoder) { e.Buffer(r.Token) }
func (r *SASLToken) Decode(d *Decoder) { r.Token = d.Buffer() }

type Create2Response struct {
	Path string
	Stat Stat
}

func (r *Create2Response) Encode(e *Encoder) { e.String(r.Path); r.Stat.Encode(e) }
func (r *Create2Response) Decode(d *Decoder) { r.Path = d.String(); r.Stat.Decode(d) }

// StatResponse is ExistsResponse, SetDataResponse and SetACLResponse.
type StatResponse struct {
	Stat Stat
}

func (r *StatResponse) Encode(e *Encoder) { r.Stat.Encode(e) }
func (r *StatResponse) Decode(d *Decoder) { r.Stat.Decode(d) }

type (
	ExistsResponse  = StatResponse
	SetDataResponse = StatResponse
	SetACLResponse  = StatResponse
)

type GetDataResponse struct {
	Data []byte
	Stat Stat
}

func (r *GetDataResponse) Encode(e *Encoder) { e.Buffer(r.Data); r.Stat.Encode(e) }
func (r *GetDataResponse) Decode(d *Decoder) { r.Data = d.Buffer(); r.Stat.Decode(d) }

// StringsResponse is GetChildrenResponse and GetEphemeralsResponse.
type StringsResponse struct {
	Strings []string
}

func (r *StringsResponse) Encode(e *Encoder) { e.Strings(r.Strings) }
func (r *StringsResponse) Decode(d *Decoder) { r.Strings = d.Strings() }

type (
	GetChildrenResponse   = StringsResponse
	GetEphemeralsResponse = StringsResponse
)

type GetChildren2Response struct {
	Children []string
	Stat     Stat
}

func (r *GetChildren2Response) Encode(e *Encoder) { e.Strings(r.Children); r.Stat.Encode(e) }
func (r *GetChildren2Response) Decode(d *Decoder) { r.Children = d.Strings(); r.Stat.Decode(d) }

type GetACLResponse struct {
	ACL  []ACL
	Stat Stat
}

func (r *GetACLResponse) Encode(e *Encoder) { EncodeACLs(e, r.ACL); r.Stat.Encode(e) }
func (r *GetACLResponse) Decode(d *Decoder) { r.ACL = DecodeACLs(d); r.Stat.Decode(d) }

// IntResponse is GetAllChildrenNumberResponse and ErrorResponse.
type IntResponse struct {
	N int32
}

func (r *IntResponse) Encode(e *Encoder) { e.Int(r.N) }
func (r *IntResponse) Decode(d *Decoder) { r.N = d.Int() }

type (
	GetAllChildrenNumberResponse = IntResponse
	ErrorResponse                = IntResponse
)

type WhoAmIResponse struct {
	ClientInfo []ClientInfo
}

func (r *WhoAmIResponse) Encode(e *Encoder) {
	if r.ClientInfo == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(r.ClientInfo)))
	for i := range r.ClientInfo {
		r.ClientInfo[i].Encode(e)
	}
}

func (r *WhoAmIResponse) Decode(d *Decoder) {
	n := d.vectorLen(8)
	if n < 0 {
		r.ClientInfo = nil
		return
	}
	r.ClientInfo = make([]ClientInfo, n)
	for i := 0; i < n && d.err == nil; i++ {
		r.ClientInfo[i].Decode(d)
	}
}

type WatcherEvent struct {
	Type  EventType
	State State
	Path  string
}

func (r *WatcherEvent) Encode(e *Encoder) {
	e.Int(int32(r.Type))
	e.Int(int32(r.State))
	e.String(r.Path)
}
func (r *WatcherEvent) Decode(d *Decoder) {
	r.Type = EventType(d.Int())
	r.State = State(d.Int())
	r.Path = d.String()
}

// Empty is a record with no fields (replies with no body).
type Empty struct{}

func (Empty) Encode(*Encoder) {}
func (Empty) Decode(*Decoder) {}

// FilteredListRequest is ClickHouse Keeper's FilteredList (500) request: getChildren with a
// filter byte (ClickHouse's ZooKeeperFilteredListRequest::writeImpl in
// src/Common/ZooKeeper/ZooKeeperCommon.cpp: path, has_watch, uint8 list_request_type).
type FilteredListRequest struct {
	Path  string
	Watch bool
	// Type is ListAll, ListPersistentOnly or ListEphemeralOnly (ClickHouse's
	// ListRequestType in src/Common/ZooKeeper/IKeeper.h).
	Type byte
}

// The filters of FilteredListRequest.Type.
const (
	ListAll            byte = 0
	ListPersistentOnly byte = 1
	ListEphemeralOnly  byte = 2
)

func (r *FilteredListRequest) Encode(e *Encoder) { e.String(r.Path); e.Bool(r.Watch); e.Byte(r.Type) }
func (r *FilteredListRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Watch = d.Bool()
	r.Type = d.Byte()
}

// RemoveRecursiveRequest is ClickHouse Keeper's RemoveRecursive (503) request
// (ZooKeeperRemoveRecursiveRequest::writeImpl: path, uint32 remove_nodes_limit, written as
// a big-endian int32 like every jute int).
type RemoveRecursiveRequest struct {
	Path string
	// Limit is the most nodes (the node itself included) the request may delete; a larger
	// subtree fails with NOTEMPTY and deletes nothing.
	Limit uint32
}

func (r *RemoveRecursiveRequest) Encode(e *Encoder) { e.String(r.Path); e.Int(int32(r.Limit)) }
func (r *RemoveRecursiveRequest) Decode(d *Decoder) { r.Path = d.String(); r.Limit = uint32(d.Int()) }

// ListPageRequest is zkd's paged listing (OpListPage): Limit children of Path from one
// consistent view of the tree. The first page has no Cursor, and begins after the child
// StartAfter when it is set (a child of Path in the view); the next pages send the Cursor
// of the page before, and the same Path.
type ListPageRequest struct {
	Path       string
	StartAfter string
	Limit      int32
	WithStat   bool
	Cursor     []byte
}

func (r *ListPageRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.String(r.StartAfter)
	e.Int(r.Limit)
	e.Bool(r.WithStat)
	e.Buffer(r.Cursor)
}

func (r *ListPageRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.StartAfter = d.String()
	r.Limit = d.Int()
	r.WithStat = d.Bool()
	r.Cursor = d.Buffer()
}

// ListPageResponse is a page of a paged listing: the names (and, asked for, the Stats) of
// the children, how many children the node has in the view, whether more follow, the zxid
// of the view, and the Cursor that continues the listing when Truncated.
type ListPageResponse struct {
	Names     []string
	Stats     []Stat
	Total     int32
	Truncated bool
	Zxid      int64
	Cursor    []byte
}

func (r *ListPageResponse) Encode(e *Encoder) {
	e.Strings(r.Names)
	if r.Stats == nil {
		e.Int(-1)
	} else {
		e.Int(int32(len(r.Stats)))
	}
	for i := range r.Stats {
		r.Stats[i].Encode(e)
	}
	e.Int(r.Total)
	e.Bool(r.Truncated)
	e.Long(r.Zxid)
	e.Buffer(r.Cursor)
}

func (r *ListPageResponse) Decode(d *Decoder) {
	r.Names = d.Strings()
	// A Stat is 68 bytes: vectorLen refuses a count the frame cannot hold.
	if n := d.vectorLen(68); n >= 0 {
		r.Stats = make([]Stat, n)
		for i := 0; i < n && d.err == nil; i++ {
			r.Stats[i].Decode(d)
		}
	}
	r.Total = d.Int()
	r.Truncated = d.Bool()
	r.Zxid = d.Long()
	r.Cursor = d.Buffer()
}
