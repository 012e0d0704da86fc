package server

import (
	"errors"
	"strings"

	"github.com/zkd-io/zkd/internal/auth"
	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/internal/watch"
	"github.com/zkd-io/zkd/jute"
)

func (s *Server) reply(c *conn, xid int32, err jute.Code, body jute.Record) {
	if err != jute.OK {
		body = nil
	}
	m := outMsg{hdr: jute.ReplyHeader{Xid: xid, Zxid: s.tree.LastZxid(), Err: err}, body: body}
	// size is an estimate: anything near the limit is measured exactly.
	if body != nil && m.size()+256 > s.replyLimit(c) && s.refuseBigReply(c, &m) {
		m.hdr.Err, m.body = jute.ErrReplyTooLarge, nil
	}
	c.send(m)
}

func (s *Server) watcherOf(c *conn) watch.WatcherID {
	if !c.hasWatch {
		s.nextWatcher++
		c.watcher = s.nextWatcher
		c.hasWatch = true
		s.watchConns[c.watcher] = c
	}
	return c.watcher
}

func (s *Server) canRead(c *conn, aclKey int64, perm int32) bool {
	return s.cfg.SkipACL || s.cfg.AuthProviders.Check(s.tree.ACL(aclKey), perm, c.authIDs)
}

// node looks up a path for a read. ZooKeeper's tree holds the root under both "" and "/",
// so a read of "" sees the root.
func (s *Server) node(path string) (datatree.Node, bool) {
	if path == "" {
		path = "/"
	}
	return s.tree.Lookup(path)
}

