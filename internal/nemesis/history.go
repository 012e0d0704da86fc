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
	"github.com/zkd-io/zkd/internal/linearize"
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
		replies := 0
		for _, ev := range c.Events {
			if ev.Xid == jute.XidPing || ev.Xid == jute.XidNotification {
				continue
			}
			if ev.Dir == Sent {
				unanswered = append(unanswered, ev.Xid)
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
				c.ID, c.Client, c.Session, c.Server+1, ev.At.Round(time.Millisecond), msg, xidList(unanswered))})
			break
		}
	}
	return out
}

func xidList(x []int32) string {
	const max = 8
	var s []string
	for i, v := range x {
		if i == max {
			s = append(s, fmt.Sprintf("... (%d in all)", len(x)))
			break
		}
		s = append(s, fmt.Sprint(v))
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

// CheckLinearizable runs porcupine on each key's operations separately, so that a
// violation names its key. A check that runs out of time is not a violation; it is
// reported in timedOut. When dumpDir is not empty, a failing key's visualisation is
// written there.
func CheckLinearizable(ops []porcupine.Operation, timeout time.Duration, dumpDir string) (violations []Violation, timedOut []string) {
	byKey := map[string][]porcupine.Operation{}
	for _, op := range ops {
		k := op.Input.(linearize.Input).Key
		byKey[k] = append(byKey[k], op)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	model := linearize.Model.ToModel()
	for _, k := range keys {
		res, info := porcupine.CheckOperationsVerbose(model, byKey[k], timeout)
		switch res {
		case porcupine.Illegal:
			msg := fmt.Sprintf("key %s: the %d operations on it are not linearizable", k, len(byKey[k]))
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
