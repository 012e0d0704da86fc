package compat

import (
	"fmt"
	"strings"

	"github.com/zkd-io/zkd/jute"
)

// Watches as ZooKeeper 3.9 answers them: events withheld from watchers without READ
// (CVE-2024-23944, 3.8.4/3.9.2), and several watch modes on one path of one session with
// their checks and removals (ZOOKEEPER-4466, -4471, -4472, 3.9.0).
//
// Debian's reference server (3.8.0-11+deb12u2) carries the CVE-2024-23944 fix, so the
// watch-acl group is compared with it step by step (upstream 3.8.0 would deliver every
// event there). Where 3.8.0 answers the watch modes otherwise, zkdDiffers steps name their
// JIRA in the call, where TestVersionDiffsTable finds it.
const (
	why4466 = "3.9 keeps a standard and a persistent watch of one session on one path side by side, and a firing consumes only the standard one; 3.8.0 keeps the last registered mode"
	why4471 = "3.9's removeWatches DATA/CHILDREN remove only standard watches; 3.8.0 removes the path's entry in that table, half of a persistent watch included"
	why4472 = "3.9 knows watcher types PERSISTENT (4) and PERSISTENT_RECURSIVE (5); 3.8.0 fails to decode them (MARSHALLINGERROR)"
)

// seen runs st and then adds, for each named session, one line listing exactly the events
// it received during the step ("w saw [NodeCreated /x]"), so that a zkdDiffers step can
// require an event to be missing, not only present.
func seen(who []string, st step) step {
	inner := st
	st.act = func(r *run) string {
		lines := append(r.request(inner), r.drain()...)
		for _, name := range who {
			var evs []string
			for _, l := range lines {
				for _, when := range []string{" before reply: ", " after reply: "} {
					if rest, ok := strings.CutPrefix(l, "  "+name+when); ok {
						evs = append(evs, rest)
					}
				}
			}
			lines = append(lines, fmt.Sprintf("  %s saw [%s]", name, strings.Join(evs, ", ")))
		}
		return strings.Join(lines, "\n")
	}
	return st
}

