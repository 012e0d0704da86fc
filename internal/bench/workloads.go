package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/zkd-io/zkd/jute"
)

// workload is one named benchmark.
type workload struct {
	name     string
	desc     string
	noWarmup bool
	once     bool // cannot be run again on the same server (its znodes would exist)
	run      func(ctx context.Context, b *bench) (*Result, error)
	// scaled, instead of run, is a workload with knobs of its own (scaleOptions).
	scaled func(ctx context.Context, b *bench, s scaleOptions) (*Result, error)
}

var workloads = []*workload{
	{name: "create", desc: "create new znodes (data-size bytes); removed afterwards unless --cleanup=false", run: runCreate},
	{name: "set", desc: "setData on random keys of the key space", run: keyspaceRun(opSet)},
	{name: "get", desc: "getData on random keys of the key space", run: keyspaceRun(opGet)},
	{name: "exists", desc: "exists on random keys of the key space", run: keyspaceRun(opExists)},
	{name: "mixed", desc: "getData with probability read-ratio, else setData", run: keyspaceRun(opMixed)},
	{name: "createdelete", desc: "each session creates a znode (data-size bytes) then deletes it, pipelined; ops counts both", run: runCreateDelete},
	{name: "multi", desc: "multi of multi-size setData ops on random keys; ops counts multis", run: keyspaceRun(opMulti)},
	{name: "large", desc: "setData of large-size bytes on a key space of at most 100 keys", run: runLarge},
	{name: "watch", desc: "one writer, clients watchers re-arming a data watch; latency is write-to-notification", run: runWatch},
	{name: "connect", desc: "connect storm: clients loops of connect + closeSession; latency is the cycle", run: runConnect},
	{name: "ephemeral", desc: "ephemeral churn: clients loops of connect + create ephemeral + closeSession", run: runEphemeral},
	{name: "storm", desc: "connect storm: open --sessions sessions (clients handshakes at a time), close them all, in rounds; ops/s is sessions/s, latency the open", run: runStorm},
	{name: "idle", desc: "open --sessions sessions and hold them, pinging; reports server RSS per session", noWarmup: true, run: runIdle},
	{name: "children", desc: "getChildren of a node with --children empty children (made once, in multis of multi-size; removed afterwards unless --cleanup=false)", scaled: runChildren},
	{name: "bigread", desc: "getData of one znode of --large-size bytes (default 1048000 here: just under jute.maxbuffer)", scaled: runBigread},
	{name: "znodes", desc: "memory: create --znodes znodes (16-byte paths, 10-byte data) in multis of multi-size; reports server RSS per znode", noWarmup: true, once: true, run: runZnodes},
}

func findWorkload(name string) (*workload, error) {
	for _, w := range workloads {
		if w.name == name {
			return w, nil
		}
	}
	names := make([]string, len(workloads))
	for i, w := range workloads {
		names[i] = w.name
	}
	return nil, fmt.Errorf("unknown workload %q (have %s)", name, strings.Join(names, ", "))
}

type keyOp int

const (
	opSet keyOp = iota
	opGet
	opExists
	opMixed
	opMulti
)

// setupConns opens a few sessions for untimed setup and cleanup work.
func (b *bench) setupConns(ctx context.Context) ([]*conn, error) {
	return b.openSessions(ctx, min(max(b.cfg.clients, 1), 4), nil)
}

// ensurePath creates p and its ancestors, accepting those that exist.
func ensurePath(ctx context.Context, c *conn, p string, data []byte) error {
	for _, a := range ancestors(p) {
		d := []byte(nil)
		if a == p {
			d = data
		}
		_, err := c.do(ctx, jute.OpCreate, &jute.CreateRequest{Path: a, Data: d, ACL: jute.OpenACLUnsafe})
		if err != nil && !errors.Is(err, jute.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", a, err)
		}
	}
	return nil
}

