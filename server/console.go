package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/internal/admin/dispatch"
	"github.com/zkd-io/zkd/internal/admin/httpadmin"
	"github.com/zkd-io/zkd/internal/auth"
	"github.com/zkd-io/zkd/internal/clientwire"
	"github.com/zkd-io/zkd/internal/console"
	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/internal/zab"
	"github.com/zkd-io/zkd/jute"
)

// This file is the web console's side in the server: consoleBackend answers
// internal/console's Backend, as adminBackend (adminbackend.go) answers internal/admin's.
// It owns what the console reads and writes of the server: the tree pages, node views and
// searches (Children, Get, Search), the session, ephemeral, watch, ensemble and metric
// views, the Authorization checks (through the AdminServer's Guard), and the internal
// session that makes the console's writes.
//
// It lives here, not in internal/admin or internal/console, for the reason adminbackend.go
// does: what it reads belongs to the core goroutine (the data tree, the connection and
// session tables) and is reached only through package server's own steps (coreQuery, the
// builder slots) and types (a conn's auth ids, newConn). Those packages never import
// server; they get copied values back from their Backend and do the formatting, paging and
// HTTP on the request's goroutine. The console has a Backend of its own, rather than more
// methods on admin's, because most of its answers (paged children, node views, searches,
// writes as a session) are no four-letter word's or AdminServer command's; where one is
// (the watch table, mntr's numbers), it is taken from adminBackend, not gathered twice.
//
// Reads follow the four-letter words' rules (adminbackend.go): the core only copies, in
// steps of at most adminBatch items, and the large gatherings (a big child list, a search,
// the watch table) take a builder slot. Writes are made by an internal client session: a
// client connection (internal/clientwire) to this server over an in-memory pipe, whose
// server side is given the ids the console request authenticated, so the write is
// prepared, ACL-checked, logged and (in an ensemble) proposed exactly as a client's.

// ConsoleURL is where the console is served on the AdminServer's port.
const ConsoleURL = "/console"

type consoleBackend struct {
	s     *Server
	guard *httpadmin.Guard
}

var _ console.Backend = consoleBackend{}

func (s *Server) consoleHandler() http.Handler {
	return console.Handler(ConsoleURL, consoleBackend{s: s, guard: s.adminGuard()}, s.log.With("component", "console"))
}

func (b consoleBackend) Authenticate(header string, r *http.Request) ([]jute.ID, error) {
	return b.guard.Authenticate(header, r)
}

// Authorized holds console writes to what snapshot and restore need (Guard.Authorize): a
// write through the console is made as the header's ids, so ids that prove nothing (a
// made-up digest user let in by world:anyone) must not reach it.
func (b consoleBackend) Authorized(ids []jute.ID) (bool, error) {
	v, ok := b.guard.Authorize(ids)
	switch {
	case !ok:
		return false, console.ErrNotServing
	case v == httpadmin.NoIdentity:
		return false, fmt.Errorf("%w: %s", console.ErrNoAuth, httpadmin.NeedsIdentityHint)
	}
	return v == httpadmin.Allowed, nil
}

func (b consoleBackend) AnonymousIDs(r *http.Request) []jute.ID {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return []jute.ID{{Scheme: auth.SchemeIP, ID: host}}
}

// query runs f on the core, failing when ctx ended or the server is not serving.
func (b consoleBackend) query(ctx context.Context, f func()) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !b.s.coreQuery(f) {
		return console.ErrNotServing
	}
	return nil
}

func (b consoleBackend) builder() (func(), error) {
	release, ok := adminBackend{s: b.s}.Builder()
	if !ok {
		return nil, console.ErrNotServing
	}
	return release, nil
}

func (b consoleBackend) canRead(aclKey int64, ids []jute.ID) bool {
	s := b.s
	return s.cfg.SkipACL || s.cfg.AuthProviders.Check(s.tree.ACL(aclKey), jute.PermRead, ids)
}

func checkPath(path string) error {
	if !datatree.ValidatePath(path) {
		return fmt.Errorf("%w: invalid path %q", console.ErrBadRequest, path)
	}
	return nil
}

