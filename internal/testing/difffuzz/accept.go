package difffuzz

import (
	"slices"
	"strings"

	"github.com/zkd-io/zkd/jute"
)

// An acceptance recognises one row of the version table (internal/versiondiff) in a
// difference: the step and the two outcomes are what the row says 3.8.0 and zkd answer.
// Anything no acceptance recognises is a divergence: a bug in zkd, or a missing row.
type acceptance struct {
	row string
	// match reports whether the difference at step i is the row's, and whether the two
	// servers' states may differ after it (the rest of the program is then not compared).
	match func(c *diffCase) (ok, stop bool)
}

// diffCase is one differing step.
type diffCase struct {
	p        *Program
	i        int
	st       *Step
	rec      jute.Record // the decoded request (nil when undecodable or not a request)
	ref, zkd Outcome
}

var acceptances = []acceptance{
	{row: "ZOOKEEPER-2590", match: acceptExistsNoAuth},
	{row: "ZOOKEEPER-4026", match: acceptMultiCreateOpcode},
	{row: "ZOOKEEPER-4240", match: acceptIPv6ACL},
	{row: "ZOOKEEPER-4466", match: acceptWatchModes},
	{row: "zkd-internal-ops", match: acceptInternalOps},
	{row: "zkd-sasl-unconfigured", match: acceptSASLUnconfigured},
}

// explain returns the row that explains the difference at step i, or "".
func explain(p *Program, i int, ref, zkd Outcome) (row string, stop bool) {
	c := &diffCase{p: p, i: i, st: &p.Steps[i], ref: ref, zkd: zkd}
	if st := c.st; st.Kind == Raw && !st.RawWire && len(st.Body) >= 8 {
		// A frame that decodes as a request is judged as one.
		d := jute.NewDecoder(st.Body)
		var h jute.RequestHeader
		h.Decode(d)
		c.st = &Step{Sess: st.Sess, Kind: Request, Op: h.Type, Xid: h.Xid, Body: st.Body[8:]}
	}
	if rec, ok := c.st.Decode(); ok {
		c.rec = rec
	} else if rec, ok := jute.NewRequestBody(c.st.Op); ok && rec != nil && p.Steps[i].Kind == Raw {
		// A frame with bytes after its record is read as ZooKeeper reads it: the record,
		// the rest ignored.
		d := jute.NewDecoder(c.st.Body)
		rec.Decode(d)
		if d.Err() == nil {
			c.rec = rec
		}
	}
	if z, took := stripEventZxids(ref, zkd); took {
		if z.String() == ref.String() {
			return "ZOOKEEPER-4655", false
		}
		c.zkd = z
	}
	for _, a := range acceptances {
		if ok, stop := a.match(c); ok {
			return a.row, stop
		}
	}
	return "", false
}

// isEvent reports a notification line.
func isEvent(line string) bool { return strings.Contains(line, " event: ") }

// withoutEvents returns the lines that are not notifications.
func withoutEvents(lines []string) []string {
	var out []string
	for _, l := range lines {
		if !isEvent(l) {
			out = append(out, l)
		}
	}
	return out
}

// eventsOnlyDiffer reports whether the outcomes differ in notifications only.
func (c *diffCase) eventsOnlyDiffer() bool {
	return slices.Equal(withoutEvents(c.ref.Lines), withoutEvents(c.zkd.Lines))
}

// ZOOKEEPER-2590: 3.8.0 answers exists without checking READ; zkd answers NOAUTH. A watch
// 3.8.0 set then is not set on zkd: stop.
func acceptExistsNoAuth(c *diffCase) (bool, bool) {
	r, ok := c.rec.(*jute.PathWatchRequest)
	if !ok || c.st.Op != jute.OpExists || !c.ref.Replied || !c.zkd.Replied ||
		c.ref.Err != jute.OK || c.zkd.Err != jute.ErrNoAuth {
		return false, false
	}
	return true, r.Watch
}

// ipv6ACL reports an ip ACL whose address is an IPv6 one.
func ipv6ACL(acl []jute.ACL) bool {
	for _, a := range acl {
		if a.ID.Scheme == "ip" && strings.Contains(a.ID.ID, ":") {
			return true
		}
	}
	return false
}

// ZOOKEEPER-4240: 3.8.0 refuses an IPv6 ip ACL (INVALIDACL), zkd stores it as 3.9.4 does.
func acceptIPv6ACL(c *diffCase) (bool, bool) {
	has := false
	switch r := c.rec.(type) {
	case *jute.CreateRequest:
		has = ipv6ACL(r.ACL)
	case *jute.CreateTTLRequest:
		has = ipv6ACL(r.ACL)
	case *jute.SetACLRequest:
		has = ipv6ACL(r.ACL)
	case *jute.MultiRequest:
		for _, op := range r.Ops {
			switch b := op.Body.(type) {
			case *jute.CreateRequest:
				has = has || ipv6ACL(b.ACL)
			case *jute.CreateTTLRequest:
				has = has || ipv6ACL(b.ACL)
			}
		}
		if has && strings.Contains(c.ref.String(), "error(-114)") {
			return true, true
		}
		return false, false
	}
	return has && c.ref.Err == jute.ErrInvalidACL && c.zkd.Err != jute.ErrInvalidACL, true
}

