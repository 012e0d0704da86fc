package zk

import (
	"context"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/jute"
)

// SetMaxBuffer asks the server for a larger limit on this connection's frames (zkd's
// large-replies extension) and returns the limit granted: never below the server's
// jute.maxbuffer nor above its zkd.maxBufferLimit. The client's own read limit
// (WithMaxBufferSize) is raised to n first, for this connection and the next ones, so the
// larger replies can be read.
//
// From then on the server sends replies up to the granted limit on this connection and
// answers a longer one with ErrServerReplyTooLarge (errors.Is(err, ErrReplyTooLarge)
// holds) instead of sending it. Reads may send requests up to the grant too; writes do not
// grow: a write request over the server's jute.maxbuffer still closes the connection, as
// ZooKeeper does, because ensemble members (Apache ZooKeeper ones too) read txns with it. The
// grant belongs to the connection: after a reconnect, call SetMaxBuffer again (until then
// the server sends stock replies as ZooKeeper does, and this client, its limit raised,
// still reads them).
func (c *Conn) SetMaxBuffer(ctx context.Context, n int) (int, error) {
	if err := c.require(ctx, ext.LargeReplies); err != nil {
		return 0, err
	}
	if n <= 0 || n > 1<<31-1 {
		return 0, pathErr(jute.OpSetMaxBuffer, "", badArgs("limit %d", n))
	}
	c.raiseMaxFrame(n)
	s := spec{op: jute.OpSetMaxBuffer, raw: true, body: record(&jute.SetMaxBufferRequest{Limit: int32(n)})}
	resp, err := do[jute.SetMaxBufferResponse](ctx, c, s)
	if err != nil {
		return 0, err
	}
	return int(resp.Limit), nil
}

// raiseMaxFrame raises the client's read limit to n, on the live connection too. It is
// raised before the request goes out: a reply the server sends under the new grant must
// find the reader ready for it.
func (c *Conn) raiseMaxFrame(n int) {
	for {
		cur := c.maxFrame.Load()
		if int64(n) <= cur || c.maxFrame.CompareAndSwap(cur, int64(n)) {
			break
		}
	}
	c.mu.Lock()
	w := c.w
	c.mu.Unlock()
	if w != nil {
		w.wc.SetMaxFrame(int(c.maxFrame.Load()))
	}
}