// doRead answers a request that does not change the tree.
func (s *Server) doRead(c *conn, r *request) {
	xid := r.hdr.Xid
	if r.keeperRead && c.sess != nil && c.sess.keeperClient {
		r.bodyErr = nil
	}
	if r.bodyErr != nil {
		var body jute.Record
		if errors.Is(r.bodyErr, errMultiReadOfWrites) {
			body = &jute.MultiResponse{}
		}
		c.send(outMsg{hdr: jute.ReplyHeader{Xid: xid, Zxid: s.tree.LastZxid(), Err: jute.ErrMarshallingError}, body: body})
		return
	}
	s.recordLatency(c, r)
	s.reading = r
	defer func() { s.reading = nil }()
	switch r.hdr.Type {
	case jute.OpCloseSession: // a local session's (localsess.go)
		s.closeLocal(c, r)
	case jute.OpPing:
		// ZooKeeper answers every ping with the ping xid, whatever xid it came with.
		s.reply(c, jute.XidPing, jute.OK, nil)
	case jute.OpExists:
		b := r.body.(*jute.PathWatchRequest)
		if strings.IndexByte(b.Path, 0) >= 0 {
			// FinalRequestProcessor refuses a NUL in an exists path, and only there.
			s.reply(c, xid, jute.ErrBadArguments, nil)
			return
		}
		n, found := s.lookup(b.Path)
		if found && !s.canRead(c, n.ACL, jute.PermRead) {
			s.reply(c, xid, jute.ErrNoAuth, nil)
			return
		}
		if b.Watch {
			// An exists watch on a missing node waits for its creation.
			s.watches.Add(s.watcherOf(c), b.Path, watch.Data)
		}
		if !found {
			s.reply(c, xid, jute.ErrNoNode, nil)
			return
		}
		s.cfg.Metrics.NamespaceRead(b.Path, 0)
		s.reply(c, xid, jute.OK, &jute.StatResponse{Stat: s.tree.StatOf(&n)})
	case jute.OpGetData:
		b := r.body.(*jute.PathWatchRequest)
		s.noteKeeperClient(c, b.Path)
		res, code := s.getData(c, b.Path, b.Watch, &r.getResp)
		s.reply(c, xid, code, res)
	case jute.OpGetChildren, jute.OpGetChildren2:
		b := r.body.(*jute.PathWatchRequest)
		n, found := s.lookup(b.Path)
		if !found {
			s.reply(c, xid, jute.ErrNoNode, nil)
			return
		}
		if !s.canRead(c, n.ACL, jute.PermRead) {
			s.reply(c, xid, jute.ErrNoAuth, nil)
			return
		}
		if b.Watch {
			s.watches.Add(s.watcherOf(c), b.Path, watch.Child)
		}
		children := s.readChildren(b.Path, &n)
		if r.hdr.Type == jute.OpGetChildren {
			s.reply(c, xid, jute.OK, &jute.GetChildrenResponse{Strings: children})
		} else {
			st := s.tree.StatOf(&n)
			if b.Path == "/" || b.Path == "" {
				// The root counts a listed virtual /keeper, as ClickHouse Keeper's does (the
				// virtual /keeper's own Stat stays ClickHouse Keeper's zeros).
				st.NumChildren = int32(len(children))
			}
			s.reply(c, xid, jute.OK, &jute.GetChildren2Response{Children: children, Stat: st})
		}
	case jute.OpGetACL:
		b := r.body.(*jute.PathRequest)
		n, found := s.lookup(b.Path)
		if !found {
			s.reply(c, xid, jute.ErrNoNode, nil)
			return
		}
		if !s.canRead(c, n.ACL, jute.PermRead|jute.PermAdmin) {
			s.reply(c, xid, jute.ErrNoAuth, nil)
			return
		}
		acl := s.tree.ACL(n.ACL)
		if !s.canRead(c, n.ACL, jute.PermAdmin) {
			acl = auth.MaskDigests(acl)
		}
		s.reply(c, xid, jute.OK, &jute.GetACLResponse{ACL: acl, Stat: s.tree.StatOf(&n)})
	case jute.OpSync:
		b := r.body.(*jute.PathRequest)
		s.reply(c, xid, jute.OK, &jute.SyncResponse{Path: b.Path})
	case jute.OpGetAllChildrenNumber:
		b := r.body.(*jute.PathRequest)
		n, found := s.node(b.Path)
		if !found {
			s.reply(c, xid, jute.ErrNoNode, nil)
			return
		}
		if !s.canRead(c, n.ACL, jute.PermRead) {
			s.reply(c, xid, jute.ErrNoAuth, nil)
			return
		}
		count := s.tree.CountDescendants(b.Path)
		if b.Path == "" {
			// ZooKeeper counts the paths that start with "", i.e. every node, root included.
			count = s.tree.NodeCount()
		}
		s.reply(c, xid, jute.OK, &jute.IntResponse{N: int32(count)})
	case jute.OpGetEphemerals:
		b := r.body.(*jute.PathRequest)
		prefix := strings.TrimSpace(b.Path)
		all := s.tree.Ephemerals(c.sess.id)
		out := make([]string, 0, len(all))
		for _, p := range all {
			if prefix == "" || prefix == "/" || strings.HasPrefix(p, b.Path) {
				out = append(out, p)
			}
		}
		s.reply(c, xid, jute.OK, &jute.StringsResponse{Strings: out})
	case jute.OpWhoAmI:
		s.reply(c, xid, jute.OK, &jute.WhoAmIResponse{ClientInfo: auth.ClientInfo(c.authIDs)})
	case jute.OpMultiRead:
		if c.sess != nil && c.sess.keeperClient {
			s.keeperMultiRead(c, r)
			return
		}
		s.multiRead(c, r)
	case jute.OpFilteredList:
		b := r.body.(*jute.FilteredListRequest)
		res, code := s.filteredList(c, b.Path, b.Watch, b.Type)
		s.reply(c, xid, code, res)
	case jute.OpListPage:
		s.listPage(c, xid, r.body.(*jute.ListPageRequest))
	case jute.OpSetWatches, jute.OpSetWatches2:
		code := jute.OK
		if !s.setWatches(c, r.body.(*jute.SetWatches)) {
			code = jute.ErrMarshallingError
		}
		s.reply(c, xid, code, nil)
	case jute.OpAddWatch:
		b := r.body.(*jute.AddWatchRequest)
		kind, ok := persistentKind(b.Mode)
		if !ok {
			// ZooKeeper fails to map the mode and answers as for an unreadable body.
			s.reply(c, xid, jute.ErrMarshallingError, nil)
			return
		}
		s.watches.Add(s.watcherOf(c), b.Path, kind)
		s.reply(c, xid, jute.OK, &jute.ErrorResponse{N: 0})
	case jute.OpAddWatchSince:
		s.addWatchSince(c, xid, r.body.(*jute.AddWatchSinceRequest))
	case jute.OpSetMaxBuffer:
		s.setMaxBuffer(c, xid, r.body.(*jute.SetMaxBufferRequest))
	case jute.OpCheckWatches, jute.OpRemoveWatches:
		b := r.body.(*jute.WatchesRequest)
		if b.Type < jute.WatcherChildren || b.Type > jute.WatcherPersistentRecursive {
			s.reply(c, xid, jute.ErrMarshallingError, nil)
			return
		}
		found := false
		if c.hasWatch {
			if r.hdr.Type == jute.OpCheckWatches {
				found = s.watches.Check(c.watcher, b.Path, b.Type)
			} else {
				found = s.watches.Remove(c.watcher, b.Path, b.Type)
			}
		}
		if !found {
			s.reply(c, xid, jute.ErrNoWatcher, nil)
			return
		}
		s.reply(c, xid, jute.OK, nil)
	default:
		s.reply(c, xid, jute.ErrUnimplemented, nil)
	}
}