// setupKeys makes every key of dir/00000000.. exist with size bytes of data. Keys that are
// already right are only read, so consecutive runs over the same key space are quick.
func setupKeys(ctx context.Context, conns []*conn, dir string, keys []string, data []byte) error {
	if err := ensurePath(ctx, conns[0], dir, nil); err != nil {
		return err
	}
	const (
		ok = iota
		missing
		wrongSize
	)
	state := make([]int8, len(keys))
	var mu sync.Mutex
	var firstErr error
	setErr := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
		}
	}
	err := pump(ctx, conns, 64, len(keys), func(i int, c *call) {
		c.setRequest(jute.OpExists, &jute.ExistsRequest{Path: keys[i]})
		c.wantBody = true
	}, func(i int, c *call) {
		switch {
		case errors.Is(c.err, jute.ErrNoNode):
			state[i] = missing
		case c.err != nil:
			setErr(fmt.Errorf("exists %s: %w", keys[i], c.err))
		default:
			var st jute.ExistsResponse
			if err := jute.Unmarshal(c.body, &st); err != nil {
				setErr(fmt.Errorf("exists %s: %w", keys[i], err))
			} else if int(st.Stat.DataLength) != len(data) {
				state[i] = wrongSize
			}
		}
	})
	if err = errors.Join(err, firstErr); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	var todo []int
	for i, s := range state {
		if s != ok {
			todo = append(todo, i)
		}
	}
	err = pump(ctx, conns, 64, len(todo), func(j int, c *call) {
		i := todo[j]
		if state[i] == missing {
			c.setRequest(jute.OpCreate, &jute.CreateRequest{Path: keys[i], Data: data, ACL: jute.OpenACLUnsafe})
		} else {
			c.setRequest(jute.OpSetData, &jute.SetDataRequest{Path: keys[i], Data: data, Version: -1})
		}
	}, func(j int, c *call) {
		if c.err != nil {
			setErr(fmt.Errorf("setup %s: %w", keys[todo[j]], c.err))
		}
	})
	if err = errors.Join(err, firstErr); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	return nil
}

// withSetup opens setup sessions, runs f with them and closes them.
func (b *bench) withSetup(ctx context.Context, f func(conns []*conn) error) error {
	conns, err := b.setupConns(ctx)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	defer closeSessions(conns)
	return f(conns)
}

func keyspaceRun(op keyOp) func(ctx context.Context, b *bench) (*Result, error) {
	return func(ctx context.Context, b *bench) (*Result, error) {
		dir := b.cfg.root + "/keys"
		b.keyDir, b.keys = dir, keyPaths(dir, b.cfg.keys)
		b.data = payload(b.cfg.dataSize)
		if err := b.withSetup(ctx, func(conns []*conn) error { return setupKeys(ctx, conns, dir, b.keys, b.data) }); err != nil {
			return nil, err
		}
		var res *Result
		var err error
		switch b.cfg.driver {
		case "":
			res, err = b.runPipelined(ctx, keyGen(op), false)
		case driverGoZK:
			res, err = b.runGoZK(ctx, op)
		default:
			return nil, fmt.Errorf("--driver %q: want %q or none", b.cfg.driver, driverGoZK)
		}
		if res != nil {
			res.Keys = b.cfg.keys
			if op == opMulti {
				res.Batch = b.cfg.multiSize
			}
		}
		return res, err
	}
}

func keyGen(op keyOp) gen {
	return func(w *worker, c *call) bool {
		b := w.b
		switch op {
		case opMixed:
			if w.rng.Float64() < b.cfg.readRatio {
				w.get(c)
			} else {
				w.set(c)
			}
		case opSet:
			w.set(c)
		case opGet:
			w.get(c)
		case opExists:
			b.keyRequest(c, jute.OpExists, pickKey(w.rng, len(b.keys)))
		case opMulti:
			if w.multiOps == nil {
				w.multiOps = make([]jute.MultiOp, max(b.cfg.multiSize, 1))
				for i := range w.multiOps {
					w.multiOps[i] = jute.MultiOp{Type: jute.OpSetData, Body: &jute.SetDataRequest{Data: b.data, Version: -1}}
				}
			}
			for _, o := range w.multiOps {
				o.Body.(*jute.SetDataRequest).Path = b.keys[pickKey(w.rng, len(b.keys))]
			}
			c.setRequest(jute.OpMulti, &jute.MultiRequest{Ops: w.multiOps})
		}
		return true
	}
}

func (w *worker) get(c *call) { w.b.keyRequest(c, jute.OpGetData, pickKey(w.rng, len(w.b.keys))) }

func (w *worker) set(c *call) { w.b.keyRequest(c, jute.OpSetData, pickKey(w.rng, len(w.b.keys))) }

