package storage

import (
	"errors"
	"fmt"

	"github.com/zkd-io/zkd/jute"
)

// snapItem is one callback's worth of a decoded snapshot.
type snapItem struct {
	kind   snapItemKind
	node   SnapNode
	sess   SnapSession
	key    int64
	acls   []jute.ACL
	digest SnapDigest
	last   int64
}

type snapItemKind uint8

const (
	itemSession snapItemKind = iota
	itemACL
	itemNode
	itemDigest
	itemLast
)

// snapBatch is how many snapshot callbacks go over in one batch.
const snapBatch = 1024

var errPipeStopped = errors.New("storage: consumer stopped")

// ahead runs produce on a goroutine of its own and hands what it adds to consume on the
// calling goroutine, in order, in batches of batch. The first error from consume stops
// produce (add returns errPipeStopped); ahead returns it, or else produce's error. It returns
// only once produce has returned, so whatever produce reads is the caller's again.
func ahead[T any](batch int, produce func(add func(T) error) error, consume func(T) error) error {
	full := make(chan []T, 4)
	free := make(chan []T, 6)
	stop := make(chan struct{})
	var produceErr error
	go func() {
		defer close(full)
		cur := make([]T, 0, batch)
		send := func() error {
			select {
			case full <- cur:
			case <-stop:
				return errPipeStopped
			}
			select {
			case cur = <-free:
				cur = cur[:0]
			default:
				cur = make([]T, 0, batch)
			}
			return nil
		}
		err := produce(func(v T) error {
			if cur = append(cur, v); len(cur) == batch {
				return send()
			}
			return nil
		})
		if len(cur) > 0 && !errors.Is(err, errPipeStopped) {
			if serr := send(); err == nil {
				err = serr
			}
		}
		produceErr = err // read after full is closed
	}()
	var cerr error
	for b := range full {
		if cerr == nil {
			for i := range b {
				if cerr = consume(b[i]); cerr != nil {
					close(stop)
					break
				}
			}
		}
		clear(b) // the batch is reused: drop references
		select {
		case free <- b:
		default:
		}
	}
	if cerr != nil {
		return cerr
	}
	return produceErr
}

// pipelined runs decode ahead of h (see ahead) with a handler that queues every callback,
// and replays them to h on the calling goroutine, in order.
func pipelined(h SnapshotHandler, decode func(SnapshotHandler) error) error {
	produce := func(add func(snapItem) error) error {
		return decode(SnapshotHandler{
			Session: func(s SnapSession) error { return add(snapItem{kind: itemSession, sess: s}) },
			ACL: func(k int64, a []jute.ACL) error {
				return add(snapItem{kind: itemACL, key: k, acls: a})
			},
			Node:              func(n SnapNode) error { return add(snapItem{kind: itemNode, node: n}) },
			Digest:            func(d SnapDigest) error { return add(snapItem{kind: itemDigest, digest: d}) },
			LastProcessedZxid: func(z int64) error { return add(snapItem{kind: itemLast, last: z}) },
		})
	}
	return ahead(snapBatch, produce, func(it snapItem) error { return deliver(h, &it) })
}

func deliver(h SnapshotHandler, it *snapItem) error {
	switch it.kind {
	case itemNode:
		if h.Node != nil {
			if err := h.Node(it.node); err != nil {
				return fmt.Errorf("storage: snapshot node %q: %w", it.node.Path, err)
			}
		}
	case itemSession:
		if h.Session != nil {
			if err := h.Session(it.sess); err != nil {
				return fmt.Errorf("storage: snapshot session: %w", err)
			}
		}
	case itemACL:
		if h.ACL != nil {
			if err := h.ACL(it.key, it.acls); err != nil {
				return fmt.Errorf("storage: snapshot acl: %w", err)
			}
		}
	case itemDigest:
		if h.Digest != nil {
			if err := h.Digest(it.digest); err != nil {
				return fmt.Errorf("storage: snapshot digest: %w", err)
			}
		}
	case itemLast:
		if h.LastProcessedZxid != nil {
			if err := h.LastProcessedZxid(it.last); err != nil {
				return fmt.Errorf("storage: snapshot last processed zxid: %w", err)
			}
		}
	}
	return nil
}

// ReadLogAhead is ReadLog with decoding on a goroutine of its own: decode gets each entry
// (txn is valid only during the call, so decode must copy what it keeps) and apply gets
// decode's results on the calling goroutine, in log order, a batch behind. The first error
// from either stops the read; ReadLogAhead returns once the reading goroutine has finished.
func ReadLogAhead[T any](fsys FS, dir string, fromZxid int64, decode func(zxid int64, txn []byte) (T, error), apply func(T) error) (lastZxid int64, err error) {
	var last int64
	err = ahead(256, func(add func(T) error) error {
		var rerr error
		last, rerr = ReadLog(fsys, dir, fromZxid, func(zxid int64, txn []byte) error {
			v, err := decode(zxid, txn)
			if err != nil {
				return err
			}
			return add(v)
		})
		return rerr
	}, apply)
	return last, err
}
