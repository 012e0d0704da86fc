// Package console owns zkd's web console: the pages, scripts and styles (embedded, nothing
// fetched at run time) and the HTTP handlers of its JSON API, served under /console/ on the
// AdminServer's port. It reads and writes the server only through Backend, which the server
// implements (server/console.go): every read is gathered there in small bounded core steps,
// and every write goes through the server's normal write pipeline. Formatting (sorting,
// paging, JSON pretty-printing, hex) happens here, on the request's goroutine.
package console

import (
	"context"
	"errors"
	"net/http"

	"github.com/zkd-io/zkd/jute"
)

// Backend is what the console needs from the server. ids are the identities a read or write
// is made with (the AdminServer's authentication, or the client's address): reads of data
// and children check READ against them, writes are made as a session holding them.
type Backend interface {
	// Authenticate checks the Authorization header as the AdminServer's authenticated
	// commands do and returns the ids it proves.
	Authenticate(header string, r *http.Request) ([]jute.ID, error)
	// Authorized reports whether ids may use the authenticated commands (every
	// permission on "/").
	Authorized(ids []jute.ID) (bool, error)
	// AnonymousIDs are the ids of a request without credentials (its address's ip id).
	AnonymousIDs(r *http.Request) []jute.ID

	// Children lists path's children sorted by name, those after after, at most limit.
	Children(ctx context.Context, path, after string, limit int, ids []jute.ID) (ChildPage, error)
	// Get reads one node; its data is left out (Node.DataHidden) without READ.
	Get(ctx context.Context, path string, ids []jute.ID) (Node, error)
	// Search walks the tree for paths matching q, within q's bounds.
	Search(ctx context.Context, q Query) (SearchResult, error)
	// Set and SetACL are setData and setACL made by a session holding ids.
	Set(ctx context.Context, remote, path string, data []byte, version int32, ids []jute.ID) (jute.Stat, error)
	SetACL(ctx context.Context, remote, path string, acl []jute.ACL, version int32, ids []jute.ID) (jute.Stat, error)

	Sessions(ctx context.Context) ([]Session, error)
	// Ephemerals lists one session's ephemeral nodes.
	Ephemerals(ctx context.Context, session int64) ([]string, error)
	Watches(ctx context.Context) ([]PathWatches, error)
	Ensemble(ctx context.Context) (Ensemble, error)
	// Metrics are the mntr values by name.
	Metrics(ctx context.Context) (map[string]any, error)
}

// Errors a Backend returns (wrapped or as is); the handlers turn them into HTTP statuses.
var (
	ErrNotServing = errors.New("this ZooKeeper instance is not currently serving requests")
	ErrNoNode     = errors.New("no such node")
	ErrNoAuth     = errors.New("not authorized")
	ErrBadVersion = errors.New("version does not match")
	ErrBadRequest = errors.New("bad request")
)

// Child is one entry of a child page.
type Child struct {
	Name        string `json:"name"`
	NumChildren int32  `json:"numChildren"`
	Ephemeral   bool   `json:"ephemeral,omitempty"`
	// Gone: deleted between the listing and the lookup of its counts.
	Gone bool `json:"gone,omitempty"`
}

// ChildPage is a page of a node's children.
type ChildPage struct {
	Path     string  `json:"path"`
	Total    int     `json:"total"` // children in all
	Children []Child `json:"children"`
	// Next is the after of the following page, "" on the last.
	Next string `json:"next,omitempty"`
}

// Node is one node as the node view shows it.
type Node struct {
	Path       string
	Stat       jute.Stat
	ACL        []jute.ACL
	Data       []byte
	DataHidden bool // the ids lack READ: Data and ACL are left out
}

// Query is a bounded search.
type Query struct {
	Text string
	// Prefix: paths starting with Text (only that subtree is walked); otherwise paths
	// containing it.
	Prefix     bool
	MaxMatches int // stop after this many matches
	MaxVisited int // stop after visiting this many nodes
	// IDs are the searcher's: only the children of nodes they may READ are walked.
	IDs []jute.ID
}

// SearchResult is what a search found. Stopped says why it ended early ("" when it walked
// everything it had to).
type SearchResult struct {
	Matches []string `json:"matches"`
	Visited int      `json:"visited"`
	Stopped string   `json:"stopped,omitempty"`
}

// Session is one session as the sessions page lists it.
type Session struct {
	ID         int64  `json:"-"`
	IDHex      string `json:"id"`
	Timeout    int32  `json:"timeout"`
	Remote     string `json:"remote,omitempty"` // "" when its client is connected elsewhere
	Ephemerals int    `json:"ephemerals"`
}

// PathWatches is one watched path and its sessions.
type PathWatches struct {
	Path     string   `json:"path"`
	Sessions []string `json:"sessions"`
}

// Member is one ensemble member as the ensemble page shows it.
type Member struct {
	ID       int64  `json:"id"`
	Quorum   string `json:"quorum"`
	Election string `json:"election"`
	Observer bool   `json:"observer,omitempty"`
	Leader   bool   `json:"leader,omitempty"`
	Self     bool   `json:"self,omitempty"`
	// Known: the leader (this server) has a connection from it; Zxid and Lag are then
	// what it knows (the last acked zxid, and how many proposals behind that is).
	Known  bool   `json:"known,omitempty"`
	Synced bool   `json:"synced,omitempty"`
	Zxid   string `json:"zxid,omitempty"`
	Lag    *int64 `json:"lag,omitempty"`
}

// Ensemble is the ensemble page: this server's mode and view of the others.
type Ensemble struct {
	Mode    string   `json:"mode"`
	Leader  int64    `json:"leader"` // -1 when not known or standalone
	Zxid    string   `json:"zxid"`
	Members []Member `json:"members"`
}
