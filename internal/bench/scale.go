package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zkd-io/zkd/jute"
)

// The scale workloads of issue 16: getChildren of a node with a million children, and one
// value of nearly jute.maxbuffer read by a thousand sessions. Both put large replies on the
// wire: the cost measured is the server's building and sending them.

const (
	// defaultChildren is the children workload's fan-out: issue 16's "getChildren of a node
	// with 1M children". Each reply is then 12 MB (a 4-byte length and 8 bytes per name).
	defaultChildren = 1000000
	// maxChildren is what the children's 8-digit names can count.
	maxChildren = 100000000
	// defaultBigreadSize is the bigread workload's value: a round figure just under the
	// largest both servers accept. ZooKeeper (and zkd, which follows it) drops a connection
	// whose request frame is longer than jute.maxbuffer, 1048575 bytes (NIOServerCnxn and
	// NettyServerCnxn check the incoming length; nothing checks outgoing replies). The frame
	// that writes the value is the create of setup: 8 bytes of header, the path (4+16 for
	// "/zkbench/bigread/00000000"'s 25 bytes: 4+25), the data (4+n), the world:anyone ACL
	// (27) and the flags (4), so n may be at most 1048575-72 = 1048503 with the default
	// --root. 1048000 leaves room for a longer --root.
	defaultBigreadSize = 1048000
)

// scaleOptions are the knobs only the scale workloads have.
type scaleOptions struct {
	children    int // the children workload's fan-out
	bigreadSize int // the bigread workload's value, in bytes
}

// childName is the i-th child of the children workload: 8 digits, like the key spaces.
func childName(i int) string { return fmt.Sprintf("%08d", i) }

// childrenReplySize is the body of a getChildren reply listing n children of childName:
// the vector's count, then each name's length and bytes.
func childrenReplySize(n int) int { return 4 + n*(4+8) }

// runChildren makes a parent of s.children empty children (once: a parent that already has
// them is reused, so a rerun on the same server starts at once) and has the sessions call
// getChildren on it. The replies are not decoded during the run, but setup reads one whole
// and checks it names every child.
func runChildren(ctx context.Context, b *bench, s scaleOptions) (*Result, error) {
	parent := b.cfg.root + "/children"
	n := s.children
	var replySize int
	err := b.withSetup(ctx, func(conns []*conn) error {
		if err := makeChildren(ctx, conns, parent, n, max(b.cfg.multiSize, 1)); err != nil {
			return err
		}
		body, err := conns[0].do(ctx, jute.OpGetChildren, &jute.GetChildrenRequest{Path: parent})
		if err != nil {
			return fmt.Errorf("children of %s: %w", parent, err)
		}
		var kids jute.GetChildrenResponse
		if err := jute.Unmarshal(body, &kids); err != nil {
			return fmt.Errorf("children of %s: %w", parent, err)
		}
		if len(kids.Strings) != n || len(body) != childrenReplySize(n) {
			return fmt.Errorf("children of %s: %d names in %d bytes, want %d in %d", parent, len(kids.Strings), len(body), n, childrenReplySize(n))
		}
		replySize = len(body)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	req := &jute.GetChildrenRequest{Path: parent} // only read: shared by the sessions
	res, err := b.runPipelined(ctx, func(w *worker, c *call) bool {
		c.setRequest(jute.OpGetChildren, req)
		return true
	}, false)
	if res != nil {
		res.Keys = n
		res.DataSize = 0 // the children are empty
		res.Note = fmt.Sprintf("replies of %d bytes", replySize)
		if res.Seconds > 0 {
			res.Note += fmt.Sprintf(", %.1f MB/s", res.OpsPerSec*float64(replySize)/(1<<20))
		}
	}
	if err != nil || !b.cfg.cleanup {
		return res, err
	}
	err = b.withSetup(ctx, func(conns []*conn) error { return deleteTree(ctx, conns, parent) })
	if err != nil {
		return res, fmt.Errorf("cleanup: %w", err)
	}
	return res, nil
}

// makeChildren gives parent the children 0..n-1, created in pipelined multis of batch, unless
// it has n children already. A parent with another number of children is an error: its
// children cannot be told from ours without listing them.
func makeChildren(ctx context.Context, conns []*conn, parent string, n, batch int) error {
	if err := ensurePath(ctx, conns[0], parent, nil); err != nil {
		return err
	}
	have, err := numChildren(ctx, conns[0], parent)
	switch {
	case err != nil:
		return err
	case have == n:
		return nil
	case have != 0:
		return fmt.Errorf("%s has %d children, not 0 or %d: use another --root or a fresh server", parent, have, n)
	}
	var mu sync.Mutex
	var firstErr error
	multis := (n + batch - 1) / batch
	err = pump(ctx, conns, 64, multis, func(m int, c *call) {
		first := m * batch
		ops := make([]jute.MultiOp, min(batch, n-first))
		for i := range ops {
			ops[i] = jute.MultiOp{Type: jute.OpCreate, Body: &jute.CreateRequest{Path: parent + "/" + childName(first+i), ACL: jute.OpenACLUnsafe}}
		}
		c.setRequest(jute.OpMulti, &jute.MultiRequest{Ops: ops})
	}, func(m int, c *call) {
		if c.err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = fmt.Errorf("create children %d.. of %s: %w", m*batch, parent, c.err)
			}
			mu.Unlock()
		}
	})
	if err = errors.Join(err, firstErr); err != nil {
		return err
	}
	// A multi's failure may not show in its reply header: count what is there.
	if have, err = numChildren(ctx, conns[0], parent); err != nil {
		return err
	}
	if have != n {
		return fmt.Errorf("%s has %d children after setup, want %d", parent, have, n)
	}
	return nil
}

