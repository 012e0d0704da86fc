package difffuzz

import (
	"crypto/sha1"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// Norm turns the values that legitimately differ between two servers (zxids, session ids,
// times) into comparable text: zxids relative to a base (the last zxid before the program,
// so a server that consumes one zxid more or less shows it), session ids by the label of
// the session that got them, times by how they relate to each other.
type Norm struct {
	Base   int64            // zxids above it are shown as z+N; others as they are, or "old"
	Owners map[int64]string // session id -> label
	// ShowOld shows zxids up to Base as z-N too. The fuzzer leaves it off: earlier
	// programs' accepted differences may have used different numbers of zxids.
	ShowOld bool
}

// Z renders a zxid.
func (n *Norm) Z(v int64) string {
	switch {
	case v <= 0:
		return fmt.Sprint(v)
	case v <= n.Base && !n.ShowOld:
		return "old"
	}
	return fmt.Sprintf("z%+d", v-n.Base)
}

// Owner renders a session id (an ephemeral owner).
func (n *Norm) Owner(v int64) string {
	if v == 0 {
		return "0"
	}
	if name, ok := n.Owners[v]; ok {
		return "sess(" + name + ")"
	}
	return fmt.Sprintf("unknown(%#x)", v)
}

// times checks ctime/mtime without comparing their values: both zero for the built-in
// nodes, ctime recent, ctime == mtime while the node was never written, mtime >= ctime after.
func times(st *jute.Stat) string {
	if st.Ctime == 0 && st.Mtime == 0 {
		return "t0"
	}
	now := time.Now().UnixMilli()
	if d := now - st.Ctime; d < -10*60*1000 || d > 24*60*60*1000 {
		return fmt.Sprintf("ctime-not-recent(%d)", st.Ctime)
	}
	if st.Mzxid == st.Czxid {
		if st.Ctime != st.Mtime {
			return "ctime!=mtime"
		}
		return "c=m"
	}
	if st.Mtime < st.Ctime {
		return "mtime<ctime"
	}
	return "m>=c"
}

// Stat renders a Stat.
func (n *Norm) Stat(st *jute.Stat) string {
	return fmt.Sprintf("{cz=%s mz=%s pz=%s v=%d cv=%d av=%d eph=%s len=%d nc=%d %s}",
		n.Z(st.Czxid), n.Z(st.Mzxid), n.Z(st.Pzxid), st.Version, st.Cversion, st.Aversion,
		n.Owner(st.EphemeralOwner), st.DataLength, st.NumChildren, times(st))
}

// Data renders znode data: quoted when short, by length and digest when long.
func Data(b []byte) string {
	if b == nil {
		return "null"
	}
	if len(b) > 64 {
		return fmt.Sprintf("%d bytes sha1=%x", len(b), sha1.Sum(b))
	}
	return fmt.Sprintf("%q", b)
}

// ACLs renders an ACL list.
func ACLs(v []jute.ACL) string {
	if v == nil {
		return "null"
	}
	parts := make([]string, len(v))
	for i, a := range v {
		parts[i] = fmt.Sprintf("%d:%s:%s", a.Perms, a.ID.Scheme, a.ID.ID)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// sortedList renders a list whose order the protocol leaves open (children).
func sortedList(v []string) string {
	if v == nil {
		return "null"
	}
	s := append([]string(nil), v...)
	sort.Strings(s)
	return fmt.Sprintf("%q", s)
}

// respFor is the reply body record of a successful request, nil for replies without a body.
func respFor(op jute.OpCode) jute.Record {
	switch op {
	case jute.OpCreate, jute.OpSync, jute.OpCreateIfNotExists:
		return &jute.PathRequest{}
	case jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL, jute.OpCreateWithParents:
		return &jute.Create2Response{}
	case jute.OpExists, jute.OpSetData, jute.OpSetACL:
		return &jute.StatResponse{}
	case jute.OpGetData, jute.OpReconfig:
		return &jute.GetDataResponse{}
	case jute.OpGetACL:
		return &jute.GetACLResponse{}
	case jute.OpGetChildren, jute.OpGetEphemerals:
		return &jute.StringsResponse{}
	case jute.OpGetChildren2, jute.OpFilteredList:
		return &jute.GetChildren2Response{}
	case jute.OpGetAllChildrenNumber, jute.OpAddWatch:
		return &jute.IntResponse{}
	case jute.OpWhoAmI:
		return &jute.WhoAmIResponse{}
	case jute.OpListPage:
		return &jute.ListPageResponse{}
	case jute.OpAddWatchSince:
		return &jute.AddWatchSinceResponse{}
	case jute.OpSetMaxBuffer:
		return &jute.SetMaxBufferResponse{}
	case jute.OpSASL:
		return &jute.SASLToken{}
	}
	return nil
}

// Body renders a reply body. Multi replies are decoded by hand so that a result whose
// MultiHeader.err and ErrorResponse disagree shows both.
func (n *Norm) Body(op jute.OpCode, b []byte) string {
	if op == jute.OpMulti || op == jute.OpMultiRead {
		return n.multi(b)
	}
	rec := respFor(op)
	if rec == nil {
		if len(b) != 0 {
			return fmt.Sprintf("unexpected body % x", b)
		}
		return ""
	}
	d := jute.NewDecoder(b)
	rec.Decode(d)
	if d.Err() != nil {
		return fmt.Sprintf("undecodable %T body % x: %v", rec, b, d.Err())
	}
	s := n.Record(rec)
	if d.Remaining() != 0 {
		s += fmt.Sprintf(" +%d trailing bytes", d.Remaining())
	}
	return s
}

// Record renders a decoded reply record.
func (n *Norm) Record(rec jute.Record) string {
	switch r := rec.(type) {
	case *jute.PathRequest:
		return fmt.Sprintf("path=%q", r.Path)
	case *jute.Create2Response:
		return fmt.Sprintf("path=%q stat=%s", r.Path, n.Stat(&r.Stat))
	case *jute.StatResponse:
		return "stat=" + n.Stat(&r.Stat)
	case *jute.GetDataResponse:
		return fmt.Sprintf("data=%s stat=%s", Data(r.Data), n.Stat(&r.Stat))
	case *jute.GetACLResponse:
		return fmt.Sprintf("acl=%s stat=%s", ACLs(r.ACL), n.Stat(&r.Stat))
	case *jute.StringsResponse:
		return "list=" + sortedList(r.Strings)
	case *jute.GetChildren2Response:
		return fmt.Sprintf("children=%s stat=%s", sortedList(r.Children), n.Stat(&r.Stat))
	case *jute.IntResponse:
		return fmt.Sprintf("int=%d", r.N)
	case *jute.ListPageResponse:
		// The view's zxid is the reply header's here (a fresh listing): the header shows it.
		return fmt.Sprintf("names=%s stats=%d total=%d truncated=%v", sortedList(r.Names), len(r.Stats), r.Total, r.Truncated)
	case *jute.SASLToken:
		return "token=" + Data(r.Token)
	case *jute.WhoAmIResponse:
		parts := make([]string, len(r.ClientInfo))
		for i, ci := range r.ClientInfo {
			parts[i] = fmt.Sprintf("%s:%q", ci.AuthScheme, ci.User)
		}
		sort.Strings(parts) // the order of a session's ids is not part of the protocol
		return "whoami=[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprintf("%+v", rec)
}

func (n *Norm) multi(b []byte) string {
	d := jute.NewDecoder(b)
	var parts []string
	for i := 0; ; i++ {
		var h jute.MultiHeader
		h.Decode(d)
		if d.Err() != nil {
			return fmt.Sprintf("multi%v; undecodable at result %d: % x", parts, i, b)
		}
		if h.Done {
			if h.Type != -1 || h.Err != -1 {
				parts = append(parts, fmt.Sprintf("end{type=%d err=%d}", h.Type, h.Err))
			}
			break
		}
		var rec jute.Record
		switch h.Type {
		case jute.OpError:
			code := jute.Code(d.Int())
			if code != h.Err {
				parts = append(parts, fmt.Sprintf("error(hdr=%d body=%d)", h.Err, code))
			} else {
				parts = append(parts, fmt.Sprintf("error(%d)", code))
			}
			continue
		case jute.OpCreate:
			rec = &jute.PathRequest{}
		case jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
			rec = &jute.Create2Response{}
		case jute.OpSetData:
			rec = &jute.StatResponse{}
		case jute.OpGetData:
			rec = &jute.GetDataResponse{}
		case jute.OpGetChildren:
			rec = &jute.StringsResponse{}
		case jute.OpDelete, jute.OpCheck:
		default:
			return fmt.Sprintf("multi%v; unknown result type %d", parts, h.Type)
		}
		s := fmt.Sprintf("%v", h.Type)
		if h.Err != 0 {
			s += fmt.Sprintf("(hdr.err=%d)", h.Err)
		}
		if rec != nil {
			rec.Decode(d)
			if d.Err() != nil {
				return fmt.Sprintf("multi%v; undecodable %v result", parts, h.Type)
			}
			s += " " + n.Record(rec)
		}
		parts = append(parts, s)
	}
	s := "results=[" + strings.Join(parts, ", ") + "]"
	if d.Remaining() != 0 {
		s += fmt.Sprintf(" +%d trailing bytes", d.Remaining())
	}
	return s
}

// Event renders one notification.
func (n *Norm) Event(who string, ev jute.WatcherEvent, zxid int64) string {
	s := fmt.Sprintf("%s event: %v %s", who, ev.Type, ev.Path)
	if ev.State != jute.StateSyncConnected {
		s += fmt.Sprintf(" state=%d", ev.State)
	}
	// ZooKeeper 3.8 sends -1; 3.9 the zxid of the change. Shown when not -1 so that a
	// difference is visible either way.
	if zxid != -1 {
		s += " zxid=" + n.Z(zxid)
	}
	return s
}

// Reply renders a reply header and body.
func (n *Norm) Reply(op jute.OpCode, h jute.ReplyHeader, b []byte) string {
	s := fmt.Sprintf("err=%d zxid=%s", h.Err, n.Z(h.Zxid))
	if h.Err == 0 || ((op == jute.OpMulti || op == jute.OpMultiRead) && len(b) > 0) {
		if body := n.Body(op, b); body != "" {
			s += " " + body
		}
	} else if len(b) != 0 {
		s += fmt.Sprintf(" error body % x", b)
	}
	return s
}
