package jute

import "encoding/binary"

// ID is org.apache.zookeeper.data.Id.
type ID struct {
	Scheme string
	ID     string
}

func (r *ID) Encode(e *Encoder) { e.String(r.Scheme); e.String(r.ID) }
func (r *ID) Decode(d *Decoder) { r.Scheme = d.String(); r.ID = d.String() }

// ACL is one access control entry.
type ACL struct {
	Perms int32
	ID    ID
}

func (r *ACL) Encode(e *Encoder) { e.Int(r.Perms); r.ID.Encode(e) }
func (r *ACL) Decode(d *Decoder) { r.Perms = d.Int(); r.ID.Decode(d) }

// EncodeACLs writes a vector<ACL>; nil is null.
func EncodeACLs(e *Encoder, v []ACL) {
	if v == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(v)))
	for i := range v {
		v[i].Encode(e)
	}
}

// DecodeACLs reads a vector<ACL>; null is nil.
func DecodeACLs(d *Decoder) []ACL {
	n := d.vectorLen(12)
	if n < 0 {
		return nil
	}
	v := make([]ACL, n)
	for i := 0; i < n && d.err == nil; i++ {
		v[i].Decode(d)
	}
	return v
}

// EncodeIDs writes a vector<Id>; nil is null.
func EncodeIDs(e *Encoder, v []ID) {
	if v == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(v)))
	for i := range v {
		v[i].Encode(e)
	}
}

// DecodeIDs reads a vector<Id>; null is nil.
func DecodeIDs(d *Decoder) []ID {
	n := d.vectorLen(8)
	if n < 0 {
		return nil
	}
	v := make([]ID, n)
	for i := 0; i < n && d.err == nil; i++ {
		v[i].Decode(d)
	}
	return v
}

// Stat is the client-visible node metadata (68 bytes).
type Stat struct {
	Czxid          int64
	Mzxid          int64
	Ctime          int64
	Mtime          int64
	Version        int32
	Cversion       int32
	Aversion       int32
	EphemeralOwner int64
	DataLength     int32
	NumChildren    int32
	Pzxid          int64
}

// StatSize is the encoded size of Stat.
const StatSize = 68

func (r *Stat) Encode(e *Encoder) {
	e.Long(r.Czxid)
	e.Long(r.Mzxid)
	e.Long(r.Ctime)
	e.Long(r.Mtime)
	e.Int(r.Version)
	e.Int(r.Cversion)
	e.Int(r.Aversion)
	e.Long(r.EphemeralOwner)
	e.Int(r.DataLength)
	e.Int(r.NumChildren)
	e.Long(r.Pzxid)
}

func (r *Stat) Decode(d *Decoder) {
	r.Czxid = d.Long()
	r.Mzxid = d.Long()
	r.Ctime = d.Long()
	r.Mtime = d.Long()
	r.Version = d.Int()
	r.Cversion = d.Int()
	r.Aversion = d.Int()
	r.EphemeralOwner = d.Long()
	r.DataLength = d.Int()
	r.NumChildren = d.Int()
	r.Pzxid = d.Long()
}

// StatPersisted is the stored node metadata (60 bytes): Stat without dataLength and
// numChildren, with the stored (creation-count) cversion.
type StatPersisted struct {
	Czxid          int64
	Mzxid          int64
	Ctime          int64
	Mtime          int64
	Version        int32
	Cversion       int32
	Aversion       int32
	EphemeralOwner int64
	Pzxid          int64
}

func (r *StatPersisted) Encode(e *Encoder) {
	e.Long(r.Czxid)
	e.Long(r.Mzxid)
	e.Long(r.Ctime)
	e.Long(r.Mtime)
	e.Int(r.Version)
	e.Int(r.Cversion)
	e.Int(r.Aversion)
	e.Long(r.EphemeralOwner)
	e.Long(r.Pzxid)
}

// StatPersistedSize is the encoded size of StatPersisted.
const StatPersistedSize = 60

func (r *StatPersisted) Decode(d *Decoder) {
	if d.err == nil && len(d.B)-d.Off >= StatPersistedSize {
		// One bounds check for the record instead of one a field: a snapshot's load
		// decodes one of these per node.
		b := d.B[d.Off : d.Off+StatPersistedSize]
		d.Off += StatPersistedSize
		r.Czxid = int64(binary.BigEndian.Uint64(b[0:]))
		r.Mzxid = int64(binary.BigEndian.Uint64(b[8:]))
		r.Ctime = int64(binary.BigEndian.Uint64(b[16:]))
		r.Mtime = int64(binary.BigEndian.Uint64(b[24:]))
		r.Version = int32(binary.BigEndian.Uint32(b[32:]))
		r.Cversion = int32(binary.BigEndian.Uint32(b[36:]))
		r.Aversion = int32(binary.BigEndian.Uint32(b[40:]))
		r.EphemeralOwner = int64(binary.BigEndian.Uint64(b[44:]))
		r.Pzxid = int64(binary.BigEndian.Uint64(b[52:]))
		return
	}
	r.Czxid = d.Long()
	r.Mzxid = d.Long()
	r.Ctime = d.Long()
	r.Mtime = d.Long()
	r.Version = d.Int()
	r.Cversion = d.Int()
	r.Aversion = d.Int()
	r.EphemeralOwner = d.Long()
	r.Pzxid = d.Long()
}

// ClientInfo is one entry of a whoAmI reply.
type ClientInfo struct {
	AuthScheme string
	User       string
}

func (r *ClientInfo) Encode(e *Encoder) { e.String(r.AuthScheme); e.String(r.User) }
func (r *ClientInfo) Decode(d *Decoder) { r.AuthScheme = d.String(); r.User = d.String() }