func numChildren(ctx context.Context, c *conn, p string) (int, error) {
	body, err := c.do(ctx, jute.OpExists, &jute.ExistsRequest{Path: p})
	if err != nil {
		return 0, fmt.Errorf("exists %s: %w", p, err)
	}
	var st jute.ExistsResponse
	if err := jute.Unmarshal(body, &st); err != nil {
		return 0, fmt.Errorf("exists %s: %w", p, err)
	}
	return int(st.Stat.NumChildren), nil
}

// runBigread writes one znode of s.bigreadSize bytes and has the sessions getData it. The
// replies are skipped as they are read (no copy is kept: a thousand sessions with a 1 MB
// reply each in flight would hold a gigabyte), but setup reads one whole and checks it.
func runBigread(ctx context.Context, b *bench, s scaleOptions) (*Result, error) {
	dir := b.cfg.root + "/bigread"
	b.keyDir, b.keys = dir, keyPaths(dir, 1)
	b.data = payload(s.bigreadSize)
	err := b.withSetup(ctx, func(conns []*conn) error {
		if err := setupKeys(ctx, conns, dir, b.keys, b.data); err != nil {
			return err
		}
		body, err := conns[0].do(ctx, jute.OpGetData, &jute.GetDataRequest{Path: b.keys[0]})
		if err != nil {
			return fmt.Errorf("getData %s: %w", b.keys[0], err)
		}
		var got jute.GetDataResponse
		if err := jute.Unmarshal(body, &got); err != nil {
			return fmt.Errorf("getData %s: %w", b.keys[0], err)
		}
		if len(got.Data) != len(b.data) || int(got.Stat.DataLength) != len(b.data) {
			return fmt.Errorf("getData %s: %d bytes (stat: %d), want %d", b.keys[0], len(got.Data), got.Stat.DataLength, len(b.data))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	res, err := b.runPipelined(ctx, keyGen(opGet), false)
	if res != nil {
		res.Keys = 1
		res.DataSize = s.bigreadSize
		if res.Seconds > 0 {
			res.Note = fmt.Sprintf("%.1f MB/s of data read", bigreadMBps(res))
		}
	}
	return res, err
}

// bigreadMBps is the data a bigread run read per second, in MB of 2^20 bytes.
func bigreadMBps(r *Result) float64 { return r.OpsPerSec * float64(r.DataSize) / (1 << 20) }