// getData reads a node into res.
func (s *Server) getData(c *conn, path string, w bool, res *jute.GetDataResponse) (*jute.GetDataResponse, jute.Code) {
	n, found := s.lookup(path)
	if !found {
		return nil, jute.ErrNoNode
	}
	if !s.canRead(c, n.ACL, jute.PermRead) {
		return nil, jute.ErrNoAuth
	}
	if w {
		s.watches.Add(s.watcherOf(c), path, watch.Data)
	}
	s.cfg.Metrics.NamespaceRead(path, len(n.Data))
	*res = jute.GetDataResponse{Data: n.Data, Stat: s.tree.StatOf(&n)}
	return res, jute.OK
}

// readChildren returns n's children for a getChildren of path, recording the read as
// ZooKeeper's DataTree.getChildren does: the children's names are its bytes.
func (s *Server) readChildren(path string, n *datatree.Node) []string {
	children := n.SharedChildren() // encoded on the connection's writer
	if v := s.virtualChildren(path); v != nil {
		children = append(children, v...) // SharedChildren's capacity makes this a copy
	}
	if s.cfg.Metrics != nil {
		size := 0
		for _, name := range children {
			size += len(name)
		}
		s.cfg.Metrics.NamespaceRead(path, size)
	}
	return children
}

// persistentKind maps an addWatch mode to its watch kind.
func persistentKind(mode int32) (watch.Kind, bool) {
	switch mode {
	case jute.AddWatchPersistent:
		return watch.Persistent, true
	case jute.AddWatchPersistentRecursive:
		return watch.PersistentRecursive, true
	}
	return 0, false
}

