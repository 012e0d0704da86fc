package difffuzz

import (
	"fmt"
	"regexp"

	"github.com/zkd-io/zkd/jute"
)

// The keeper-ops extension's ops (ClickHouse Keeper's 500-503 and zkd's createWithParents)
// and the paged-list extension's listPage have no counterpart in ZooKeeper: programs with
// them (GenOptions.KeeperOps) run on zkd alone, and KeeperInvariants checks their
// transcripts instead of a reference server.
// Each such op comes with probe steps on its session that the invariants read.

// keeperStep appends one extension op and its probes.
func (g *gen) keeperStep(s string) {
	switch x := g.r.IntN(100); {
	case x < 30:
		// removeRecursive between two counts of the subtree, then whether the node exists.
		path := g.writePath()
		limit := uint32(g.r.IntN(8))
		if g.pct(40) {
			limit = 1 << 20
		}
		g.request(s, jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: path})
		g.request(s, jute.OpRemoveRecursive, &jute.RemoveRecursiveRequest{Path: path, Limit: limit})
		g.request(s, jute.OpGetAllChildrenNumber, &jute.PathRequest{Path: path})
		g.request(s, jute.OpExists, &jute.PathWatchRequest{Path: path})
	case x < 50:
		path := g.writePath()
		if g.pct(50) && !isSystem(path) {
			path = g.newPath()
		}
		flags := []int32{jute.FlagPersistent, jute.FlagEphemeral, jute.FlagPersistentSequential}[g.r.IntN(3)]
		g.remember(path, flags)
		g.request(s, jute.OpCreateIfNotExists, &jute.CreateRequest{Path: path, Data: g.data(), ACL: g.acl(), Flags: flags})
		g.request(s, jute.OpExists, &jute.PathWatchRequest{Path: path})
	case x < 65:
		path := g.newPath() + "/" + segments[g.r.IntN(len(segments))]
		flags := []int32{jute.FlagPersistent, jute.FlagEphemeral, jute.FlagContainer}[g.r.IntN(3)]
		g.remember(path, flags)
		g.request(s, jute.OpCreateWithParents, &jute.CreateRequest{Path: path, Data: g.data(), ACL: g.acl(), Flags: flags})
		g.request(s, jute.OpExists, &jute.PathWatchRequest{Path: path})
	case x < 75:
		path := g.path()
		g.request(s, jute.OpExists, &jute.PathWatchRequest{Path: path})
		g.request(s, jute.OpCheckNotExists, &jute.CheckVersionRequest{Path: path, Version: -1})
	case x < 85:
		ops := g.multiOps(false)
		for range 1 + g.r.IntN(2) {
			var op jute.MultiOp
			switch g.r.IntN(3) {
			case 0:
				op = jute.MultiOp{Type: jute.OpCheckNotExists, Body: &jute.CheckVersionRequest{Path: g.path(), Version: g.version()}}
			case 1:
				path := g.writePath()
				g.remember(path, 0)
				op = jute.MultiOp{Type: jute.OpCreateIfNotExists, Body: &jute.CreateRequest{Path: path, Data: g.data(), ACL: g.acl()}}
			default:
				op = jute.MultiOp{Type: jute.OpRemoveRecursive, Body: &jute.RemoveRecursiveRequest{Path: g.writePath(), Limit: uint32(g.r.IntN(10))}}
			}
			i := g.r.IntN(len(ops) + 1)
			ops = append(ops[:i], append([]jute.MultiOp{op}, ops[i:]...)...)
		}
		g.request(s, jute.OpMulti, &jute.MultiRequest{Ops: ops})
	case x < 87:
		// A resumed persistent watch (watch-resume) from a zxid of the program's past: two
		// fresh servers must replay the same events.
		g.request(s, jute.OpAddWatchSince, &jute.AddWatchSinceRequest{Path: g.readPath(), Mode: int32(g.r.IntN(2)), SinceZxid: int64(g.r.IntN(40))})
	case x < 90:
		g.resumeStep() // watchresume.go
	case x < 92:
		g.request(s, jute.OpFilteredList, &jute.FilteredListRequest{Path: g.readPath(), Watch: g.pct(50), Type: byte(g.r.IntN(3))})
	case x < 94:
		// A larger limit (large-replies) for the session: the grant is the same on two
		// servers of one configuration, and the replies after it are unchanged.
		g.request(s, jute.OpSetMaxBuffer, &jute.SetMaxBufferRequest{Limit: int32(g.r.IntN(8 << 20))})
	default:
		// A listing in one page right after getChildren of the same node: when no write
		// came between them, they list the same children.
		path := g.readPath()
		g.request(s, jute.OpGetChildren, &jute.PathWatchRequest{Path: path})
		g.request(s, jute.OpListPage, &jute.ListPageRequest{Path: path, Limit: 10000, WithStat: g.pct(50)})
	}
}

var (
	zxidField  = regexp.MustCompile(` zxid=\S+`)
	zxidValue  = regexp.MustCompile(` zxid=(\S+)`)
	listField  = regexp.MustCompile(` list=(\[.*?\]|null)`)
	namesField = regexp.MustCompile(` names=(\[.*?\]|null)`)
)

