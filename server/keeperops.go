package server

import (
	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/watch"
	"github.com/zkd-io/zkd/jute"
)

// The server side of ext.KeeperOps that is not prep's: ClickHouse Keeper's FilteredList and
// the replies of the extension writes, in ClickHouse's layouts
// (src/Common/ZooKeeper/ZooKeeperCommon.cpp and .h).

// filteredList is ClickHouse Keeper's FilteredList: getChildren2 keeping the persistent or
// the ephemeral children only. The Stat is the node's own (its numChildren counts every
// child, as ClickHouse's). A filter value ClickHouse does not define lists every child.
func (s *Server) filteredList(c *conn, path string, w bool, filter byte) (*jute.GetChildren2Response, jute.Code) {
	n, found := s.node(path)
	if !found {
		return nil, jute.ErrNoNode
	}
	if !s.canRead(c, n.ACL, jute.PermRead) {
		return nil, jute.ErrNoAuth
	}
	if w {
		s.watches.Add(s.watcherOf(c), path, watch.Child)
	}
	children := s.readChildren(path, &n)
	if filter == jute.ListPersistentOnly || filter == jute.ListEphemeralOnly {
		kept := make([]string, 0, len(children))
		for _, name := range children {
			child, ok := s.node(datatree.Join(path, name))
			if !ok {
				continue
			}
			// Containers and TTL nodes are persistent to ClickHouse: it has neither.
			o := child.Stat.EphemeralOwner
			_, ttl := s.tree.IsTTL(o)
			eph := o != 0 && o != datatree.ContainerOwner && !ttl
			if eph == (filter == jute.ListEphemeralOnly) {
				kept = append(kept, name)
			}
		}
		children = kept
	}
	return &jute.GetChildren2Response{Children: children, Stat: s.tree.StatOf(&n)}, jute.OK
}

// extWriteReply is the reply to an extension write, from its txn and what applying it did.
func extWriteReply(req *request, txn *jute.LoggedTxn, res *applyResult) (jute.Code, jute.Record) {
	code := jute.OK
	if txn.Header.Type == jute.OpError {
		code = txn.Body.(*jute.ErrorTxn).Err
	} else if res.Err != jute.OK {
		code = res.Err
	}
	switch req.hdr.Type {
	case jute.OpCreateIfNotExists:
		b, _ := req.body.(*jute.CreateRequest)
		switch {
		case code == jute.ErrNodeExists && b != nil:
			// ClickHouse answers an existing node with OK and the path asked for.
			return jute.OK, &jute.CreateResponse{Path: b.Path}
		case code != jute.OK:
			return code, nil
		}
		return jute.OK, &jute.CreateResponse{Path: res.Path}
	case jute.OpCreateWithParents:
		if code != jute.OK || len(res.Multi) == 0 {
			return code, nil
		}
		last := res.Multi[len(res.Multi)-1]
		return jute.OK, &jute.Create2Response{Path: last.Path, Stat: last.Stat}
	}
	// checkNotExists, removeRecursive: no body.
	return code, nil
}

// hasExtOps reports whether a multi holds an extension op.
func hasExtOps(body jute.Record) bool {
	m, ok := body.(*jute.MultiRequest)
	if !ok {
		return false
	}
	for _, op := range m.Ops {
		if jute.LookupOp(op.Type).Ext != "" {
			return true
		}
	}
	return false
}

// extMultiResponse answers an applied multi holding extension ops: one result per op the
// client sent, where the txn has one sub-txn per op only when the multi failed. On success
// each op's sub-txns are found in order: checkNotExists wrote none, createIfNotExists one
// create of its path or none (the node existed, so the next sub-txn cannot create it),
// removeRecursive deletes ending with its own path's, every other op one.
func extMultiResponse(res *applyResult, req jute.Record) *jute.MultiResponse {
	m := req.(*jute.MultiRequest)
	if res.Err != jute.OK || len(res.Multi) == len(m.Ops) && !expands(m) {
		return multiResponse(res, req)
	}
	out := &jute.MultiResponse{Results: make([]jute.MultiResult, 0, len(m.Ops))}
	next := 0
	subs := res.Multi
	for _, op := range m.Ops {
		switch op.Type {
		case jute.OpCheckNotExists:
			out.Results = append(out.Results, jute.MultiResult{Type: jute.OpCheckNotExists})
		case jute.OpCreateIfNotExists:
			b := op.Body.(*jute.CreateRequest)
			if next < len(subs) && subs[next].Type == jute.OpCreate && subs[next].Path == b.Path {
				next++
			}
			// ClickHouse's ZooKeeperCreateIfNotExistsResponse: type 502, the path.
			out.Results = append(out.Results, jute.MultiResult{Type: jute.OpCreateIfNotExists, Body: &jute.CreateResponse{Path: b.Path}})
		case jute.OpRemoveRecursive:
			b := op.Body.(*jute.RemoveRecursiveRequest)
			for next < len(subs) {
				next++
				if subs[next-1].Path == b.Path {
					break
				}
			}
			out.Results = append(out.Results, jute.MultiResult{Type: jute.OpRemoveRecursive})
		default:
			one := &applyResult{}
			if next < len(subs) {
				one.Multi = subs[next : next+1]
				next++
			}
			r := multiResponse(one, &jute.MultiRequest{Ops: []jute.MultiOp{op}})
			out.Results = append(out.Results, r.Results...)
		}
	}
	return out
}

