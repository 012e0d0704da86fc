package nemesis

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/zkd-io/zkd/internal/testing/linearize"
	"github.com/zkd-io/zkd/jute"
)

// Dir says whether a wire event went to the server or came from it.
type Dir int

const (
	Sent Dir = iota
	Received
)

// WireEvent is one request frame written or one reply frame read on a connection, in the
// order the client observed them. A request is recorded before its bytes are written, so
// its reply can never be recorded ahead of it.
type WireEvent struct {
	At   time.Duration // since the run started
	Dir  Dir
	Xid  int32
	Op   jute.OpCode // Sent: the request's opcode
	Zxid int64       // Received: the reply header's zxid
	Err  jute.Code   // Received: the reply header's err
}

// ConnLog is everything one TCP connection carried after its handshake.
type ConnLog struct {
	ID      int // unique per run, increasing in creation order
	Client  int
	Session int64
	Server  int // the member it was connected to (0-based)
	Events  []WireEvent
	Closed  string // why the client stopped using it
}

// Violation is one failed check.
type Violation struct {
	Check string // fifo, zxid, linearizability, lost-write, race, ...
	Msg   string
}

func (v Violation) String() string { return v.Check + ": " + v.Msg }

// CheckFIFO checks that every reply on a connection answers the oldest request on that
// connection still unanswered. Pings (xid -2) and notifications (xid -1) are outside the
// order: ZooKeeper's clients match them by their special xid. Only the first violation of
// each connection is reported: after one, the rest of that connection says little more.
func CheckFIFO(conns []*ConnLog) []Violation {
	var out []Violation
	for _, c := range conns {
		var unanswered []int32
		ops := map[int32]jute.OpCode{}
		replies := 0
		for _, ev := range c.Events {
			if ev.Xid == jute.XidPing || ev.Xid == jute.XidNotification {
				continue
			}
			if ev.Dir == Sent {
				unanswered = append(unanswered, ev.Xid)
				ops[ev.Xid] = ev.Op
				continue
			}
			replies++
			if len(unanswered) > 0 && unanswered[0] == ev.Xid {
				unanswered = unanswered[1:]
				continue
			}
			var msg string
			i := slices.Index(unanswered, ev.Xid)
			switch {
			case len(unanswered) == 0:
				msg = fmt.Sprintf("reply #%d is for xid %d, but no request is unanswered", replies, ev.Xid)
			case i < 0:
				msg = fmt.Sprintf("reply #%d is for xid %d, which is not an unanswered request; the oldest unanswered is xid %d", replies, ev.Xid, unanswered[0])
			default:
				msg = fmt.Sprintf("reply #%d is for xid %d, but the oldest unanswered is xid %d", replies, ev.Xid, unanswered[0])
			}
			out = append(out, Violation{Check: "fifo", Msg: fmt.Sprintf("conn %d (client %d, session 0x%x, server %d, at %v): %s; unanswered before it: %s",
				c.ID, c.Client, c.Session, c.Server+1, ev.At.Round(time.Millisecond), msg, xidList(unanswered, ops))})
			break
		}
	}
	return out
}

func xidList(x []int32, ops map[int32]jute.OpCode) string {
	const max = 12
	var s []string
	for i, v := range x {
		if i == max {
			s = append(s, fmt.Sprintf("... (%d in all)", len(x)))
			break
		}
		s = append(s, fmt.Sprintf("%d:%v", v, ops[v]))
	}
	return "[" + strings.Join(s, " ") + "]"
}