// keyRequest encodes a getData or exists (no watch), or a setData of b.data (any version),
// of key i into c's frame: the bytes setRequest would make of the jute records, but with
// the path formatted in place instead of loaded from b.keys, whose strings miss the CPU
// caches the server shares with us on nearly every request.
func (b *bench) keyRequest(c *call, op jute.OpCode, i int) {
	c.op = op
	f, start := jute.StartFrame(c.frame[:0])
	f = append(f, 0, 0, 0, 0) // xid, set by enqueue
	f = binary.BigEndian.AppendUint32(f, uint32(op))
	f = appendKeyPath(f, b.keyDir, i)
	if op == jute.OpSetData {
		f = binary.BigEndian.AppendUint32(f, uint32(len(b.data)))
		f = append(f, b.data...)
		f = binary.BigEndian.AppendUint32(f, 0xffffffff) // version -1
	} else {
		f = append(f, 0) // watch false
	}
	jute.EndFrame(f, start)
	c.frame = f
}

// largeKeys bounds the large workload's key space: its setup writes every key.
const largeKeys = 100

func runLarge(ctx context.Context, b *bench) (*Result, error) {
	dir := b.cfg.root + "/large"
	n := min(b.cfg.keys, largeKeys)
	b.keyDir, b.keys = dir, keyPaths(dir, n)
	b.data = payload(b.cfg.largeSize)
	if err := b.withSetup(ctx, func(conns []*conn) error { return setupKeys(ctx, conns, dir, b.keys, b.data) }); err != nil {
		return nil, err
	}
	res, err := b.runPipelined(ctx, keyGen(opSet), false)
	if res != nil {
		res.Keys = n
		res.DataSize = b.cfg.largeSize
	}
	return res, err
}

func runCreate(ctx context.Context, b *bench) (*Result, error) {
	dir := b.cfg.root + "/create-" + b.runID
	b.data = payload(b.cfg.dataSize)
	if err := b.withSetup(ctx, func(conns []*conn) error { return ensurePath(ctx, conns[0], dir, nil) }); err != nil {
		return nil, err
	}
	res, err := b.runPipelined(ctx, func(w *worker, c *call) bool {
		c.setRequest(jute.OpCreate, &jute.CreateRequest{Path: createPath(dir, w.id, w.seq), Data: w.b.data, ACL: jute.OpenACLUnsafe})
		w.seq++
		return true
	}, false)
	if err != nil || !b.cfg.cleanup {
		return res, err
	}
	// Every path up to each session's count was tried; those that failed give NoNode.
	var paths []string
	for _, w := range b.workers {
		for s := range w.seq {
			paths = append(paths, createPath(dir, w.id, s))
		}
	}
	paths = append(paths, dir)
	err = b.withSetup(ctx, func(conns []*conn) error {
		if err := deleteAll(ctx, conns, paths[:len(paths)-1]); err != nil {
			return err
		}
		return deleteAll(ctx, conns[:1], paths[len(paths)-1:])
	})
	if err != nil {
		return res, fmt.Errorf("cleanup: %w", err)
	}
	return res, nil
}

// runCreateDelete has each session create a znode and then delete it, the two requests
// pipelined like any others: a session's requests are answered in order, so the delete
// always finds its znode. The znodes live under a parent of their own, removed afterwards.
func runCreateDelete(ctx context.Context, b *bench) (*Result, error) {
	dir := b.cfg.root + "/createdelete"
	b.data = payload(b.cfg.dataSize)
	if err := b.withSetup(ctx, func(conns []*conn) error { return ensurePath(ctx, conns[0], dir, nil) }); err != nil {
		return nil, err
	}
	res, runErr := b.runPipelined(ctx, func(w *worker, c *call) bool {
		p := createPath(dir, w.id, w.seq/2)
		if w.seq%2 == 0 {
			c.setRequest(jute.OpCreate, &jute.CreateRequest{Path: p, Data: w.b.data, ACL: jute.OpenACLUnsafe})
		} else {
			c.setRequest(jute.OpDelete, &jute.DeleteRequest{Path: p, Version: -1})
		}
		w.seq++
		return true
	}, false)
	// The run may end between a create and its delete, or fail: whatever is left goes.
	err := b.withSetup(ctx, func(conns []*conn) error { return deleteTree(ctx, conns, dir) })
	if err != nil {
		err = fmt.Errorf("cleanup: %w", err)
	}
	return res, errors.Join(runErr, err)
}

// deleteTree deletes dir and its children (which must have none of their own).
func deleteTree(ctx context.Context, conns []*conn, dir string) error {
	body, err := conns[0].do(ctx, jute.OpGetChildren, &jute.GetChildrenRequest{Path: dir})
	if errors.Is(err, jute.ErrNoNode) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("children of %s: %w", dir, err)
	}
	var kids jute.GetChildrenResponse
	if err := jute.Unmarshal(body, &kids); err != nil {
		return fmt.Errorf("children of %s: %w", dir, err)
	}
	paths := make([]string, len(kids.Strings))
	for i, k := range kids.Strings {
		paths[i] = dir + "/" + k
	}
	if err := deleteAll(ctx, conns, paths); err != nil {
		return err
	}
	return deleteAll(ctx, conns[:1], []string{dir})
}