// multiRead runs each read on its own; failures become error results.
func (s *Server) multiRead(c *conn, r *request) {
	m := r.body.(*jute.MultiRequest)
	resp := &jute.MultiResponse{Results: make([]jute.MultiResult, 0, len(m.Ops))}
	for _, op := range m.Ops {
		if f, ok := op.Body.(*jute.FilteredListRequest); ok {
			res := jute.MultiResult{Type: jute.OpGetChildren2}
			if l, code := s.filteredList(c, f.Path, false, f.Type); code != jute.OK {
				res = jute.MultiResult{Type: jute.OpError, Err: code}
			} else {
				res.Body = l
			}
			resp.Results = append(resp.Results, res)
			continue
		}
		b := op.Body.(*jute.PathWatchRequest)
		res := jute.MultiResult{Type: op.Type}
		switch op.Type {
		case jute.OpGetData:
			if d, code := s.getData(c, b.Path, false, new(jute.GetDataResponse)); code != jute.OK {
				res = jute.MultiResult{Type: jute.OpError, Err: code}
			} else {
				res.Body = d
			}
		case jute.OpGetChildren:
			n, found := s.lookup(b.Path)
			switch {
			case !found:
				res = jute.MultiResult{Type: jute.OpError, Err: jute.ErrNoNode}
			case !s.canRead(c, n.ACL, jute.PermRead):
				res = jute.MultiResult{Type: jute.OpError, Err: jute.ErrNoAuth}
			default:
				res.Body = &jute.GetChildrenResponse{Strings: s.readChildren(b.Path, &n)}
			}
		}
		resp.Results = append(resp.Results, res)
	}
	s.reply(c, r.hdr.Xid, jute.OK, resp)
}

// setWatches re-arms a reconnecting client's watches, firing at once those whose node
// changed since the client's last seen zxid. It reports false at a null list (length -1),
// where ZooKeeper fails with a NullPointerException after re-arming the lists before it.
func (s *Server) setWatches(c *conn, b *jute.SetWatches) bool {
	w := s.watcherOf(c)
	fire := func(t jute.EventType, path string) {
		c.send(outMsg{
			hdr:  jute.ReplyHeader{Xid: jute.XidNotification, Zxid: -1},
			body: &jute.WatcherEvent{Type: t, State: jute.StateSyncConnected, Path: path},
		})
	}
	rel := b.RelativeZxid
	// Paths are looked up as ZooKeeper's DataTree.getNode does: "" is the root. A virtual
	// node (capsnodes.go) is there as reads see it, so a watch on one is not told it went.
	if b.DataWatches == nil {
		return false
	}
	for _, p := range b.DataWatches {
		switch n, found := s.lookup(p); {
		case !found:
			fire(jute.EventNodeDeleted, p)
		case n.Stat.Mzxid > rel:
			fire(jute.EventNodeDataChanged, p)
		default:
			s.watches.Add(w, p, watch.Data)
		}
	}
	if b.ExistWatches == nil {
		return false
	}
	for _, p := range b.ExistWatches {
		if _, found := s.lookup(p); found {
			fire(jute.EventNodeCreated, p)
		} else {
			s.watches.Add(w, p, watch.Data)
		}
	}
	if b.ChildWatches == nil {
		return false
	}
	for _, p := range b.ChildWatches {
		switch n, found := s.lookup(p); {
		case !found:
			fire(jute.EventNodeDeleted, p)
		case n.Stat.Pzxid > rel:
			fire(jute.EventNodeChildrenChanged, p)
		default:
			s.watches.Add(w, p, watch.Child)
		}
	}
	if !b.V2 {
		return true // setWatches (101) has no persistent lists
	}
	if b.PersistentWatches == nil {
		return false
	}
	for _, p := range b.PersistentWatches {
		s.watches.Add(w, p, watch.Persistent)
	}
	if b.PersistentRecursiveWatches == nil {
		return false
	}
	for _, p := range b.PersistentRecursiveWatches {
		s.watches.Add(w, p, watch.PersistentRecursive)
	}
	return true
}

// doAuth handles an auth packet at once, as ZooKeeper does (it does not wait in the
// session's queue). A failure closes the connection.
func (s *Server) doAuth(c *conn, r *request) {
	fail := func() {
		c.sendAndClose(&outMsg{hdr: jute.ReplyHeader{Xid: r.hdr.Xid, Err: jute.ErrAuthFailed}})
	}
	if r.bodyErr != nil {
		// ZooKeeper's processPacket fails reading the packet and closes without a reply.
		c.sendAndClose(nil)
		return
	}
	b := r.body.(*jute.AuthPacket)
	ids, err := auth.Authenticate(b.Scheme, b.Auth, s.cfg.SuperDigest)
	if err != nil {
		s.log.Info("authentication failed", "session", hex(c.sess.id), "scheme", b.Scheme, "err", err)
		fail()
		return
	}
	for _, id := range ids {
		c.addAuthID(id)
	}
	c.send(outMsg{hdr: jute.ReplyHeader{Xid: r.hdr.Xid, Zxid: 0, Err: jute.OK}})
}

