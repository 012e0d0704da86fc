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

const pipeBatch = 1024

var errPipeStopped = errors.New("storage: snapshot consumer stopped")

// pipelined runs decode on a goroutine of its own with a handler that queues every callback
// in batches, and replays them to h on the calling goroutine, in order. It returns h's
// first error (after which decoding stops) or else decode's. It returns only once the
// decoding goroutine has finished, so decode's reader is the caller's again.
func pipelined(h SnapshotHandler, decode func(SnapshotHandler) error) error {
	full := make(chan []snapItem, 4)
	free := make(chan []snapItem, 6)
	stop := make(chan struct{})
	var decodeErr error
	go func() {
		defer close(full)
		cur := make([]snapItem, 0, pipeBatch)
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
				cur = make([]snapItem, 0, pipeBatch)
			}
			return nil
		}
		add := func(it snapItem) error {
			cur = append(cur, it)
			if len(cur) == pipeBatch {
				return send()
			}
			return nil
		}
		q := SnapshotHandler{
			Session: func(s SnapSession) error { return add(snapItem{kind: itemSession, sess: s}) },
			ACL: func(k int64, a []jute.ACL) error {
				return add(snapItem{kind: itemACL, key: k, acls: a})
			},
			Node:              func(n SnapNode) error { return add(snapItem{kind: itemNode, node: n}) },
			Digest:            func(d SnapDigest) error { return add(snapItem{kind: itemDigest, digest: d}) },
			LastProcessedZxid: func(z int64) error { return add(snapItem{kind: itemLast, last: z}) },
		}
		err := decode(q)
		if len(cur) > 0 && !errors.Is(err, errPipeStopped) {
			if serr := send(); err == nil {
				err = serr
			}
		}
		decodeErr = err // read after full is closed
	}()
	var herr error
	for b := range full {
		if herr == nil {
			for i := range b {
				if herr = deliver(h, &b[i]); herr != nil {
					close(stop)
					break
				}
				b[i] = snapItem{} // the batch is reused: drop references
			}
		}
		select {
		case free <- b:
		default:
		}
	}
	if herr != nil {
		return herr
	}
	return decodeErr
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
	const batch = 256
	full := make(chan []T, 4)
	free := make(chan []T, 6)
	stop := make(chan struct{})
	var readLast int64
	var readErr error
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
		last, err := ReadLog(fsys, dir, fromZxid, func(zxid int64, txn []byte) error {
			v, err := decode(zxid, txn)
			if err != nil {
				return err
			}
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
		readLast, readErr = last, err
	}()
	var aerr error
	for b := range full {
		if aerr == nil {
			for i := range b {
				if aerr = apply(b[i]); aerr != nil {
					close(stop)
					break
				}
			}
		}
		clear(b)
		select {
		case free <- b:
		default:
		}
	}
	if aerr != nil {
		return readLast, aerr
	}
	return readLast, readErr
}
