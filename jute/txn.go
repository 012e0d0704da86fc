package jute

import "fmt"

// TxnHeader precedes every logged transaction (32 bytes).
type TxnHeader struct {
	ClientID int64
	Cxid     int32
	Zxid     int64
	Time     int64
	Type     OpCode
}

// TxnHeaderSize is the encoded size of TxnHeader.
const TxnHeaderSize = 32

func (r *TxnHeader) Encode(e *Encoder) {
	e.Long(r.ClientID)
	e.Int(r.Cxid)
	e.Long(r.Zxid)
	e.Long(r.Time)
	e.Int(int32(r.Type))
}

func (r *TxnHeader) Decode(d *Decoder) {
	r.ClientID = d.Long()
	r.Cxid = d.Int()
	r.Zxid = d.Long()
	r.Time = d.Long()
	r.Type = OpCode(d.Int())
}

// TxnDigest is the optional trailer of a logged txn (3.6+): the tree digest after the txn
// is applied. ZooKeeper (and zkd) append it to every txn but error txns.
type TxnDigest struct {
	Version    int32
	TreeDigest int64
}

// DigestVersion is ZooKeeper's DigestCalculator.DIGEST_VERSION: the version of the node
// digest formula (datatree.NodeDigest) that TxnDigest and a snapshot's digest section carry.
// A digest of another version is not compared.
const DigestVersion = 2

func (r *TxnDigest) Encode(e *Encoder) { e.Int(r.Version); e.Long(r.TreeDigest) }
func (r *TxnDigest) Decode(d *Decoder) { r.Version = d.Int(); r.TreeDigest = d.Long() }

// CreateTxn; V0 marks the pre-3.3 form without ParentCVersion.
type CreateTxn struct {
	Path           string
	Data           []byte
	ACL            []ACL
	Ephemeral      bool
	ParentCVersion int32
	V0             bool
}

func (r *CreateTxn) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	EncodeACLs(e, r.ACL)
	e.Bool(r.Ephemeral)
	if !r.V0 {
		e.Int(r.ParentCVersion)
	}
}

func (r *CreateTxn) Decode(d *Decoder) {
	*r = CreateTxn{}
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = DecodeACLs(d)
	r.Ephemeral = d.Bool()
	// A CreateTxnV0 ends here. A trailing TxnDigest is 12 bytes, so exactly 0 or 12
	// remaining bytes mean V0; 4 or 16 mean parentCVersion follows.
	if rem := d.Remaining(); d.err == nil && (rem == 0 || rem == 12) {
		r.V0 = true
		return
	}
	r.ParentCVersion = d.Int()
}

type CreateTTLTxn struct {
	Path           string
	Data           []byte
	ACL            []ACL
	ParentCVersion int32
	TTL            int64
}

func (r *CreateTTLTxn) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	EncodeACLs(e, r.ACL)
	e.Int(r.ParentCVersion)
	e.Long(r.TTL)
}

func (r *CreateTTLTxn) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = DecodeACLs(d)
	r.ParentCVersion = d.Int()
	r.TTL = d.Long()
}

type CreateContainerTxn struct {
	Path           string
	Data           []byte
	ACL            []ACL
	ParentCVersion int32
}

func (r *CreateContainerTxn) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	EncodeACLs(e, r.ACL)
	e.Int(r.ParentCVersion)
}

func (r *CreateContainerTxn) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = DecodeACLs(d)
	r.ParentCVersion = d.Int()
}

// DeleteTxn has only a path.
type DeleteTxn = PathRequest

type SetDataTxn struct {
	Path    string
	Data    []byte
	Version int32
}

func (r *SetDataTxn) Encode(e *Encoder) { e.String(r.Path); e.Buffer(r.Data); e.Int(r.Version) }
func (r *SetDataTxn) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.Version = d.Int()
}

// CheckVersionTxn has the same layout as CheckVersionRequest.
type CheckVersionTxn = PathVersionRequest

type SetACLTxn struct {
	Path    string
	ACL     []ACL
	Version int32
}

func (r *SetACLTxn) Encode(e *Encoder) { e.String(r.Path); EncodeACLs(e, r.ACL); e.Int(r.Version) }
func (r *SetACLTxn) Decode(d *Decoder) {
	r.Path = d.String()
	r.ACL = DecodeACLs(d)
	r.Version = d.Int()
}

type CreateSessionTxn struct {
	TimeOut int32
}

func (r *CreateSessionTxn) Encode(e *Encoder) { e.Int(r.TimeOut) }
func (r *CreateSessionTxn) Decode(d *Decoder) { r.TimeOut = d.Int() }

// CloseSessionTxn lists the ephemerals to delete. NoBody marks the pre-3.6 form, which
// means "delete every ephemeral of the session".
type CloseSessionTxn struct {
	Paths2Delete []string
	NoBody       bool
}

func (r *CloseSessionTxn) Encode(e *Encoder) {
	if !r.NoBody {
		e.Strings(r.Paths2Delete)
	}
}