func watch39Groups() []group {
	a := []string{"a"}
	w := []string{"w"}
	ws := []string{"w", "s"}
	return []group{
		// CVE-2024-23944 (3.8.4, 3.9.2; in Debian's 3.8.0-11+deb12u2): a writes as alice, w
		// has no credentials but its ip, s is super.
		{name: "watch-acl", sessions: []string{"a", "w", "s"}, steps: []step{
			auth("a", "digest", "alice:pw"),
			auth("s", "digest", "super:"+superPasswd),
			create("a", "/wa", nil, persistent),
			createACL("a", "/wa/s", nil, jute.CreatorAllACL, persistent),
			create("a", "/wa/o", nil, persistent),
			addWatch("w", "/wa/s", jute.AddWatchPersistent), // addWatch checks no ACL
			addWatch("w", "/wa", jute.AddWatchPersistentRecursive),
			children("w", "/wa", true),
			exists("w", "/wa/n", true),
			addWatch("s", "/wa", jute.AddWatchPersistentRecursive),
			seen(ws, setData("a", "/wa/s", b("1"), -1)),
			// A readable child of an unreadable parent: the child's event passes, the
			// parent's NodeChildrenChanged does not.
			seen(ws, create("a", "/wa/s/k", nil, persistent)),
			// A node born unreadable: the exist watch is used up without an event.
			seen(ws, createACL("a", "/wa/n", nil, jute.CreatorAllACL, persistent)),
			checkWatches("w", "/wa/n", jute.WatcherData),
			// NodeDeleted is checked against the deleted node's ACL.
			seen(ws, del("a", "/wa/n", -1)),
			seen(ws, del("a", "/wa/s/k", -1)),
			// The ACL at the change counts, not the one when the watch was set; the one-shot
			// watch is used up either way.
			getData("w", "/wa/o", true),
			setACL("a", "/wa/o", jute.CreatorAllACL, -1),
			seen(ws, setData("a", "/wa/o", b("1"), -1)),
			checkWatches("w", "/wa/o", jute.WatcherData),
			setACL("a", "/wa/o", open, -1),
			seen(ws, setData("a", "/wa/o", b("2"), -1)),
			// Inside a multi each op's event sees the ACL of that moment: the open node's
			// NodeDeleted passes, the private one's NodeCreated and NodeDataChanged do not.
			seen(ws, multi("a", mDelete("/wa/o", -1), jute.MultiOp{Type: jute.OpCreate, Body: &jute.CreateRequest{Path: "/wa/o", ACL: jute.CreatorAllACL, Flags: persistent}}, mSet("/wa/o", b("3"), -1))),
			// The connection's ip id is a credential.
			seen(ws, createACL("a", "/wa/ip", nil, append(ipACL("127.0.0.1"), jute.CreatorAllACL...), persistent)),
			// Events a setWatches answers at once carry no ACL: not checked.
			saving("rel", syncPath("w", "/wa")),
			drop("w"),
			setData("a", "/wa/s", b("2"), -1),
			reconnect("w"),
			seen(w, setWatches("w", "rel", true, 0, jute.SetWatches{DataWatches: []string{"/wa/s"}})),
		}},
		// Several watch modes of one session on one path (ZOOKEEPER-4466), their removal
		// (-4471, -4472), one event per watcher per change, and what a recursive watch never
		// sees. a watches, b writes.
		{name: "watch-modes-39", sessions: []string{"a", "b"}, steps: []step{
			create("b", "/wm", nil, persistent),
			create("b", "/wm/m", nil, persistent),
			addWatch("a", "/wm/m", jute.AddWatchPersistent),
			getData("a", "/wm/m", true), // 3.8.0: the data half becomes a one-shot watch
			seen(a, setData("b", "/wm/m", b("1"), -1)),
			zkdDiffers("ZOOKEEPER-4466: "+why4466+": the persistent watch outlives the standard one", "a saw [NodeDataChanged /wm/m]",
				seen(a, setData("b", "/wm/m", b("2"), -1))),
			checkWatches("a", "/wm/m", jute.WatcherData), // the standard watch was used up
			zkdDiffers("ZOOKEEPER-4472: "+why4472, "err=0 ", checkWatches("a", "/wm/m", jute.WatcherPersistent)),
			zkdDiffers("ZOOKEEPER-4472: "+why4472+"; no recursive watch there", "err=-121 ", checkWatches("a", "/wm/m", jute.WatcherPersistentRecursive)),
			getData("a", "/wm/m", true),
			removeWatches("a", "/wm/m", jute.WatcherData),
			zkdDiffers("ZOOKEEPER-4471: "+why4471+": removing the standard watch leaves the persistent one", "a saw [NodeDataChanged /wm/m]",
				seen(a, setData("b", "/wm/m", b("3"), -1))),
			removeWatches("a", "/wm/m", jute.WatcherData),
			zkdDiffers("ZOOKEEPER-4471: "+why4471+": no standard child watch there", "err=-121 ", removeWatches("a", "/wm/m", jute.WatcherChildren)),
			zkdDiffers("ZOOKEEPER-4471: "+why4471+": the persistent watch still sees child changes", "a saw [NodeChildrenChanged /wm/m]",
				seen(a, create("b", "/wm/m/k", nil, persistent))),
			zkdDiffers("ZOOKEEPER-4472: "+why4472, "err=0 ", removeWatches("a", "/wm/m", jute.WatcherPersistent)),
			zkdDiffers("ZOOKEEPER-4472: "+why4472, "err=-121 ", removeWatches("a", "/wm/m", jute.WatcherPersistent)),
			seen(a, setData("b", "/wm/m", b("4"), -1)),
			seen(a, create("b", "/wm/m/l", nil, persistent)),
			checkWatches("a", "/wm/m", jute.WatcherAny),
			removeWatches("a", "/wm/m", jute.WatcherAny),

			// A recursive watch and one-shot watches on its own path.
			addWatch("a", "/wm", jute.AddWatchPersistentRecursive),
			children("a", "/wm", true),
			seen(a, create("b", "/wm/x", nil, persistent)), // NodeCreated (recursive), NodeChildrenChanged (child watch)
			seen(a, create("b", "/wm/y", nil, persistent)), // recursive watches never see NodeChildrenChanged
			getData("a", "/wm", true),                      // 3.8.0: the recursive watch becomes a one-shot watch
			seen(a, setData("b", "/wm", b("1"), -1)),
			zkdDiffers("ZOOKEEPER-4466: "+why4466+": the recursive watch outlives the standard one", "a saw [NodeCreated /wm/z]",
				seen(a, create("b", "/wm/z", nil, persistent))),
			zkdDiffers("ZOOKEEPER-4472: "+why4472, "err=0 ", checkWatches("a", "/wm", jute.WatcherPersistentRecursive)),
			zkdDiffers("ZOOKEEPER-4472: "+why4472+"; no persistent watch there", "err=-121 ", checkWatches("a", "/wm", jute.WatcherPersistent)),
			checkWatches("a", "/wm", jute.WatcherData),
			checkWatches("a", "/wm", jute.WatcherChildren),
			// One event per watcher per change, however many of its watches match: a
			// standard watch on the node and the recursive one on an ancestor.
			exists("a", "/wm/x", true),
			seen(a, setData("b", "/wm/x", b("1"), -1)),
			// NodeDeleted with a data, a child and the recursive watch: one event, and the
			// one-shot watches are gone.
			getData("a", "/wm/x", true),
			children("a", "/wm/x", true),
			seen(a, del("b", "/wm/x", -1)),
			checkWatches("a", "/wm/x", jute.WatcherAny),
			zkdDiffers("ZOOKEEPER-4466: "+why4466+": removeWatches ANY finds the recursive watch", "err=0 ", removeWatches("a", "/wm", jute.WatcherAny)),
			seen(a, create("b", "/wm/x", nil, persistent)),
			// Persistent and recursive on one path: each keeps its own events.
			addWatch("a", "/wm/y", jute.AddWatchPersistent),
			addWatch("a", "/wm/y", jute.AddWatchPersistentRecursive),
			zkdDiffers("ZOOKEEPER-4466: "+why4466+": the persistent watch is still in the child table", "a saw [NodeCreated /wm/y/c, NodeChildrenChanged /wm/y]",
				seen(a, create("b", "/wm/y/c", nil, persistent))),
			zkdDiffers("ZOOKEEPER-4472: "+why4472, "err=0 ", removeWatches("a", "/wm/y", jute.WatcherPersistentRecursive)),
			zkdDiffers("ZOOKEEPER-4472: "+why4472+": the recursive watch is gone", "a saw []",
				seen(a, setData("b", "/wm/y/c", b("1"), -1))),
			// 3.9: the persistent watch survived the removal of the recursive one (3.8.0 kept
			// the recursive one: the same event).
			seen(a, setData("b", "/wm/y", b("1"), -1)),
		}},
	}
}