// CheckZxid checks that the zxid of the replies a session receives never goes backwards,
// across all its connections (a client resuming its session on another member sends the
// last zxid it saw, and the member must not serve it from an older state). A reply zxid is
// the server's last processed zxid (a write's own zxid); -1 and 0 are what ZooKeeper puts
// in replies that carry no state (unknown opcodes, auth, old notifications) and are
// skipped. conns must be in creation order, which is the order each client used them.
func CheckZxid(conns []*ConnLog) []Violation {
	type seen struct {
		zxid int64
		conn int
		at   time.Duration
	}
	last := map[int64]seen{}
	reported := map[int64]bool{}
	var out []Violation
	sorted := slices.Clone(conns)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	for _, c := range sorted {
		for _, ev := range c.Events {
			if ev.Dir != Received || ev.Zxid <= 0 || ev.Xid == jute.XidNotification {
				continue
			}
			prev, ok := last[c.Session]
			if ok && ev.Zxid < prev.zxid && !reported[c.Session] {
				reported[c.Session] = true
				out = append(out, Violation{Check: "zxid", Msg: fmt.Sprintf(
					"session 0x%x: conn %d (server %d) reply to xid %d at %v has zxid 0x%x, but conn %d already saw zxid 0x%x at %v",
					c.Session, c.ID, c.Server+1, ev.Xid, ev.At.Round(time.Millisecond), ev.Zxid, prev.conn, prev.zxid, prev.at.Round(time.Millisecond))})
			}
			if !ok || ev.Zxid > prev.zxid {
				last[c.Session] = seen{ev.Zxid, c.ID, ev.At}
			}
		}
	}
	return out
}

// CheckLinearizable checks the register history of each key: first CheckVersions, which is
// fast and names the operations at fault, then porcupine on the key's operations (final,
// the reads after healing, last), so that a violation names its key. Before porcupine,
// writes with unknown outcomes are settled where the history decides them (see
// settleUnknown). A porcupine check that runs out of time is not a violation; it is
// reported in timedOut. When dumpDir is not empty, a failing key's visualisation is
// written there.
func CheckLinearizable(ops, final []porcupine.Operation, timeout time.Duration, dumpDir string) (violations []Violation, timedOut []string) {
	byKey := map[string][]porcupine.Operation{}
	finalByKey := map[string]porcupine.Operation{}
	for _, op := range ops {
		k := op.Input.(linearize.Input).Key
		byKey[k] = append(byKey[k], op)
	}
	for _, op := range final {
		k := op.Input.(linearize.Input).Key
		byKey[k] = append(byKey[k], op)
		finalByKey[k] = op
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	model := linearize.Model.ToModel()
	for _, k := range keys {
		if v := CheckVersions(byKey[k]); len(v) > 0 {
			violations = append(violations, v...)
			continue
		}
		history := byKey[k]
		if f, ok := finalByKey[k]; ok {
			history = settleUnknown(history, f)
		}
		res, info := porcupine.CheckOperationsVerbose(model, history, timeout)
		switch res {
		case porcupine.Illegal:
			msg := fmt.Sprintf("key %s: the %d operations on it are not linearizable", k, len(history))
			if dumpDir != "" {
				path := filepath.Join(dumpDir, "linearizability"+strings.ReplaceAll(k, "/", "_")+".html")
				if err := os.MkdirAll(dumpDir, 0o755); err == nil && porcupine.VisualizePath(model, info, path) == nil {
					msg += "; visualisation: " + path
				}
			}
			violations = append(violations, Violation{Check: "linearizability", Msg: msg})
		case porcupine.Unknown:
			timedOut = append(timedOut, k)
		}
	}
	return violations, timedOut
}

// versionOf is the version an operation's outcome pins, if any: a read's version, or the
// new version of a write the server acknowledged.
func versionOf(op porcupine.Operation) (int32, bool) {
	in, out := op.Input.(linearize.Input), op.Output.(linearize.Output)
	if in.Kind == linearize.Get || out.Result == linearize.OK {
		return out.Version, true
	}
	return 0, false
}

// CheckVersions checks, key by key, what every linearizable register history must satisfy,
// given that written values are unique and the version grows by one per write: a version
// holds one value, a written value one version; and versions respect real time: an
// operation that starts after another returned sees at least its version (a write makes a
// greater one). It names the two operations of the first violation of each kind.
//
// For the operations that pin a version this is exact, not only necessary: version v holds
// from its write's linearization point p(v) to p(v+1), and the earliest choice of each p(v)
// fails only when a call that forces p(v) late (a write of v or earlier, a read of an
// earlier version) comes after a return that bounds it (the write of v, a read of v or
// later), which is a pair this check reports. What it cannot see is left to porcupine:
// failed CASes, and writes of unknown outcome.
func CheckVersions(ops []porcupine.Operation) []Violation {
	byKey := map[string][]porcupine.Operation{}
	var keys []string
	for _, op := range ops {
		k := keyOf(op)
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], op)
	}
	sort.Strings(keys)
	var out []Violation
	for _, k := range keys {
		out = append(out, checkKeyVersions(byKey[k])...)
	}
	return out
}