// replyWrite answers an applied client write.
func (s *Server) replyWrite(q *queued, txn *jute.LoggedTxn, res *applyResult) {
	c := q.c
	xid := q.req.hdr.Xid
	zxid := txn.Header.Zxid
	s.recordLatency(c, q.req)
	s.auditWrite(q, txn, res, q.failWith != jute.OK || txn.Header.Type == jute.OpError)
	if c.gone {
		return
	}
	c.lastZxid = zxid
	send := func(err jute.Code, body jute.Record) {
		c.send(outMsg{hdr: jute.ReplyHeader{Xid: xid, Zxid: zxid, Err: err}, body: body})
	}
	switch {
	case q.failWith != jute.OK:
		send(q.failWith, nil)
		return
	case jute.LookupOp(q.req.hdr.Type).Ext != "":
		send(extWriteReply(q.req, txn, res))
		return
	case txn.Header.Type == jute.OpError:
		send(txn.Body.(*jute.ErrorTxn).Err, nil)
		return
	}
	switch txn.Header.Type {
	case jute.OpCreate:
		send(jute.OK, &jute.CreateResponse{Path: res.Path})
	case jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
		send(jute.OK, &jute.Create2Response{Path: res.Path, Stat: res.Stat})
	case jute.OpDelete:
		send(jute.OK, nil)
	case jute.OpSetData, jute.OpSetACL:
		q.statResp = jute.StatResponse{Stat: res.Stat}
		send(jute.OK, &q.statResp)
	case jute.OpReconfig:
		// FinalRequestProcessor: the new configuration and the node's Stat.
		send(jute.OK, &jute.GetDataResponse{Data: txn.Body.(*jute.SetDataTxn).Data, Stat: res.Stat})
	case jute.OpMulti:
		if hasExtOps(q.req.body) {
			send(jute.OK, extMultiResponse(res, q.req.body))
			return
		}
		send(jute.OK, multiResponse(res, q.req.body))
	case jute.OpCloseSession:
		c.sendAndClose(&outMsg{hdr: jute.ReplyHeader{Xid: xid, Zxid: zxid}})
		s.detach(c)
	default:
		send(jute.OK, nil)
	}
}

// multiResponse answers an applied multi; req is the request as the client sent it.
func multiResponse(res *applyResult, req jute.Record) *jute.MultiResponse {
	var ops []jute.MultiOp
	if m, ok := req.(*jute.MultiRequest); ok && len(m.Ops) == len(res.Multi) {
		ops = m.Ops
	}
	out := &jute.MultiResponse{Results: make([]jute.MultiResult, len(res.Multi))}
	for i, r := range res.Multi {
		mr := jute.MultiResult{Type: r.Type, Err: r.Err}
		typ := r.Type
		if typ == jute.OpCreate && ops != nil && (ops[i].Type == jute.OpCreate2 || ops[i].Type == jute.OpCreateContainer) {
			// Logged as a plain create (prep's loggedSubType), or by a leader that decays
			// the opcode as ZooKeeper 3.8 does: ZooKeeper 3.9 (ZOOKEEPER-4026) answers the
			// opcode the client sent, with the Stat.
			typ = jute.OpCreate2
		}
		switch typ {
		case jute.OpError:
		case jute.OpCreate:
			mr.Body = &jute.CreateResponse{Path: r.Path}
		case jute.OpCreate2, jute.OpCreateContainer, jute.OpCreateTTL:
			mr.Type = jute.OpCreate2
			mr.Body = &jute.Create2Response{Path: r.Path, Stat: r.Stat}
		case jute.OpSetData:
			mr.Body = &jute.StatResponse{Stat: r.Stat}
		}
		out.Results[i] = mr
	}
	return out
}
