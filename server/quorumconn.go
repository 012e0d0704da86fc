package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/internal/zab"
	"github.com/zkd-io/zkd/jute"
)

// quorumConn is one leader<->learner TCP connection on the quorum port. The stream is raw
// QuorumPacket records back to back, with no length prefix; a SNAP packet is followed by
// the database stream.
type quorumConn struct {
	id   zab.ConnID
	nc   net.Conn
	srv  *Server
	mu   sync.Mutex
	out  []qout
	wake chan struct{}
	done chan struct{}
	once sync.Once
	st   learnerStats // ZooKeeper's LearnerHandler counts (learnerstats.go)
}

func newQuorumConn(s *Server, id zab.ConnID, nc net.Conn) *quorumConn {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	q := &quorumConn{id: id, nc: nc, srv: s, wake: make(chan struct{}, 1), done: make(chan struct{})}
	q.st.init()
	return q
}

func (q *quorumConn) close() {
	q.once.Do(func() {
		q.nc.Close()
		close(q.done)
	})
}

// qout is one queued item: an encoded packet, or a stream encoded on the writer goroutine
// (the database after SNAP), in its place among the packets. A packet carries its zxid,
// its LearnerHandler.packetSize and, when sampled, when it was queued (unix ns), for the
// learner statistics; a stream is not a packet and counts in none of them.
type qout struct {
	b      []byte
	stream func(io.Writer) error
	zxid   int64
	size   int64
	at     int64
}

// sendStream queues a stream the writer encodes when its turn comes.
func (q *quorumConn) sendStream(f func(io.Writer) error) { q.queue(qout{stream: f}) }

func (q *quorumConn) queue(o qout) {
	q.mu.Lock()
	q.out = append(q.out, o)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *quorumConn) send(p *jute.QuorumPacket) {
	// Sized for type, zxid, data and an empty auth list: jute.Marshal's buffer would grow
	// several times for a proposal of a 1 KB txn.
	o := qout{b: jute.AppendRecord(make([]byte, 0, 4+8+4+len(p.Data)+4), p), zxid: p.Zxid, size: packetSize(p)}
	o.at = q.st.queuedPacket(o.size)
	q.queue(o)
}

func (q *quorumConn) writeLoop() {
	defer q.srv.wg.Done()
	bw := bufio.NewWriterSize(q.nc, 64<<10)
	// spare is the last batch's slice, emptied: the queue appends into it next, instead of
	// growing a new one for every batch.
	var spare []qout
	for {
		select {
		case <-q.wake:
		case <-q.done:
			return
		}
		q.mu.Lock()
		batch := q.out
		q.out = spare
		q.mu.Unlock()
		q.nc.SetWriteDeadline(time.Now().Add(time.Duration(q.srv.cfg.TickTime*q.srv.cfg.SyncLimit) * time.Millisecond * 2))
		for i := range batch {
			o := &batch[i]
			var err error
			if o.stream != nil {
				// A big database takes longer than one packet's deadline.
				q.nc.SetWriteDeadline(time.Time{})
				err = o.stream(bw)
			} else {
				q.st.taken(o)
				if _, err = bw.Write(o.b); err == nil {
					q.st.written(o)
				}
			}
			if err != nil {
				q.srv.log.Info("quorum connection write failed", "remote", q.nc.RemoteAddr().String(), "err", err)
				q.close()
				return
			}
		}
		if err := bw.Flush(); err != nil {
			q.close()
			return
		}
		clear(batch) // the packets' buffers are garbage now
		// A batch of a lagging learner or a DIFF can be thousands of packets: its slice is
		// not kept for the connection's life.
		spare = nil
		if cap(batch) <= 1024 {
			spare = batch[:0]
		}
	}
}

// readLoop decodes packets and hands them to the core. A learner's reader also reads the
// database stream after SNAP and hands over the loaded tree.
func (q *quorumConn) readLoop(learner bool) {
	defer q.srv.wg.Done()
	defer q.srv.submit(event{kind: evQuorumClosed, qconn: q})
	br := bufio.NewReaderSize(q.nc, 64<<10)
	for {
		p, err := readQuorumPacket(br, q.srv.cfg.JuteMaxBuffer)
		if err != nil {
			select {
			case <-q.done:
			default:
				q.srv.log.Info("quorum connection closed", "remote", q.nc.RemoteAddr().String(), "err", err)
			}
			q.close()
			return
		}
		ev := event{kind: evQuorumPacket, qconn: q, qpacket: p}
		if learner && p.Type == zab.PktSnap {
			snap, err := readSnapStream(br, q.srv.cfg.ExtendedTypes, p.Zxid)
			if err != nil {
				q.srv.log.Warn("bad SNAP stream from the leader", "err", err)
				q.close()
				return
			}
			ev.snap = snap
		}
		q.srv.submit(ev)
	}
}

// readQuorumPacket reads one QuorumPacket record from a stream.
func readQuorumPacket(br *bufio.Reader, maxBuf int) (jute.QuorumPacket, error) {
	var p jute.QuorumPacket
	var hdr [12]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return p, err
	}
	d := jute.NewDecoder(hdr[:])
	p.Type = d.Int()
	p.Zxid = d.Long()
	data, err := readBuffer(br, maxBuf)
	if err != nil {
		return p, err
	}
	p.Data = data
	var n [4]byte
	if _, err := io.ReadFull(br, n[:]); err != nil {
		return p, err
	}
	count := int32(uint32(n[0])<<24 | uint32(n[1])<<16 | uint32(n[2])<<8 | uint32(n[3]))
	if count < -1 || count > 1024 {
		return p, fmt.Errorf("quorum packet with %d auth ids", count)
	}
	for i := int32(0); i < count; i++ {
		scheme, err := readBuffer(br, maxBuf)
		if err != nil {
			return p, err
		}
		id, err := readBuffer(br, maxBuf)
		if err != nil {
			return p, err
		}
		p.AuthInfo = append(p.AuthInfo, jute.ID{Scheme: string(scheme), ID: string(id)})
	}
	return p, nil
}

func readBuffer(br *bufio.Reader, maxBuf int) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(br, n[:]); err != nil {
		return nil, err
	}
	l := int32(uint32(n[0])<<24 | uint32(n[1])<<16 | uint32(n[2])<<8 | uint32(n[3]))
	if l == -1 {
		return nil, nil
	}
	// Quorum packets carry whole txns and requests; allow jute.maxbuffer plus slack.
	if l < 0 || int(l) > 2*maxBuf+1024 {
		return nil, fmt.Errorf("quorum packet buffer of %d bytes", l)
	}
	b := make([]byte, l)
	_, err := io.ReadFull(br, b)
	return b, err
}

// snapState is a database received in a SNAP sync.
type snapState struct {
	tree     *datatree.Tree
	sessions map[int64]int32
	zxid     int64
}

func readSnapStream(br *bufio.Reader, extended bool, zxid int64) (*snapState, error) {
	loader := datatree.NewLoader()
	sessions := map[int64]int32{}
	err := storage.ReadSnapStream(br, storage.SnapshotHandler{
		Session: func(ss storage.SnapSession) error { sessions[ss.ID] = ss.Timeout; return nil },
		ACL:     func(key int64, acls []jute.ACL) error { loader.ACL(key, acls); return nil },
		Node:    func(n storage.SnapNode) error { return loader.Node(datatree.SnapNode(n)) },
	})
	if err != nil {
		return nil, err
	}
	tree, err := loader.Finish(extended, zxid)
	if err != nil {
		return nil, err
	}
	return &snapState{tree: tree, sessions: sessions, zxid: zxid}, nil
}