func checkKeyVersions(ops []porcupine.Operation) []Violation {
	var out []Violation
	desc := func(op porcupine.Operation) string {
		return fmt.Sprintf("client %d %s [%v, %v]", op.ClientId, linearize.Model.DescribeOperation(op.Input, op.Output),
			time.Duration(op.Call).Round(time.Microsecond), retString(op.Return))
	}
	valueAt := map[int32]porcupine.Operation{}
	versionOfValue := map[string]porcupine.Operation{}
	conflict := false
	for _, op := range ops {
		v, ok := versionOf(op)
		if !ok {
			continue
		}
		val := op.Input.(linearize.Input).Value
		if op.Input.(linearize.Input).Kind == linearize.Get {
			val = op.Output.(linearize.Output).Value
		}
		if o, seen := valueAt[v]; seen && !conflict && valueOfOp(o) != val {
			conflict = true
			out = append(out, Violation{Check: "linearizability", Msg: fmt.Sprintf("key %s: version %d holds two values: %s; %s", keyOf(op), v, desc(o), desc(op))})
		}
		valueAt[v] = op
		if v == 0 {
			continue // the initial empty value
		}
		if o, seen := versionOfValue[val]; seen && !conflict {
			if w, _ := versionOf(o); w != v {
				conflict = true
				out = append(out, Violation{Check: "linearizability", Msg: fmt.Sprintf("key %s: value %q has two versions: %s; %s", keyOf(op), val, desc(o), desc(op))})
			}
		}
		versionOfValue[val] = op
	}
	// Real time: sweep the operations by call, with the greatest version among those
	// that returned before.
	var pinned []porcupine.Operation
	for _, op := range ops {
		if _, ok := versionOf(op); ok {
			pinned = append(pinned, op)
		}
	}
	byRet := slices.Clone(pinned)
	sort.Slice(byRet, func(i, j int) bool { return byRet[i].Return < byRet[j].Return })
	sort.SliceStable(pinned, func(i, j int) bool { return pinned[i].Call < pinned[j].Call })
	var best *porcupine.Operation
	bestV := int32(-1)
	j := 0
	for _, op := range pinned {
		for j < len(byRet) && byRet[j].Return < op.Call {
			if v, _ := versionOf(byRet[j]); v > bestV {
				bestV, best = v, &byRet[j]
			}
			j++
		}
		v, _ := versionOf(op)
		isWrite := op.Input.(linearize.Input).Kind != linearize.Get
		if best != nil && (v < bestV || isWrite && v == bestV) {
			what := "stale read"
			if isWrite {
				what = "write ordered before an earlier one"
			}
			out = append(out, Violation{Check: "linearizability", Msg: fmt.Sprintf("key %s: %s: %s started after %s had returned", keyOf(op), what, desc(op), desc(*best))})
			break
		}
	}
	return out
}

func keyOf(op porcupine.Operation) string { return op.Input.(linearize.Input).Key }

func valueOfOp(op porcupine.Operation) string {
	if op.Input.(linearize.Input).Kind == linearize.Get {
		return op.Output.(linearize.Output).Value
	}
	return op.Input.(linearize.Input).Value
}

func retString(r int64) string {
	if r == unknownReturn {
		return "never"
	}
	return time.Duration(r).Round(time.Microsecond).String()
}

// settleUnknown decides the writes of one key whose outcome the client never learned,
// where the history leaves only one choice, so that porcupine does not have to try each
// one at every point after its call. It applies when the final read saw the greatest
// version anywhere, V, and every version 1..V is pinned to a write: acknowledged with it,
// or the write of a value some read saw at it (values are unique). Then exactly those
// writes took effect before the final read (version v has one writer), so an unknown write
// pinned to a version becomes a success with that version (its return stays open), and
// the other unknown writes had no effect anyone observed: any that took effect did so
// after the final read, which returned after every other operation, and are dropped.
// Every linearization of the result is one of the original history, and the reverse.
func settleUnknown(ops []porcupine.Operation, final porcupine.Operation) []porcupine.Operation {
	V := final.Output.(linearize.Output).Version
	writerOf := map[string]int32{} // value -> version it was pinned to
	pinnedVersions := map[int32]bool{}
	for _, op := range ops {
		v, ok := versionOf(op)
		if !ok {
			continue
		}
		if v > V {
			return ops
		}
		if op.Return > final.Call && op.Return != final.Return {
			return ops // the final read is not after everything else
		}
		pinnedVersions[v] = true
		writerOf[valueOfOp(op)] = v
	}
	for v := int32(1); v <= V; v++ {
		if !pinnedVersions[v] {
			return ops
		}
	}
	var out []porcupine.Operation
	for _, op := range ops {
		o := op.Output.(linearize.Output)
		if o.Result != linearize.Unknown {
			out = append(out, op)
			continue
		}
		if v, ok := writerOf[op.Input.(linearize.Input).Value]; ok && v > 0 {
			op.Output = linearize.Output{Result: linearize.OK, Version: v}
			out = append(out, op)
		}
	}
	return out
}

