package zk

import (
	"context"
	"iter"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/jute"
)

// PageRequest asks for a page of a paged listing (the server's paged-list extension,
// docs/beyond.md). The first page leaves Cursor nil and may set StartAfter (a child's name:
// the page begins after it); each next page passes the Cursor of the page before.
type PageRequest struct {
	StartAfter string
	Limit      int
	WithStat   bool
	Cursor     []byte
}

// Page is one page of a paged listing: the children's names (in the view's order, which is
// no particular one) and, when asked for, their Stats (a zero Stat for a child the session
// may not read); Total children in the view; Zxid, the view's; Truncated when more follow,
// with the Cursor that reads them.
type Page struct {
	Names     []string
	Stats     []Stat
	Total     int
	Truncated bool
	Zxid      int64
	Cursor    []byte
}

// ListPage reads one page of path's children. Every page of one listing comes from the
// same view of the tree, the tree at the first page's Zxid, however it changes between
// pages: together they are exactly the children at that zxid. ErrListViewExpired means the
// server dropped the view (unused for a minute, or too many listings at once): start again.
func (c *Conn) ListPage(ctx context.Context, path string, req PageRequest) (*Page, error) {
	if err := c.require(ctx, ext.PagedList); err != nil {
		return nil, err
	}
	resp, err := do[jute.ListPageResponse](ctx, c, spec{op: jute.OpListPage, path: path,
		body: func(sp string) (jute.Record, error) {
			return &jute.ListPageRequest{Path: sp, StartAfter: req.StartAfter, Limit: int32(req.Limit),
				WithStat: req.WithStat, Cursor: req.Cursor}, nil
		}})
	if err != nil {
		return nil, err
	}
	return &Page{Names: resp.Names, Stats: resp.Stats, Total: int(resp.Total), Truncated: resp.Truncated,
		Zxid: resp.Zxid, Cursor: resp.Cursor}, nil
}

// ListAll lists every child of path, pageSize at a time, from one view of the tree. The
// sequence stops at the first error, which it yields.
func (c *Conn) ListAll(ctx context.Context, path string, pageSize int) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		req := PageRequest{Limit: pageSize}
		for {
			p, err := c.ListPage(ctx, path, req)
			if err != nil {
				yield("", err)
				return
			}
			for _, name := range p.Names {
				if !yield(name, nil) {
					return
				}
			}
			if !p.Truncated {
				return
			}
			req.Cursor = p.Cursor
		}
	}
}