// KeeperInvariants checks a zkd transcript of a program with the extension's ops against
// what they promise, from the probes keeperStep puts around them:
//
//   - a removeRecursive that succeeds leaves no node (the exists after it: NONODE);
//   - one refused (NOTEMPTY, its limit; NOAUTH) deletes nothing: the subtree's count after
//     it is the count before it;
//   - a createIfNotExists or createWithParents that succeeds leaves the node;
//   - a checkNotExists on its own answers NODEEXISTS exactly when the node exists;
//   - a listPage answered at the zxid of the getChildren just before it lists the same
//     children, and says so (total, not truncated);
//   - a resumed watch misses no event (resumeInvariant).
//
// It returns the broken ones, described.
func KeeperInvariants(p *Program, tr *Transcript) []string {
	var bad []string
	out := func(i int) (Outcome, bool) {
		if i < 0 || i >= len(tr.Outcomes) || i >= len(p.Steps) || !tr.Outcomes[i].Replied {
			return Outcome{}, false
		}
		return tr.Outcomes[i], true
	}
	// probe is the outcome of step i if it is the probe keeperStep put there: a request
	// of op on path by sess. A later generator step may have made it something else (raw
	// turns the step before it into a damaged frame).
	probe := func(i int, sess string, op jute.OpCode, path string) (Outcome, bool) {
		if i < 0 || i >= len(p.Steps) {
			return Outcome{}, false
		}
		st := &p.Steps[i]
		rec, ok := st.Decode()
		if st.Kind != Request || st.Sess != sess || st.Op != op || !ok || pathOf(rec) != path {
			return Outcome{}, false
		}
		return out(i)
	}
	for i := range p.Steps {
		st := &p.Steps[i]
		o, ok := out(i)
		if st.Kind != Request || !ok {
			continue
		}
		fail := func(format string, a ...any) {
			bad = append(bad, fmt.Sprintf("step %d (%s): %s", i+1, st.line(), fmt.Sprintf(format, a...)))
		}
		rec, ok := st.Decode()
		if !ok {
			continue
		}
		path := pathOf(rec)
		switch st.Op {
		case jute.OpRemoveRecursive:
			before, ok1 := probe(i-1, st.Sess, jute.OpGetAllChildrenNumber, path)
			after, ok2 := probe(i+1, st.Sess, jute.OpGetAllChildrenNumber, path)
			exists, ok3 := probe(i+2, st.Sess, jute.OpExists, path)
			switch {
			case o.Err == jute.OK && ok3:
				if exists.Err != jute.ErrNoNode {
					fail("succeeded, then exists answered %v", exists.Err)
				}
			case (o.Err == jute.ErrNotEmpty || o.Err == jute.ErrNoAuth) && ok1 && ok2:
				if b, a := replyOf(before), replyOf(after); b != a {
					fail("refused (%v) but the subtree changed: %q before, %q after", o.Err, b, a)
				}
			}
		case jute.OpCreateIfNotExists, jute.OpCreateWithParents:
			if exists, ok := probe(i+1, st.Sess, jute.OpExists, path); ok && o.Err == jute.OK && !found(exists.Err) {
				fail("succeeded, then exists answered %v", exists.Err)
			}
		case jute.OpListPage:
			list, ok := probe(i-1, st.Sess, jute.OpGetChildren, path)
			if !ok || list.Err != jute.OK || o.Err != jute.OK {
				break
			}
			lr, pr := rawReply(list), rawReply(o)
			lz, pz := zxidValue.FindStringSubmatch(lr), zxidValue.FindStringSubmatch(pr)
			ln, pn := listField.FindStringSubmatch(lr), namesField.FindStringSubmatch(pr)
			if lz == nil || pz == nil || lz[1] != pz[1] {
				break // a write came between them
			}
			if ln == nil || pn == nil || ln[1] != pn[1] {
				fail("listed %v where getChildren at the same zxid listed %v", pn, ln)
			}
		case jute.OpAddWatchSince:
			bad = append(bad, resumeInvariant(p, tr, i)...)
		case jute.OpCheckNotExists:
			if exists, ok := probe(i-1, st.Sess, jute.OpExists, path); ok && exists.Err != jute.ErrNoAuth && o.Err != jute.ErrNoAuth &&
				o.Err != jute.ErrBadArguments && found(exists.Err) != (o.Err == jute.ErrNodeExists) {
				fail("answered %v where exists answered %v", o.Err, exists.Err)
			}
		}
	}
	return bad
}

// replyOf is an outcome's reply line without its zxid (a refused write still takes one).
func replyOf(o Outcome) string { return zxidField.ReplaceAllString(rawReply(o), "") }

// rawReply is an outcome's reply line as rendered, zxid included.
func rawReply(o Outcome) string {
	for _, l := range o.Lines {
		if !isEvent(l) {
			return l
		}
	}
	return ""
}

// found reports whether an exists answer shows the node is there (NOAUTH: there, unreadable).
func found(c jute.Code) bool { return c == jute.OK || c == jute.ErrNoAuth }

// pathOf is the path of a request record, "" for one without.
func pathOf(rec jute.Record) string {
	switch r := rec.(type) {
	case *jute.PathRequest:
		return r.Path
	case *jute.PathWatchRequest:
		return r.Path
	case *jute.PathVersionRequest:
		return r.Path
	case *jute.CreateRequest:
		return r.Path
	case *jute.RemoveRecursiveRequest:
		return r.Path
	case *jute.ListPageRequest:
		return r.Path
	}
	return ""
}
