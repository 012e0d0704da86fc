package server

import (
	"encoding/binary"
	"time"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/jute"
)

// Paged listing (ext.PagedList, docs/beyond.md): a node's children a page at a time, every
// page read from one view of the tree (datatree.View) captured when the listing began, so
// the pages together are exactly the children at the view's zxid, however the tree changes
// between them. A view costs the core one pointer per page of nodes to capture and nothing
// while the tree is unchanged; the pages a write copies while a view holds the old ones are
// its only cost, and a view unused for listViewIdle is dropped.

const (
	// maxListPage bounds a page: 10,000 names of ZooKeeper's usual sizes stay well under
	// jute.maxbuffer.
	maxListPage = 10000
	// maxListViews bounds the views held at once; the least recently used goes first.
	maxListViews = 16
	// listViewIdle is how long a view is kept after its last page.
	listViewIdle = time.Minute
	// listCursorLen is a cursor's size: the view's zxid, the node's id, the next position.
	listCursorLen = 16
)

// listView is a view held for the listings reading it.
type listView struct {
	v        *datatree.View
	lastUsed time.Time
}

func (s *Server) listPage(c *conn, xid int32, b *jute.ListPageRequest) {
	res, code := s.readListPage(c, b)
	s.reply(c, xid, code, res)
}

func (s *Server) readListPage(c *conn, b *jute.ListPageRequest) (*jute.ListPageResponse, jute.Code) {
	if b.Limit <= 0 || b.Limit > maxListPage {
		return nil, jute.ErrBadArguments
	}
	path := b.Path
	if path == "" {
		path = "/"
	}
	var (
		lv     *listView
		parent datatree.NodeID
		from   int
	)
	if len(b.Cursor) == 0 {
		n, found := s.node(path)
		if !found {
			return nil, jute.ErrNoNode
		}
		if !s.canRead(c, n.ACL, jute.PermRead) {
			return nil, jute.ErrNoAuth
		}
		lv = s.viewNow()
		parent, _ = s.tree.ID(path)
		if b.StartAfter != "" {
			// The view is the tree as it is now: the child's id is the view's.
			id, ok := s.tree.ID(datatree.Join(path, b.StartAfter))
			par, pos, listed := lv.v.Position(id)
			if !ok || !listed || par != parent {
				return nil, jute.ErrBadArguments
			}
			from = pos + 1
		}
	} else {
		if len(b.Cursor) != listCursorLen {
			return nil, jute.ErrBadArguments
		}
		zxid := int64(binary.BigEndian.Uint64(b.Cursor))
		parent = datatree.NodeID(binary.BigEndian.Uint32(b.Cursor[8:]))
		from = int(binary.BigEndian.Uint32(b.Cursor[12:]))
		if lv = s.listViews[zxid]; lv == nil {
			return nil, jute.ErrListViewExpired
		}
		if !lv.v.Holds(parent, path) {
			return nil, jute.ErrBadArguments
		}
		// The node's ACL as the view has it: the listing reads the view.
		if !s.canReadIn(lv.v, c, lv.v.ACLKey(parent)) {
			return nil, jute.ErrNoAuth
		}
	}
	lv.lastUsed = s.clk.Now()
	ids, total := lv.v.ChildPage(parent, from, int(b.Limit))
	res := &jute.ListPageResponse{Names: make([]string, len(ids)), Total: int32(total), Zxid: lv.v.LastZxid()}
	if b.WithStat {
		res.Stats = make([]jute.Stat, len(ids))
	}
	for i, id := range ids {
		res.Names[i] = lv.v.Name(id)
		// A child's Stat is its READ's: a child the session may not read lists its name
		// (the parent's READ shows names) with a zero Stat.
		if b.WithStat && s.canReadIn(lv.v, c, lv.v.ACLKey(id)) {
			res.Stats[i] = lv.v.StatOf(id)
		}
	}
	if next := from + len(ids); next < total {
		res.Truncated = true
		res.Cursor = make([]byte, listCursorLen)
		binary.BigEndian.PutUint64(res.Cursor, uint64(lv.v.LastZxid()))
		binary.BigEndian.PutUint32(res.Cursor[8:], uint32(parent))
		binary.BigEndian.PutUint32(res.Cursor[12:], uint32(next))
	}
	return res, jute.OK
}

// canReadIn checks READ against an ACL key of a view, in the view's ACL table.
func (s *Server) canReadIn(v *datatree.View, c *conn, key int64) bool {
	if s.cfg.SkipACL {
		return true
	}
	acl := jute.OpenACLUnsafe
	if key != datatree.OpenACLKey {
		acl = v.ACLs()[key]
	}
	return s.cfg.AuthProviders.Check(acl, jute.PermRead, c.authIDs)
}

// viewNow returns a view of the tree as it is now: the one held for the tree's last zxid,
// or a new capture.
func (s *Server) viewNow() *listView {
	zxid := s.tree.LastZxid()
	if lv := s.listViews[zxid]; lv != nil {
		return lv
	}
	if s.listViews == nil {
		s.listViews = make(map[int64]*listView)
	}
	if len(s.listViews) >= maxListViews {
		var oldest int64
		var at time.Time
		for z, lv := range s.listViews {
			if at.IsZero() || lv.lastUsed.Before(at) {
				oldest, at = z, lv.lastUsed
			}
		}
		delete(s.listViews, oldest)
	}
	lv := &listView{v: s.tree.Capture(), lastUsed: s.clk.Now()}
	s.listViews[zxid] = lv
	return lv
}

// expireListViews drops the views no listing read for listViewIdle.
func (s *Server) expireListViews(now time.Time) {
	for z, lv := range s.listViews {
		if now.Sub(lv.lastUsed) > listViewIdle {
			delete(s.listViews, z)
		}
	}
}