// ZOOKEEPER-4026: inside a multi, 3.8.0 lets a create's flags decide its type; 3.9 and zkd
// keep the opcode (create2 answers with a Stat; createContainer makes a container whatever
// its flags) and refuse flags 7 and -1 as a whole-request MARSHALLINGERROR where 3.8.0
// fails the one op. Where the nodes made differ (a container or not) the states part: stop.
func acceptMultiCreateOpcode(c *diffCase) (bool, bool) {
	r, ok := c.rec.(*jute.MultiRequest)
	if !ok || c.st.Op != jute.OpMulti {
		return false, false
	}
	disagree, typeDiffers := false, false
	for _, op := range r.Ops {
		b, ok := op.Body.(*jute.CreateRequest)
		if !ok {
			continue
		}
		ttl, valid := flagMode(b.Flags)
		switch {
		case (!valid || ttl) && op.Type != jute.OpCreateTTL:
			disagree = true
		case op.Type == jute.OpCreate2 && b.Flags != jute.FlagContainer:
			disagree = true
		case op.Type == jute.OpCreateContainer && b.Flags != jute.FlagContainer:
			disagree, typeDiffers = true, true
		}
	}
	return disagree, typeDiffers || !c.eventsOnlyDifferOrNone()
}

// flagMode reports whether flags is a create mode, and whether a TTL one.
func flagMode(flags int32) (ttl, ok bool) {
	switch flags {
	case jute.FlagPersistent, jute.FlagEphemeral, jute.FlagPersistentSequential, jute.FlagEphemeralSequential, jute.FlagContainer:
		return false, true
	case jute.FlagPersistentWithTTL, jute.FlagPersistentSequentialTTL:
		return true, true
	}
	return false, false
}

// eventsOnlyDifferOrNone reports whether the notifications of the two outcomes are equal.
func (c *diffCase) eventsOnlyDifferOrNone() bool {
	var re, ze []string
	for _, l := range c.ref.Lines {
		if isEvent(l) {
			re = append(re, l)
		}
	}
	for _, l := range c.zkd.Lines {
		if isEvent(l) {
			ze = append(ze, l)
		}
	}
	return slices.Equal(re, ze)
}

// Watch modes, as a set.
const (
	modeStandard = 1 << iota
	modePersistent
	modeRecursive
)

// watchModes returns, for the session name, the watch modes it asked for on each path
// before step i.
func (c *diffCase) watchModes(name string) map[string]int {
	modes := map[string]int{}
	for j := 0; j < c.i; j++ {
		st := &c.p.Steps[j]
		if st.Sess != name {
			continue
		}
		if st.Kind == Open {
			clear(modes)
			continue
		}
		rec, ok := st.Decode()
		if !ok {
			continue
		}
		switch r := rec.(type) {
		case *jute.PathWatchRequest:
			if r.Watch {
				modes[r.Path] |= modeStandard
			}
		case *jute.AddWatchRequest:
			switch r.Mode {
			case jute.AddWatchPersistent:
				modes[r.Path] |= modePersistent
			case jute.AddWatchPersistentRecursive:
				modes[r.Path] |= modeRecursive
			}
		case *jute.SetWatches:
			for _, l := range [][]string{r.DataWatches, r.ExistWatches, r.ChildWatches} {
				for _, p := range l {
					modes[p] |= modeStandard
				}
			}
			for _, p := range r.PersistentWatches {
				modes[p] |= modePersistent
			}
			for _, p := range r.PersistentRecursiveWatches {
				modes[p] |= modeRecursive
			}
		}
	}
	return modes
}

// mixedModes reports whether the session asked for two watch modes on one path.
func (c *diffCase) mixedModes(name string) bool {
	for _, m := range c.watchModes(name) {
		if m&(m-1) != 0 {
			return true
		}
	}
	return false
}