// expands reports whether some op of m may write other than one sub-txn.
func expands(m *jute.MultiRequest) bool {
	for _, op := range m.Ops {
		switch op.Type {
		case jute.OpCheckNotExists, jute.OpCreateIfNotExists, jute.OpRemoveRecursive:
			return true
		}
	}
	return false
}

// keeperFeatureFlagsPath is the node ClickHouse's client reads first on every new session
// to learn what the server supports (ZooKeeper::initFeatureFlags in
// src/Common/ZooKeeper/ZooKeeperImpl.cpp; the node is served by the capabilities extension).
const keeperFeatureFlagsPath = "/keeper/feature_flags"

// noteKeeperClient marks the session as ClickHouse's once it reads keeperFeatureFlagsPath on
// a server with the keeper-ops extension. That read is the negotiation: a stock ZooKeeper
// client has no reason to read a node ZooKeeper does not have, so its multiReads keep
// ZooKeeper's semantics, while ClickHouse's client, which reads it before anything else,
// gets ClickHouse Keeper's (keeperMultiRead).
func (s *Server) noteKeeperClient(c *conn, path string) {
	if path == keeperFeatureFlagsPath && c.sess != nil && s.cfg.Extensions.Has(ext.KeeperOps) {
		c.sess.keeperClient = true
	}
}

// keeperMultiRead is a multiRead with ClickHouse Keeper's semantics (KeeperStorage.cpp's
// processLocal of a MultiRead, and ZooKeeperMultiResponse::writeImpl): it may hold getData,
// exists, getChildren and filteredList; each result keeps its op's response type (a
// filteredList's is 12), and a failed one carries its code in the header and no body,
// where ZooKeeper answers type -1 and an ErrorResponse. ClickHouse's client reads a
// result by the type of the request it sent, so ZooKeeper's layout breaks it.
func (s *Server) keeperMultiRead(c *conn, r *request) {
	m := r.body.(*jute.MultiRequest)
	resp := &jute.MultiResponse{Results: make([]jute.MultiResult, 0, len(m.Ops))}
	for _, op := range m.Ops {
		var res jute.MultiResult
		var code jute.Code
		switch b := op.Body.(type) {
		case *jute.FilteredListRequest:
			res.Type = jute.OpGetChildren2
			res.Body, code = s.filteredList(c, b.Path, false, b.Type)
		case *jute.PathWatchRequest:
			res.Type = op.Type
			switch op.Type {
			case jute.OpGetData:
				res.Body, code = s.getData(c, b.Path, false, new(jute.GetDataResponse))
			case jute.OpExists:
				// As zkd's exists: READ is checked when the node exists.
				switch n, found := s.node(b.Path); {
				case !found:
					code = jute.ErrNoNode
				case !s.canRead(c, n.ACL, jute.PermRead):
					code = jute.ErrNoAuth
				default:
					res.Body = &jute.StatResponse{Stat: s.tree.StatOf(&n)}
				}
			case jute.OpGetChildren:
				l, lc := s.filteredList(c, b.Path, false, jute.ListAll)
				code = lc
				if lc == jute.OK {
					res.Body = &jute.GetChildrenResponse{Strings: l.Children}
				}
			}
		}
		if code != jute.OK {
			res.Err, res.Body = code, nil
		}
		resp.Results = append(resp.Results, res)
	}
	s.reply(c, r.hdr.Xid, jute.OK, resp)
}
