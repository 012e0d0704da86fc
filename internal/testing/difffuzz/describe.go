package difffuzz

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/zkd-io/zkd/jute"
)

// Describe renders the step for people: the decoded request, or what the step does.
func (s *Step) Describe() string {
	switch s.Kind {
	case Open, Reconnect, Drop:
		return ""
	case Batch:
		frames, err := SplitFrames(s.Body)
		if err != nil {
			return err.Error()
		}
		parts := make([]string, len(frames))
		for i, f := range frames {
			st := Step{Kind: Request, Op: jute.OpCode(int32(binary.BigEndian.Uint32(f[4:]))), Body: f[8:]}
			parts[i] = st.Describe()
		}
		return "batch: " + strings.Join(parts, "; ")
	case Raw:
		if s.RawWire {
			return fmt.Sprintf("%d bytes on the wire", len(s.Body))
		}
		if len(s.Body) >= 8 {
			d := jute.NewDecoder(s.Body)
			var h jute.RequestHeader
			h.Decode(d)
			return fmt.Sprintf("frame: xid %d %v, %d body bytes", h.Xid, h.Type, d.Remaining())
		}
		return fmt.Sprintf("frame of %d bytes", len(s.Body))
	}
	rec, ok := s.Decode()
	if !ok {
		return fmt.Sprintf("%v with an undecodable body (%d bytes)", s.Op, len(s.Body))
	}
	if rec == nil {
		return s.Op.String()
	}
	return s.Op.String() + " " + describeRecord(rec)
}

func describeRecord(rec jute.Record) string {
	switch r := rec.(type) {
	case *jute.CreateRequest:
		return fmt.Sprintf("%q %s acl=%s flags=%d", r.Path, Data(r.Data), ACLs(r.ACL), r.Flags)
	case *jute.CreateTTLRequest:
		return fmt.Sprintf("%q %s acl=%s flags=%d ttl=%d", r.Path, Data(r.Data), ACLs(r.ACL), r.Flags, r.TTL)
	case *jute.PathVersionRequest:
		return fmt.Sprintf("%q v=%d", r.Path, r.Version)
	case *jute.PathWatchRequest:
		return fmt.Sprintf("%q watch=%v", r.Path, r.Watch)
	case *jute.SetDataRequest:
		return fmt.Sprintf("%q %s v=%d", r.Path, Data(r.Data), r.Version)
	case *jute.PathRequest:
		return fmt.Sprintf("%q", r.Path)
	case *jute.SetACLRequest:
		return fmt.Sprintf("%q acl=%s v=%d", r.Path, ACLs(r.ACL), r.Version)
	case *jute.AddWatchRequest:
		return fmt.Sprintf("%q mode=%d", r.Path, r.Mode)
	case *jute.WatchesRequest:
		return fmt.Sprintf("%q type=%d", r.Path, r.Type)
	case *jute.AuthPacket:
		return fmt.Sprintf("type=%d %s:%s", r.Type, r.Scheme, Data(r.Auth))
	case *jute.SASLToken:
		return Data(r.Token)
	case *jute.SetWatches:
		return fmt.Sprintf("rel=%d data=%q exist=%q child=%q persistent=%q recursive=%q",
			r.RelativeZxid, r.DataWatches, r.ExistWatches, r.ChildWatches, r.PersistentWatches, r.PersistentRecursiveWatches)
	case *jute.ReconfigRequest:
		return fmt.Sprintf("join=%q leave=%q members=%q config=%d", jute.StrValue(r.JoiningServers), jute.StrValue(r.LeavingServers), jute.StrValue(r.NewMembers), r.CurConfigID)
	case *jute.MultiRequest:
		parts := make([]string, len(r.Ops))
		for i, op := range r.Ops {
			parts[i] = op.Type.String() + " " + describeRecord(op.Body)
		}
		return "[" + strings.Join(parts, "; ") + "]"
	}
	return fmt.Sprintf("%+v", rec)
}