// ZOOKEEPER-4466 (and -4471, -4472): 3.8.0 keeps one watch mode per session and path, 3.9
// and zkd keep a standard and a persistent one side by side. Accepted where every differing
// line is about a session that asked for both on one path: its notifications, or the reply
// to its own watch request. The watches differ from then on: stop.
func acceptWatchModes(c *diffCase) (bool, bool) {
	if r, ok := c.rec.(*jute.WatchesRequest); ok && c.ref.Replied && c.zkd.Replied {
		switch {
		case (r.Type == jute.WatcherPersistent || r.Type == jute.WatcherPersistentRecursive) &&
			c.ref.Err == jute.ErrMarshallingError:
			// 3.8.0 knows no watcher types 4 and 5. A removal that worked on zkd leaves
			// the watches apart.
			return true, c.st.Op == jute.OpRemoveWatches && c.zkd.Err == jute.OK
		case !strings.HasPrefix(r.Path, "/") && c.ref.Err == jute.ErrMarshallingError && c.zkd.Err == jute.ErrNoWatcher:
			// 3.8.0 fails on a path without a leading slash; 3.9 looks it up like any other.
			return true, false
		case c.st.Op == jute.OpCheckWatches && c.ref.Err == jute.OK && c.zkd.Err == jute.ErrNoWatcher:
			// 3.8.0's checkWatches finds other connections' watches too.
			return true, false
		case (r.Type == jute.WatcherData || r.Type == jute.WatcherChildren) && c.ref.Err == jute.OK &&
			c.zkd.Err == jute.ErrNoWatcher:
			// 3.8.0's removeWatches DATA or CHILDREN removes a persistent watch too.
			if c.watchModes(c.st.Sess)[r.Path]&(modePersistent|modeRecursive) != 0 {
				return true, true
			}
		}
	}
	mixed := map[string]bool{}
	for _, n := range c.p.Sessions {
		mixed[n] = c.mixedModes(n)
	}
	for j := 0; j < c.i; j++ {
		if n := c.p.Steps[j].Sess; !mixed[n] {
			mixed[n] = c.mixedModes(n)
		}
	}
	for n, m := range mixed {
		if !m {
			delete(mixed, n)
		}
	}
	if len(mixed) == 0 {
		return false, false
	}
	for _, l := range symmetricDiff(c.ref.Lines, c.zkd.Lines) {
		who, _, _ := strings.Cut(l, ":")
		who, _, _ = strings.Cut(who, " ")
		if !mixed[who] {
			return false, false
		}
		if !isEvent(l) && who != c.st.Sess {
			return false, false
		}
	}
	return true, true
}

// symmetricDiff returns the lines of each side not matched, as multisets, on the other.
func symmetricDiff(a, b []string) []string {
	count := map[string]int{}
	for _, l := range a {
		count[l]++
	}
	for _, l := range b {
		count[l]--
	}
	var out []string
	for l, n := range count {
		if n != 0 {
			out = append(out, l)
		}
	}
	// Lines equal in number but in another order are differences too.
	if len(out) == 0 && !slices.Equal(a, b) {
		return append(append(out, a...), b...)
	}
	return out
}

// zkd-internal-ops: createSession and deleteContainer are the server's own requests; zkd
// answers a client that sends them UNIMPLEMENTED and closes, as ZooKeeper does for unknown
// opcodes; ZooKeeper serves them. What ZooKeeper did (a session, a deleted container) is
// not on zkd: stop.
func acceptInternalOps(c *diffCase) (bool, bool) {
	if c.st.Op != jute.OpCreateSession && c.st.Op != jute.OpDeleteContainer {
		return false, false
	}
	return c.zkd.Replied && c.zkd.Err == jute.ErrUnimplemented && c.zkd.Closed, true
}

// zkd-sasl-unconfigured: neither server has SASL configured; the reference answers OK with
// an empty token, zkd AUTHFAILED and closes. The session is gone on zkd: stop.
func acceptSASLUnconfigured(c *diffCase) (bool, bool) {
	if c.st.Op != jute.OpSASL || !c.ref.Replied || c.ref.Err != jute.OK {
		return false, false
	}
	return c.zkd.Replied && c.zkd.Err == jute.ErrAuthFailed && c.zkd.Closed, true
}

// ZOOKEEPER-4655: 3.9 and zkd send the zxid of the txn that fired a watch in the
// notification's header, 3.8.0 sends -1 (Norm.Event shows it only when it is not -1).
// stripEventZxids takes those zxids out of zkd's notification lines when the reference
// shows none and every one zkd sent is that of one of the step's replies (the txn that
// fired it); it reports whether it took any. The rest of the comparison then judges the
// step without them, so this row combines with the others.
func stripEventZxids(ref, zkd Outcome) (Outcome, bool) {
	for _, l := range ref.Lines {
		if isEvent(l) && strings.Contains(l, " zxid=") {
			return zkd, false
		}
	}
	replies := map[string]bool{}
	for _, l := range zkd.Lines {
		if i := strings.Index(l, ": reply "); i >= 0 && !isEvent(l) {
			for _, x := range strings.Fields(l[i:]) {
				if z, ok := strings.CutPrefix(x, "zxid="); ok {
					replies[z] = true
					break
				}
			}
		}
	}
	out := zkd
	out.Lines = make([]string, len(zkd.Lines))
	took := false
	for i, l := range zkd.Lines {
		if j := strings.Index(l, " zxid="); isEvent(l) && j >= 0 {
			if !replies[l[j+len(" zxid="):]] {
				return zkd, false
			}
			l, took = l[:j], true
		}
		out.Lines[i] = l
	}
	return out, took
}
