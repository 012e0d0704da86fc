package zk

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// testReplyTooLarge: a reply over the client's limit fails that request with
// ErrReplyTooLarge and leaves the connection up (no reconnect loop), on zkd and on
// ZooKeeper alike, since both send the reply whatever its size.
func testReplyTooLarge(t *testing.T, e *env) {
	const limit = 16 << 10
	setup, root := e.connect(t)
	ctx := testCtx(t)
	mustCreate(t, setup, "/big", make([]byte, 4*limit), ModePersistent)
	mustCreate(t, setup, "/small", []byte("ok"), ModePersistent)
	mustCreate(t, setup, "/many", nil, ModePersistent)
	long := strings.Repeat("c", 200)
	for i := range 2 * limit / len(long) {
		mustCreate(t, setup, fmt.Sprintf("/many/%s%03d", long, i), nil, ModePersistent)
	}

	c := dial(t, connString(e.servers, root), WithMaxBufferSize(limit))
	states := recordStates(c)
	catchUp(t, c)
	for round := range 3 {
		_, _, err := c.Get(ctx, "/big")
		var rt *ReplyTooLargeError
		if !errors.Is(err, ErrReplyTooLarge) || !errors.As(err, &rt) || rt.Max != limit || rt.Size <= limit {
			t.Fatalf("round %d: Get /big = %v, want a ReplyTooLargeError over %d", round, err, limit)
		}
		if _, _, err := c.Children(ctx, "/many"); !errors.Is(err, ErrReplyTooLarge) {
			t.Fatalf("round %d: Children /many = %v, want ErrReplyTooLarge", round, err)
		}
		// The connection carries on: the next request on it is answered.
		if data, _, err := c.Get(ctx, "/small"); err != nil || string(data) != "ok" {
			t.Fatalf("round %d: Get /small = %q, %v", round, data, err)
		}
	}
	if n := states.count(StateConnected); n != 1 {
		t.Fatalf("client connected %d times, want 1 (no reconnect); states %v", n, states.states())
	}
	if n := states.count(StateDisconnected); n != 0 {
		t.Fatalf("client disconnected %d times; states %v", n, states.states())
	}
}
