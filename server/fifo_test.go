package server_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// slowSyncFS delays every fsync: a leader whose own log is the slowest member's makes a
// quorum of followers' ACKs arrive before its local ack, so one commit step covers several
// proposals, which is when a sync answer and a later write of the same session are
// released together.
type slowSyncFS struct {
	storage.OSFS
	delay time.Duration
}

type slowFile struct {
	storage.File
	delay time.Duration
}

func (f slowFile) Sync() error {
	time.Sleep(f.delay)
	return f.File.Sync()
}

func (s slowSyncFS) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	f, err := s.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return slowFile{f, s.delay}, nil
}

// fifoClient pipelines requests on one connection and checks that every reply answers the
// oldest request still unanswered: ZooKeeper's FIFO client order.
type fifoClient struct {
	c       *rawzk.Client
	mu      sync.Mutex
	pending []int32
}

// send sends a request; a failed write (the server closed the connection) is left for the
// reader to report, as the replies that never come.
func (f *fifoClient) send(op jute.OpCode, body jute.Record) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	xid, err := f.c.TrySend(op, body)
	if err == nil {
		f.pending = append(f.pending, xid)
	}
	return err
}

// readReplies reads n replies and returns the first order violation (or read error).
func (f *fifoClient) readReplies(n int) error {
	for i := 0; i < n; {
		b, err := f.c.ReadFrame()
		if err != nil {
			f.mu.Lock()
			defer f.mu.Unlock()
			return fmt.Errorf("after %d replies, %d unanswered (oldest xid %v): %w", i, len(f.pending), f.pending[:min(1, len(f.pending))], err)
		}
		d := jute.NewDecoder(b)
		var h jute.ReplyHeader
		h.Decode(d)
		if h.Xid == jute.XidNotification {
			continue
		}
		f.mu.Lock()
		if len(f.pending) == 0 || f.pending[0] != h.Xid {
			want := f.pending[:min(1, len(f.pending))]
			f.mu.Unlock()
			return fmt.Errorf("reply #%d is for xid %d, but the oldest unanswered request is %v", i, h.Xid, want)
		}
		f.pending = f.pending[1:]
		f.mu.Unlock()
		i++
	}
	return nil
}

// TestEnsemblePipelinedSyncThenWriteInOrder pipelines sync, setData and getData on one
// session through each member. The leader answers a sync once a quorum acknowledged a ping
// sent after it (ReadIndex), which can come after the commit of a write the session sent
// behind the sync: the write's reply must still not overtake the sync's.
func TestEnsemblePipelinedSyncThenWriteInOrder(t *testing.T) {
	e := startEnsembleConfig(t, 3, func(c *server.Config) {
		if c.ServerID == 3 {
			// Likely the leader (highest id wins a fresh election): slow its own fsync.
			c.FS = slowSyncFS{delay: 3 * time.Millisecond}
		}
	})
	e.waitServing()
	setup := rawzk.Connect(t, e.addrs()[0])
	setup.Call(jute.OpCreate, &jute.CreateRequest{Path: "/fifo", Data: []byte("0"), ACL: jute.OpenACLUnsafe}, &jute.CreateResponse{})

	const rounds = 400
	var wg sync.WaitGroup
	errs := make(chan error, len(e.members))
	for i, addr := range e.addrs() {
		f := &fifoClient{c: rawzk.Connect(t, addr)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan error, 1)
			go func() { done <- f.readReplies(3 * rounds) }()
			for r := 0; r < rounds; r++ {
				if f.send(jute.OpSync, &jute.PathRequest{Path: "/fifo"}) != nil ||
					f.send(jute.OpSetData, &jute.SetDataRequest{Path: "/fifo", Data: []byte(fmt.Sprint(i, r)), Version: -1}) != nil ||
					f.send(jute.OpGetData, &jute.PathWatchRequest{Path: "/fifo"}) != nil {
					break
				}
			}
			if err := <-done; err != nil {
				errs <- fmt.Errorf("client of member %d: %w", i+1, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestClosingSessionAnswersInOrder pipelines a write, closeSession and a read: the read
// arrives while the session is closing, and must not be answered (SESSIONEXPIRED) before
// the write and the close that were sent before it.
func TestClosingSessionAnswersInOrder(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.FS = slowSyncFS{delay: 20 * time.Millisecond} // the write waits for its fsync
	}))
	c := rawzk.Connect(t, srv.Addr())
	c.Call(jute.OpCreate, &jute.CreateRequest{Path: "/closing", ACL: jute.OpenACLUnsafe}, &jute.CreateResponse{})
	f := &fifoClient{c: c}
	f.send(jute.OpSetData, &jute.SetDataRequest{Path: "/closing", Data: []byte("x"), Version: -1})
	f.send(jute.OpCloseSession, nil)
	f.send(jute.OpGetData, &jute.PathWatchRequest{Path: "/closing"})
	// The close's reply closes the connection, as in ZooKeeper: the read is never answered.
	err := f.readReplies(3)
	if err == nil || !strings.Contains(err.Error(), "after 2 replies") || !errors.Is(err, io.EOF) {
		t.Fatalf("want the write's and the close's replies in order, then EOF; got %v", err)
	}
}
