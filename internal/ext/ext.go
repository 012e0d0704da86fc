// Package ext names zkd's opt-in extensions beyond ZooKeeper and parses the set a server
// enables (zoo.cfg's zkd.extensions). It owns the names only: each extension lives with the
// code it changes, and asks the server's Set whether it is on.
//
// An extension is opt-in twice: the server enables it, and a client uses it only by sending
// something a stock client never sends (a new opcode, a new protocol version, a read of a
// virtual node). A stock client therefore sees exactly ZooKeeper whatever is enabled, and
// nothing new reaches the data files or the peer protocol.
package ext

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Name is one extension.
type Name string

// The extensions, in the order the capability listing shows them. A new one is added here
// and nowhere else names it as a string.
const (
	// Capabilities: ClickHouse Keeper's /keeper/api_version and /keeper/feature_flags virtual
	// nodes, the apiv and ftfl four-letter words, and zkd's capability node.
	Capabilities Name = "capabilities"
	// KeeperOps: ClickHouse Keeper's extension opcodes (FilteredList, CheckNotExists,
	// CreateIfNotExists, RemoveRecursive), its MultiRead semantics when negotiated, and
	// create-with-parents.
	KeeperOps Name = "keeper-ops"
	// PagedList: a paged, consistent listing of a node's children.
	PagedList Name = "paged-list"
	// WatchResume: a watch added with the last zxid the client saw is served the changes it
	// missed from a bounded history, or a typed error when that history is gone.
	WatchResume Name = "watch-resume"
	// LargeReplies: a reply over the client's limit is a typed error, and a session may
	// negotiate a larger limit.
	LargeReplies Name = "large-replies"
	// Wide: 64-bit sequential nodes and 64-bit xids, and a zxid counter rollover without an
	// election in an all-zkd ensemble.
	Wide Name = "wide"
	// SessionGrace: time the ensemble could not serve is added to every session's deadline.
	SessionGrace Name = "session-grace"
)

// CapabilitiesNode is zkd's capability node: a virtual, read-only znode whose data is a
// small JSON document naming the extensions the server enables (docs/beyond.md). It exists
// whenever any extension is enabled; a server without any (or Apache ZooKeeper) answers
// NoNode. The server and the client both name it from here.
const CapabilitiesNode = "/zookeeper/capabilities"

// All is every extension, in listing order.
var All = []Name{Capabilities, KeeperOps, PagedList, WatchResume, LargeReplies, Wide, SessionGrace}

// Set is the extensions a server enables. The zero Set enables none: the server is ZooKeeper.
type Set struct{ on []Name }

// ErrUnknown is returned by Parse for a name that is not an extension.
var ErrUnknown = errors.New("unknown extension")

// Parse reads a comma-separated list of names; "all" names every extension, "" or "none"
// none.
func Parse(s string) (Set, error) {
	var set Set
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "" || strings.EqualFold(f, "none"):
		case strings.EqualFold(f, "all"):
			set = Of(All...)
		case slices.Contains(All, Name(strings.ToLower(f))):
			set = Of(append(set.on, Name(strings.ToLower(f)))...)
		default:
			return Set{}, fmt.Errorf("%w %q (known: all, none, %s)", ErrUnknown, f, strings.Join(names(All), ", "))
		}
	}
	return set, nil
}

// Of is the set of the given extensions.
func Of(ns ...Name) Set {
	var on []Name
	for _, n := range All {
		if slices.Contains(ns, n) {
			on = append(on, n)
		}
	}
	return Set{on: on}
}

// Has reports whether an extension is enabled.
func (s Set) Has(n Name) bool { return slices.Contains(s.on, n) }

// List is the enabled extensions in listing order.
func (s Set) List() []Name { return slices.Clone(s.on) }

// Empty reports whether no extension is enabled.
func (s Set) Empty() bool { return len(s.on) == 0 }

// String renders the set as zoo.cfg writes it.
func (s Set) String() string {
	if len(s.on) == len(All) {
		return "all"
	}
	return strings.Join(names(s.on), ",")
}

func names(ns []Name) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = string(n)
	}
	return out
}