// WriteRecord is one setData (plain or CAS) as the clients saw it end.
type WriteRecord struct {
	Key     string
	Value   string
	Acked   bool  // the server answered OK
	Version int32 // the version the reply's Stat reported, when Acked
}

// FinalRead is a key's value and version read after every fault was healed.
type FinalRead struct {
	Key     string
	Value   string
	Version int32
}

// CheckNoLostWrites checks the final state of every key against the writes: each
// acknowledged write's version is at most the final version (the version only grows, so a
// smaller final version means acknowledged writes were undone), the final value is one that
// was written (or the initial empty value), and when the write that put the final value
// there was acknowledged, its version is the final version.
func CheckNoLostWrites(writes []WriteRecord, final []FinalRead) []Violation {
	var out []Violation
	for _, f := range final {
		var maxAcked *WriteRecord
		var source *WriteRecord
		for i := range writes {
			w := &writes[i]
			if w.Key != f.Key {
				continue
			}
			if w.Acked && (maxAcked == nil || w.Version > maxAcked.Version) {
				maxAcked = w
			}
			if w.Value == f.Value {
				source = w
			}
		}
		if maxAcked != nil && maxAcked.Version > f.Version {
			out = append(out, Violation{Check: "lost-write", Msg: fmt.Sprintf(
				"key %s: final version %d (value %q), but the write of %q was acknowledged with version %d",
				f.Key, f.Version, f.Value, maxAcked.Value, maxAcked.Version)})
			continue
		}
		switch {
		case source == nil && f.Value != "":
			out = append(out, Violation{Check: "lost-write", Msg: fmt.Sprintf("key %s: final value %q (version %d) was never written", f.Key, f.Value, f.Version)})
		case source == nil && f.Version != 0:
			out = append(out, Violation{Check: "lost-write", Msg: fmt.Sprintf("key %s: final value is the initial empty one, but its version is %d", f.Key, f.Version)})
		case source != nil && source.Acked && source.Version != f.Version:
			out = append(out, Violation{Check: "lost-write", Msg: fmt.Sprintf("key %s: final value %q has version %d, but its write was acknowledged with version %d", f.Key, f.Value, f.Version, source.Version)})
		}
	}
	return out
}

// FormatConns writes every connection's events, one a line, for reading a failed run.
func FormatConns(conns []*ConnLog) string {
	var b strings.Builder
	for _, c := range conns {
		fmt.Fprintf(&b, "conn %d client %d session 0x%x server %d closed: %s\n", c.ID, c.Client, c.Session, c.Server+1, c.Closed)
		for _, ev := range c.Events {
			if ev.Dir == Sent {
				fmt.Fprintf(&b, "  %12v  -> xid %d %v\n", ev.At, ev.Xid, ev.Op)
			} else {
				fmt.Fprintf(&b, "  %12v  <- xid %d zxid 0x%x err %d\n", ev.At, ev.Xid, ev.Zxid, ev.Err)
			}
		}
	}
	return b.String()
}

// FormatOps writes the operations given to porcupine, one a line, ordered by call time.
func FormatOps(ops []porcupine.Operation) string {
	sorted := slices.Clone(ops)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	var b strings.Builder
	for _, op := range sorted {
		ret := "never"
		if op.Return != unknownReturn {
			ret = fmt.Sprint(op.Return)
		}
		fmt.Fprintf(&b, "%d %s client %d: %s\n", op.Call, ret, op.ClientId, linearize.Model.DescribeOperation(op.Input, op.Output))
	}
	return b.String()
}