func (r *CloseSessionTxn) Decode(d *Decoder) {
	*r = CloseSessionTxn{}
	switch d.Remaining() {
	case 0:
		r.NoBody = true
		return
	case 12:
		// Either a bodiless txn followed by a TxnDigest, or a 12-byte body (one 4-byte
		// path) with no digest: the body reading exactly 12 bytes decides.
		probe := Decoder{B: d.Rest()}
		probe.Strings()
		if probe.err != nil || probe.Off != 12 {
			r.NoBody = true
			return
		}
	}
	r.Paths2Delete = d.Strings()
}

// ErrorTxn records a failed write.
type ErrorTxn struct {
	Err Code
}

func (r *ErrorTxn) Encode(e *Encoder) { e.Int(int32(r.Err)) }
func (r *ErrorTxn) Decode(d *Decoder) { r.Err = Code(d.Int()) }

// Txn is one sub-transaction of a MultiTxn: its type and its serialized record.
type Txn struct {
	Type OpCode
	Data []byte
}

func (r *Txn) Encode(e *Encoder) { e.Int(int32(r.Type)); e.Buffer(r.Data) }
func (r *Txn) Decode(d *Decoder) { r.Type = OpCode(d.Int()); r.Data = d.Buffer() }

type MultiTxn struct {
	Txns []Txn
}

func (r *MultiTxn) Encode(e *Encoder) {
	e.Int(int32(len(r.Txns)))
	for i := range r.Txns {
		r.Txns[i].Encode(e)
	}
}

func (r *MultiTxn) Decode(d *Decoder) {
	n := d.vectorLen(8)
	if n < 0 {
		// A null vector reads as empty: we always write a count, as Java does, since
		// Java's processTxn cannot take a null list.
		r.Txns = []Txn{}
		return
	}
	r.Txns = make([]Txn, n)
	for i := 0; i < n && d.err == nil; i++ {
		r.Txns[i].Decode(d)
	}
}

// LoggedTxn is a decoded log entry: header, body and optional digest.
type LoggedTxn struct {
	Header TxnHeader
	Body   Record
	Digest *TxnDigest
}

// DecodeTxn decodes the txn bytes of a log entry or PROPOSAL (TxnHeader + txn [+ digest]).
func DecodeTxn(b []byte) (LoggedTxn, error) {
	var t LoggedTxn
	d := Decoder{B: b}
	t.Header.Decode(&d)
	if d.err != nil {
		return t, d.err
	}
	t.Body = NewTxnBody(t.Header.Type)
	if t.Body == nil {
		return t, fmt.Errorf("jute: unknown txn type %v", t.Header.Type)
	}
	t.Body.Decode(&d)
	if d.err != nil {
		return t, d.err
	}
	if d.Remaining() >= 12 {
		t.Digest = &TxnDigest{}
		t.Digest.Decode(&d)
	}
	if d.Remaining() != 0 {
		return t, fmt.Errorf("jute: %d trailing bytes in %v txn", d.Remaining(), t.Header.Type)
	}
	return t, nil
}

// EncodeTxn appends a txn's bytes (header, body, optional digest) to buf.
func EncodeTxn(buf []byte, t *LoggedTxn) []byte {
	e := Encoder{Buf: buf}
	t.Header.Encode(&e)
	t.Body.Encode(&e)
	if t.Digest != nil {
		t.Digest.Encode(&e)
	}
	return e.Buf
}

// FileHeader starts txn logs ("ZKLG") and snapshots ("ZKSN").
type FileHeader struct {
	Magic   int32
	Version int32
	DBID    int64
}

const (
	LogMagic  int32 = 0x5a4b4c47 // "ZKLG"
	SnapMagic int32 = 0x5a4b534e // "ZKSN"
)

func (r *FileHeader) Encode(e *Encoder) { e.Int(r.Magic); e.Int(r.Version); e.Long(r.DBID) }
func (r *FileHeader) Decode(d *Decoder) {
	r.Magic = d.Int()
	r.Version = d.Int()
	r.DBID = d.Long()
}

// QuorumPacket is the unit of the leader/learner stream (no length prefix).
type QuorumPacket struct {
	Type     int32
	Zxid     int64
	Data     []byte
	AuthInfo []ID
}

func (r *QuorumPacket) Encode(e *Encoder) {
	e.Int(r.Type)
	e.Long(r.Zxid)
	e.Buffer(r.Data)
	EncodeIDs(e, r.AuthInfo)
}

func (r *QuorumPacket) Decode(d *Decoder) {
	r.Type = d.Int()
	r.Zxid = d.Long()
	r.Data = d.Buffer()
	r.AuthInfo = DecodeIDs(d)
}

type LearnerInfo struct {
	ServerID        int64
	ProtocolVersion int32
	ConfigVersion   int64
}

func (r *LearnerInfo) Encode(e *Encoder) {
	e.Long(r.ServerID)
	e.Int(r.ProtocolVersion)
	e.Long(r.ConfigVersion)
}

func (r *LearnerInfo) Decode(d *Decoder) {
	r.ServerID = d.Long()
	r.ProtocolVersion = d.Int()
	r.ConfigVersion = d.Long()
}