// deleteAll deletes paths, accepting those that do not exist.
func deleteAll(ctx context.Context, conns []*conn, paths []string) error {
	var mu sync.Mutex
	var firstErr error
	err := pump(ctx, conns, 64, len(paths), func(i int, c *call) {
		c.setRequest(jute.OpDelete, &jute.DeleteRequest{Path: paths[i], Version: -1})
	}, func(i int, c *call) {
		if c.err != nil && !errors.Is(c.err, jute.ErrNoNode) {
			mu.Lock()
			if firstErr == nil {
				firstErr = fmt.Errorf("delete %s: %w", paths[i], c.err)
			}
			mu.Unlock()
		}
	})
	return errors.Join(err, firstErr)
}

func runZnodes(ctx context.Context, b *bench) (*Result, error) {
	b.data = payload(10)
	if err := b.withSetup(ctx, func(conns []*conn) error { return ensurePath(ctx, conns[0], znodeParent, nil) }); err != nil {
		return nil, err
	}
	batch := max(b.cfg.multiSize, 1)
	total := b.cfg.znodes
	res, err := b.runPipelined(ctx, func(w *worker, c *call) bool {
		first := int(w.b.next.Add(int64(batch))) - batch
		if first >= total {
			return false
		}
		n := min(batch, total-first)
		if cap(w.multiOps) < n {
			w.multiOps = make([]jute.MultiOp, n)
		}
		ops := w.multiOps[:n]
		for i := range ops {
			ops[i] = jute.MultiOp{Type: jute.OpCreate, Body: &jute.CreateRequest{Path: znodePath(w.b.cfg.znodesFrom + first + i), Data: w.b.data, ACL: jute.OpenACLUnsafe}}
		}
		c.setRequest(jute.OpMulti, &jute.MultiRequest{Ops: ops})
		return true
	}, true)
	if res == nil {
		return nil, err
	}
	res.Batch = batch
	res.DataSize = len(b.data)
	res.Keys = total
	if res.Seconds > 0 {
		res.Note = fmt.Sprintf("%.0f znodes/s", float64(res.Ops)*float64(batch)/res.Seconds)
	}
	if res.ServerRSSEnd > 0 && res.Errors == 0 {
		res.BytesPerZnode = round3(float64(res.ServerRSSEnd-res.ServerRSSStart) / float64(total))
	}
	// The snapshots written while the tree grew, by mntr (when the server allows it): the
	// snapshot time the issue asks for at 10M znodes, from both servers' own summary.
	if m, merr := mntr(ctx, b.server(0), b.dialOpts()); merr == nil {
		res.SnapshotMaxMS = m["zk_max_snapshottime"]
		res.SnapshotCount = int64(m["zk_cnt_snapshottime"])
	}
	return res, err
}

func runConnect(ctx context.Context, b *bench) (*Result, error) {
	res, err := b.runCycles(ctx, func(ctx context.Context, w *worker) error {
		c, err := dial(ctx, w.b.server(w.id+int(w.seq)), w.b.dialOpts())
		w.seq++
		if err != nil {
			return err
		}
		return c.close(10 * time.Second)
	})
	return res, err
}

func runEphemeral(ctx context.Context, b *bench) (*Result, error) {
	dir := b.cfg.root + "/eph"
	b.data = payload(b.cfg.dataSize)
	if err := b.withSetup(ctx, func(conns []*conn) error { return ensurePath(ctx, conns[0], dir, nil) }); err != nil {
		return nil, err
	}
	return b.runCycles(ctx, func(ctx context.Context, w *worker) error {
		c, err := dial(ctx, w.b.server(w.id+int(w.seq)), w.b.dialOpts())
		seq := w.seq
		w.seq++
		if err != nil {
			return err
		}
		_, err = c.do(ctx, jute.OpCreate, &jute.CreateRequest{
			Path: fmt.Sprintf("%s/w%04d-%s-%010d", dir, w.id, w.b.runID, seq), Data: w.b.data,
			ACL: jute.OpenACLUnsafe, Flags: jute.FlagEphemeral,
		})
		if err != nil {
			c.abort()
			return fmt.Errorf("create ephemeral: %w", err)
		}
		return c.close(10 * time.Second)
	})
}
