package server_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zk"
	"github.com/zkd-io/zkd/zktest"
)

// bigChildren makes parent with children whose names add up to more than 3 MiB, so its
// listing is over the default jute.maxbuffer (1 MiB) three times.
func bigChildren(t *testing.T, ctx context.Context, c *zk.Conn, parent string) int {
	t.Helper()
	if _, err := c.Create(ctx, parent, nil, zk.OpenACL(), 0); err != nil {
		t.Fatal(err)
	}
	const n, nameLen = 1600, 2000
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			name := fmt.Sprintf("%s/%05d-%s", parent, i, strings.Repeat("x", nameLen-6))
			if _, err := c.Create(ctx, name, nil, zk.OpenACL(), 0); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return n
}

// TestLargeRepliesNegotiate: a 3 MiB listing is refused with a typed error and the
// connection kept, first by the client's own limit, then by the server while the
// negotiated limit is below it; a larger grant (capped by zkd.maxBufferLimit) serves it, all
// on one connection.
func TestLargeRepliesNegotiate(t *testing.T) {
	ctx := context.Background()
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.Extensions = ext.Of(ext.LargeReplies)
		c.MaxBufferLimit = 8 << 20
	}))
	c, err := zk.Connect(ctx, srv.Addr(), zk.WithMaxBufferSize(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-c.Events() // connected
	n := bigChildren(t, ctx, c, "/big")
	sid, server := c.SessionID(), c.Server()

	_, _, err = c.Children(ctx, "/big")
	var rt *zk.ReplyTooLargeError
	if !errors.Is(err, zk.ErrReplyTooLarge) || !errors.As(err, &rt) {
		t.Fatalf("before negotiating: %v, want the client's ReplyTooLargeError", err)
	}

	got, err := c.SetMaxBuffer(ctx, 2<<20)
	if err != nil || got != 2<<20 {
		t.Fatalf("SetMaxBuffer(2 MiB) = %d, %v", got, err)
	}
	_, _, err = c.Children(ctx, "/big")
	if !errors.Is(err, zk.ErrServerReplyTooLarge) || !errors.Is(err, zk.ErrReplyTooLarge) {
		t.Fatalf("over the negotiated 2 MiB: %v, want the server's REPLYTOOLARGE", err)
	}

	got, err = c.SetMaxBuffer(ctx, 1<<30)
	if err != nil || got != 8<<20 {
		t.Fatalf("SetMaxBuffer(1 GiB) = %d, %v; want the cap, 8 MiB", got, err)
	}
	kids, _, err := c.Children(ctx, "/big")
	if err != nil || len(kids) != n {
		t.Fatalf("after negotiating: %d children, %v; want %d", len(kids), err, n)
	}
	if c.SessionID() != sid || c.Server() != server {
		t.Fatalf("session or server changed")
	}
	for {
		select {
		case ev := <-c.Events():
			t.Fatalf("the connection was not kept: %v", ev)
		default:
			return
		}
	}
}

// TestLargeRepliesExtOpRefused: an extension opcode's reply over jute.maxbuffer is the
// typed error, without negotiation, and the connection stays; a stock getChildren on the
// same connection is sent as ZooKeeper sends it.
func TestLargeRepliesExtOpRefused(t *testing.T) {
	ctx := context.Background()
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.Extensions = ext.Of(ext.LargeReplies, ext.PagedList)
	}))
	c, err := zk.Connect(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n := bigChildren(t, ctx, c, "/big")

	raw := rawzk.Connect(t, srv.Addr())
	var page jute.ListPageResponse
	h := raw.Call(jute.OpListPage, &jute.ListPageRequest{Path: "/big", Limit: int32(n)}, &page)
	if h.Err != jute.ErrReplyTooLarge {
		t.Fatalf("listPage of 3 MiB: %v, want REPLYTOOLARGE", h.Err)
	}
	var kids jute.GetChildrenResponse
	h = raw.Call(jute.OpGetChildren, &jute.GetChildrenRequest{Path: "/big"}, &kids)
	if h.Err != jute.OK || len(kids.Strings) != n {
		t.Fatalf("stock getChildren on the same connection: %v, %d children", h.Err, len(kids.Strings))
	}
}

// TestLargeRepliesDisabled: without the extension setMaxBuffer is an unknown opcode:
// UNIMPLEMENTED and the connection closed.
func TestLargeRepliesDisabled(t *testing.T) {
	srv := zktest.Start(t)
	raw := rawzk.Connect(t, srv.Addr())
	h := raw.Call(jute.OpSetMaxBuffer, &jute.SetMaxBufferRequest{Limit: 8 << 20}, nil)
	if h.Err != jute.ErrUnimplemented || h.Zxid != -1 {
		t.Errorf("disabled: %v zxid %d, want UNIMPLEMENTED -1", h.Err, h.Zxid)
	}
	if !raw.Closed() {
		t.Error("the connection stayed open")
	}
}

// TestLargeRepliesWritesStayBounded: after negotiating, a read request over jute.maxbuffer
// (a multiRead of 2 MiB of paths) is served, and a write over it is refused as ZooKeeper
// refuses any frame over jute.maxbuffer (the connection closed), so no txn over
// jute.maxbuffer reaches the log or a follower.
func TestLargeRepliesWritesStayBounded(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.Extensions = ext.Of(ext.LargeReplies)
	}))
	raw := rawzk.Connect(t, srv.Addr())
	var grant jute.SetMaxBufferResponse
	if h := raw.Call(jute.OpSetMaxBuffer, &jute.SetMaxBufferRequest{Limit: 8 << 20}, &grant); h.Err != jute.OK || grant.Limit != 8<<20 {
		t.Fatalf("setMaxBuffer: %v %d", h.Err, grant.Limit)
	}
	var reads jute.MultiRequest
	for i := range 2000 {
		path := fmt.Sprintf("/r%05d-%s", i, strings.Repeat("p", 1000))
		reads.Ops = append(reads.Ops, jute.MultiOp{Type: jute.OpGetData, Body: &jute.GetDataRequest{Path: path}})
	}
	var res jute.MultiResponse
	if h := raw.Call(jute.OpMultiRead, &reads, &res); h.Err != jute.OK || len(res.Results) != 2000 {
		t.Fatalf("multiRead of 2 MiB: %v, %d results", h.Err, len(res.Results))
	}
	raw.Send(jute.OpSetData, &jute.SetDataRequest{Path: "/", Data: make([]byte, 2<<20), Version: -1})
	if !raw.Closed() {
		t.Fatal("a 2 MiB write was read")
	}
	c, err := zk.Connect(context.Background(), srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if data, _, err := c.Get(context.Background(), "/"); err != nil || len(data) != 0 {
		t.Fatalf("/ after the refused write: %d bytes, %v", len(data), err)
	}
}
