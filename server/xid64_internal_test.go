package server

import (
	"math"
	"sync/atomic"
	"testing"

	"github.com/zkd-io/zkd/jute"
)

// TestXidMap: special xids are their own tokens; others get positive tokens, unique while
// unanswered, which the reply turns back into the client's xid; a new connection's tokens
// go on from the server's counter, and the counter's wrap skips 0 and tokens in use.
func TestXidMap(t *testing.T) {
	var next atomic.Int32
	var a xidMap
	for _, x := range []int32{jute.XidNotification, jute.XidPing, jute.XidAuth, jute.XidSetWatches} {
		if tok := a.in(int64(x), &next); tok != x || a.out(tok) != int64(x) {
			t.Fatalf("special xid %d: token %d", x, tok)
		}
	}
	xids := []int64{1 << 31, 1<<63 - 1, 5, math.MinInt64, -(1 << 40)}
	toks := map[int32]int64{}
	for _, x := range xids {
		tok := a.in(x, &next)
		if tok <= 0 {
			t.Fatalf("xid %d: token %d", x, tok)
		}
		if _, dup := toks[tok]; dup {
			t.Fatalf("token %d twice", tok)
		}
		toks[tok] = x
	}
	for tok, x := range toks {
		if got := a.out(tok); got != x {
			t.Fatalf("token %d: xid %d, want %d", tok, got, x)
		}
	}
	var b xidMap
	if tok := b.in(7, &next); int64(tok) <= int64(len(xids)) {
		t.Fatalf("a new connection's token %d restarts the count", tok)
	}
	// Past the wrap: 0 skipped, a token still unanswered skipped.
	next.Store(math.MaxInt32 - 1)
	first := b.in(1, &next) // MaxInt32
	next.Store(math.MaxInt32 - 1)
	if tok := b.in(2, &next); tok == first || tok <= 0 {
		t.Fatalf("after the wrap: token %d (in use: %d)", tok, first)
	}
}