// Children copies the child list adminBatch names per core step (a scan of a list that may
// change between steps: a name moved by a delete can be missed, one listed twice is
// de-duplicated), then sorts and pages it here, and looks up the page's counts in one
// more step.
func (b consoleBackend) Children(ctx context.Context, path, after string, limit int, ids []jute.ID) (console.ChildPage, error) {
	page := console.ChildPage{Path: path, Children: []console.Child{}}
	if err := checkPath(path); err != nil {
		return page, err
	}
	release, err := b.builder()
	if err != nil {
		return page, err
	}
	defer release()
	s := b.s
	var names []string
	for done := false; !done; {
		var failed error
		err := b.query(ctx, func() {
			n, found := s.node(path)
			switch {
			case !found:
				failed = console.ErrNoNode
				return
			case !b.canRead(n.ACL, ids):
				failed = fmt.Errorf("%w: no READ permission on %s", console.ErrNoAuth, path)
				return
			}
			from := len(names)
			got := n.ChildRange(from, from+adminBatch)
			names = append(names, got...)
			done = from+len(got) >= n.NumChildren()
			noteAdminStep(len(got))
		})
		if err != nil {
			return console.ChildPage{}, err // the step may still be running: leave what it writes
		}
		if failed != nil {
			return console.ChildPage{}, failed
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	page.Total = len(names)
	start := 0
	if after != "" {
		i, found := slices.BinarySearch(names, after)
		if found {
			i++
		}
		start = i
	}
	end := min(start+limit, len(names))
	shown := names[start:end]
	if end < len(names) && len(shown) > 0 {
		page.Next = shown[len(shown)-1]
	}
	page.Children = make([]console.Child, len(shown))
	err = b.query(ctx, func() {
		for i, name := range shown {
			c := console.Child{Name: name}
			if n := s.tree.Get(datatree.Join(path, name)); n != nil {
				c.NumChildren = int32(n.NumChildren())
				c.Ephemeral = s.tree.IsEphemeral(n)
			} else {
				c.Gone = true
			}
			page.Children[i] = c
		}
		noteAdminStep(len(shown))
	})
	if err != nil {
		return console.ChildPage{}, err
	}
	return page, nil
}

func (b consoleBackend) Get(ctx context.Context, path string, ids []jute.ID) (console.Node, error) {
	out := console.Node{Path: path}
	if err := checkPath(path); err != nil {
		return out, err
	}
	s := b.s
	found := false
	err := b.query(ctx, func() {
		n, ok := s.node(path)
		if !ok {
			return
		}
		found = true
		out.Stat = s.tree.StatOf(&n)
		if !b.canRead(n.ACL, ids) {
			out.DataHidden = true
			return
		}
		// Data is never changed in place (a setData installs a new slice): it may be
		// formatted off the core. The ACL list is shared and read-only too.
		out.Data = n.Data
		out.ACL = slices.Clone(s.tree.ACL(n.ACL))
	})
	switch {
	case err != nil:
		return console.Node{}, err
	case !found:
		return console.Node{}, console.ErrNoNode
	}
	return out, nil
}

// searchFrame is a node whose children the search is visiting.
type searchFrame struct {
	parent string
	names  []string
	next   int
}

// Search walks the tree depth-first, adminBatch nodes per core step, descending only into
// nodes the ids may read and, for a prefix, only where the prefix can still match. A node
// with many children has its names copied when visited, as a snapshot walk does.
func (b consoleBackend) Search(ctx context.Context, q console.Query) (console.SearchResult, error) {
	var res console.SearchResult
	release, err := b.builder()
	if err != nil {
		return res, err
	}
	defer release()
	s := b.s
	match := func(p string) bool { return strings.Contains(p, q.Text) }
	descend := func(string) bool { return true }
	start := "/"
	if q.Prefix {
		match = func(p string) bool { return strings.HasPrefix(p, q.Text) }
		descend = func(p string) bool {
			return strings.HasPrefix(p, q.Text) || strings.HasPrefix(q.Text, strings.TrimSuffix(p, "/")+"/")
		}
		// Start at the deepest ancestor of the prefix that is a whole path.
		start = q.Text
		if start != "/" {
			start = strings.TrimSuffix(start, "/")
			if !datatree.ValidatePath(start) {
				start = datatree.Parent(start)
			}
		}
	}
	var stack []searchFrame
	visit := func(p string, n *datatree.Node) {
		res.Visited++
		if match(p) {
			res.Matches = append(res.Matches, p)
		}
		if n.NumChildren() > 0 && descend(p) && b.canRead(n.ACL, q.IDs) {
			stack = append(stack, searchFrame{parent: p, names: n.Children()})
		}
	}
	first := true
	for {
		err := b.query(ctx, func() {
			steps := 0
			if first {
				first = false
				// The start may not exist (a prefix no path has): its nearest existing
				// ancestor is walked instead.
				p := start
				for s.tree.Get(p) == nil && p != "/" {
					p = datatree.Parent(p)
				}
				if n := s.tree.Get(p); n != nil {
					visit(p, n)
					steps++
				}
			}
			for steps < adminBatch && len(stack) > 0 && len(res.Matches) < q.MaxMatches && res.Visited < q.MaxVisited {
				f := &stack[len(stack)-1]
				if f.next == len(f.names) {
					stack = stack[:len(stack)-1]
					continue
				}
				p := datatree.Join(f.parent, f.names[f.next])
				f.next++
				if q.Prefix && !descend(p) {
					continue
				}
				if n := s.tree.Get(p); n != nil {
					visit(p, n)
					steps++
				}
			}
			noteAdminStep(steps)
		})
		if err != nil {
			return console.SearchResult{}, err
		}
		switch {
		case len(res.Matches) >= q.MaxMatches && len(stack) > 0:
			res.Stopped = fmt.Sprintf("found %d matches, the most this search returns", q.MaxMatches)
		case res.Visited >= q.MaxVisited && len(stack) > 0:
			res.Stopped = fmt.Sprintf("visited %d nodes, the most this search walks", q.MaxVisited)
		case len(stack) > 0:
			continue
		}
		slices.Sort(res.Matches)
		return res, nil
	}
}

// consolePipe is the server end of an internal session's connection: the client's address
// is that of the console's HTTP client, so per-address limits and ip ids apply to it.
type consolePipe struct {
	net.Conn
	remote net.Addr
}

func (p *consolePipe) RemoteAddr() net.Addr { return p.remote }

// consoleClient is the client end of an internal session: the shared client connection
// (internal/clientwire) used synchronously, one request at a time, without its loops, as
// the nemesis's setup sessions use it, so a console write starts no goroutine that could
// outlive its HTTP request. (The zk package cannot be used here: its tests import the
// server.)
type consoleClient struct {
	wc  *clientwire.Conn
	xid int32
}

// maxConsoleReply bounds the frames the console reads back. The session only writes, so
// its replies are a ConnectResponse and Stats, far below it: the bound only keeps a broken
// stream from making the console allocate without limit.
const maxConsoleReply = 64 << 20

// consoleReadBuffer sizes the session's read buffer: the replies are a few small frames,
// and clientwire's 64 KiB default would be allocated for each console write.
const consoleReadBuffer = 1 << 10

// call sends one request and decodes its reply into resp; a reply's error code is
// returned as a jute.Code. Notifications cannot arrive: the session sets no watches.
func (c *consoleClient) call(op jute.OpCode, body, resp jute.Record) error {
	c.xid++
	e := jute.Encoder{}
	(&jute.RequestHeader{Xid: c.xid, Type: op}).Encode(&e)
	if body != nil {
		body.Encode(&e)
	}
	if err := c.wc.WriteFrame(e.Buf); err != nil {
		return fmt.Errorf("console session: send %v: %w", op, err)
	}
	b, err := c.wc.ReadFrame()
	if err != nil {
		return fmt.Errorf("console session: reply to %v: %w", op, err)
	}
	d := jute.NewDecoder(b)
	var h jute.ReplyHeader
	h.Decode(d)
	switch {
	case d.Err() != nil:
		return fmt.Errorf("console session: reply to %v: %w", op, d.Err())
	case h.Xid != c.xid:
		return fmt.Errorf("console session: reply xid %d to %v, want %d", h.Xid, op, c.xid)
	case h.Err != jute.OK:
		return h.Err
	}
	if resp != nil {
		resp.Decode(d)
		if d.Err() != nil {
			return fmt.Errorf("console session: reply to %v: %w", op, d.Err())
		}
	}
	return nil
}

// consoleSession connects an internal session (see the top of the file) from remote and
// gives its connection ids before any request is sent on it. Closing the returned client
// closes the session.
func (s *Server) consoleSession(ctx context.Context, remote string, ids []jute.ID) (*consoleClient, error) {
	addr, err := net.ResolveTCPAddr("tcp", remote)
	if err != nil {
		return nil, fmt.Errorf("console session: client address %q: %w", remote, err)
	}
	cli, srv := net.Pipe()
	p := &consolePipe{Conn: srv, remote: addr}
	// The request's deadline bounds every read and write on the session, the handshake
	// and the close included: the pipe has no other timeout.
	if dl, ok := ctx.Deadline(); ok {
		cli.SetDeadline(dl)
	}
	s.newConn(p)
	c := &consoleClient{wc: clientwire.New(cli, clientwire.Config{Addr: "console session", MaxFrame: maxConsoleReply, ReadBuffer: consoleReadBuffer})}
	// The shortest timeout the server allows: a session the console could not close
	// (the pipe broke) goes away soon.
	resp, err := c.wc.Handshake(&jute.ConnectRequest{TimeOut: int32(s.cfg.MinSessionTimeout), Passwd: make([]byte, 16)})
	if err == nil && resp.SessionID == 0 {
		err = errors.New("refused")
	}
	if err != nil {
		c.wc.Kill(err)
		return nil, fmt.Errorf("console session: connect: %w: %w", console.ErrNotServing, err)
	}
	found := false
	ok := s.query(func() {
		s.connsMu.Lock()
		defer s.connsMu.Unlock()
		for sc := range s.allConns {
			if sc.nc == net.Conn(p) && sc.sess != nil && !sc.gone {
				for _, id := range ids {
					sc.addAuthID(id)
				}
				found = true
			}
		}
	})
	if !ok {
		// The step may still be running: found is not to be read.
		c.wc.Kill(console.ErrNotServing)
		return nil, fmt.Errorf("console session: %w", console.ErrNotServing)
	}
	if !found {
		c.close()
		return nil, fmt.Errorf("console session: its connection is gone: %w", console.ErrNotServing)
	}
	return c, nil
}

// close ends the session (closeSession, answered once applied) and the connection.
func (c *consoleClient) close() {
	c.call(jute.OpCloseSession, nil, nil)
	c.wc.Kill(nil)
}

// consoleErr maps a reply's error code to the console's errors.
func consoleErr(err error) error {
	switch {
	case errors.Is(err, jute.ErrNoNode):
		return fmt.Errorf("%w: %w", console.ErrNoNode, err)
	case errors.Is(err, jute.ErrNoAuth):
		return fmt.Errorf("%w: %w", console.ErrNoAuth, err)
	case errors.Is(err, jute.ErrBadVersion):
		return fmt.Errorf("%w: %w", console.ErrBadVersion, err)
	case errors.Is(err, jute.ErrBadArguments), errors.Is(err, jute.ErrInvalidACL):
		return fmt.Errorf("%w: %w", console.ErrBadRequest, err)
	}
	return err
}

func (b consoleBackend) write(ctx context.Context, remote string, ids []jute.ID, op jute.OpCode, body jute.Record) (jute.Stat, error) {
	c, err := b.s.consoleSession(ctx, remote, ids)
	if err != nil {
		return jute.Stat{}, err
	}
	defer c.close()
	var resp jute.StatResponse
	if err := c.call(op, body, &resp); err != nil {
		return jute.Stat{}, consoleErr(err)
	}
	return resp.Stat, nil
}

func (b consoleBackend) Set(ctx context.Context, remote, path string, data []byte, version int32, ids []jute.ID) (jute.Stat, error) {
	if err := checkPath(path); err != nil {
		return jute.Stat{}, err
	}
	return b.write(ctx, remote, ids, jute.OpSetData, &jute.SetDataRequest{Path: path, Data: data, Version: version})
}

func (b consoleBackend) SetACL(ctx context.Context, remote, path string, acl []jute.ACL, version int32, ids []jute.ID) (jute.Stat, error) {
	if err := checkPath(path); err != nil {
		return jute.Stat{}, err
	}
	return b.write(ctx, remote, ids, jute.OpSetACL, &jute.SetACLRequest{Path: path, ACL: acl, Version: version})
}

// Sessions copies the sessions in one core step, as cons copies the connections: the
// sessions with a connection here, and those the session tracker holds (a leader's or a
// standalone server's, connected anywhere).
func (b consoleBackend) Sessions(ctx context.Context) ([]console.Session, error) {
	s := b.s
	var out []console.Session
	err := b.query(ctx, func() {
		eph := s.tree.EphemeralSessions()
		seen := make(map[int64]bool, len(s.sessions))
		for id, sess := range s.sessions {
			if !sess.valid || sess.closing {
				continue
			}
			row := console.Session{ID: id, Timeout: sess.timeout, Ephemerals: eph[id]}
			if c := sess.conn; c != nil && !c.gone {
				row.Remote = c.remote
			}
			out = append(out, row)
			seen[id] = true
		}
		if s.role.ownsSessions() {
			for _, in := range s.tracker.All() {
				if !seen[in.ID] {
					out = append(out, console.Session{ID: in.ID, Timeout: in.Timeout, Ephemerals: eph[in.ID]})
				}
			}
		}
		noteAdminStep(len(out) + len(eph))
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b console.Session) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

func (b consoleBackend) Ephemerals(ctx context.Context, session int64) ([]string, error) {
	var paths []string
	err := b.query(ctx, func() {
		paths = b.s.tree.Ephemerals(session)
		noteAdminStep(len(paths))
	})
	if err != nil {
		return nil, err
	}
	return paths, nil
}

func (b consoleBackend) Watches(ctx context.Context) ([]console.PathWatches, error) {
	release, err := b.builder()
	if err != nil {
		return nil, err
	}
	defer release()
	v, ok := adminBackend{s: b.s}.Watches()
	if !ok {
		return nil, console.ErrNotServing
	}
	var out []console.PathWatches
	for _, p := range v.ByPath() {
		ids := make([]string, len(p.Sessions))
		for i, id := range p.Sessions {
			ids[i] = hex(id)
		}
		out = append(out, console.PathWatches{Path: p.Path, Sessions: ids})
	}
	return out, nil
}

func (b consoleBackend) Ensemble(ctx context.Context) (console.Ensemble, error) {
	s := b.s
	var (
		mode         string
		ensemble     bool
		leader, zxid int64
		learners     []zab.LearnerState
		proposed     int64
	)
	err := b.query(ctx, func() {
		ensemble = s.ensembleMode()
		mode = s.role.mode()
		zxid = s.tree.LastZxid()
		rv := s.role.view()
		leader = rv.leader
		if rv.lead != nil {
			learners, proposed = rv.lead.learners, rv.lead.lastProposed
		}
	})
	if err != nil {
		return console.Ensemble{}, err
	}
	e := console.Ensemble{Mode: mode, Leader: leader, Zxid: hex(zxid)}
	if !ensemble {
		return e, nil
	}
	known := make(map[int64]zab.LearnerState, len(learners))
	for _, l := range learners {
		known[l.Sid] = l
	}
	peers := slices.Clone(s.cfg.Peers)
	slices.SortFunc(peers, func(a, b Peer) int { return cmp.Compare(a.ID, b.ID) })
	for _, p := range peers {
		m := console.Member{ID: p.ID, Quorum: p.QuorumAddr(), Election: p.ElectionAddr(), Observer: p.Observer,
			Leader: p.ID == leader, Self: p.ID == s.cfg.ServerID}
		if m.Self {
			m.Zxid = hex(zxid)
		}
		if l, ok := known[p.ID]; ok {
			m.Known, m.Synced = true, l.Synced
			// Lag counts proposals of this epoch the learner has not acked; an observer
			// acks nothing, so the leader cannot tell.
			if !l.Observer && l.LastAck > 0 {
				m.Zxid = hex(l.LastAck)
				if l.LastAck>>32 == proposed>>32 {
					lag := max(0, proposed-l.LastAck)
					m.Lag = &lag
				}
			}
		}
		e.Members = append(e.Members, m)
	}
	return e, nil
}

// Metrics is mntr's gauges and counters for the console's charts, which poll it: the
// summaries (Registry.Mntr, the Prometheus dump) are not gathered for them.
func (b consoleBackend) Metrics(ctx context.Context) (map[string]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st, ok := dispatch.Stats(adminBackend{s: b.s})
	if !ok {
		return nil, console.ErrNotServing
	}
	m := make(map[string]any)
	for _, f := range admin.MonitorJSON(st) {
		m[f.Key] = f.Value
	}
	return m, nil
}
