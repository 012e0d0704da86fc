package compat

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/testing/difffuzz"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// Both servers run with the same settings so that negotiated timeouts, TTL support and the
// super user compare: tickTime 2000 (timeouts clamped to 4000..40000 ms), extended types on.
const (
	tickTime    = 2000
	superPasswd = "s3cret"
)

var superDigest = "super:" + digestHash("super", superPasswd)

// digestHash is the id part of a digest ACL: BASE64(SHA1("user:password")).
func digestHash(user, passwd string) string {
	sum := sha1.Sum([]byte(user + ":" + passwd))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// digestID is the full digest ACL id "user:BASE64(SHA1(user:password))".
func digestID(user, passwd string) string { return user + ":" + digestHash(user, passwd) }

// refOptions are the reference server's settings matching zkdConfig.
func refOptions(dataDir string, extra ...string) refzk.Options {
	return refzk.Options{
		TickTime: tickTime,
		DataDir:  dataDir,
		SystemProperties: append([]string{
			"zookeeper.extendedTypesEnabled=true",
			"zookeeper.DigestAuthenticationProvider.superDigest=" + superDigest,
			// A small log preallocation (KiB) keeps copies of data directories cheap.
			"zookeeper.preAllocSize=1024",
		}, extra...),
	}
}

// zkdConfig gives zkd the reference server's settings.
func zkdConfig(dataDir string, more func(*server.Config)) zktest.Option {
	return zktest.WithConfig(func(c *server.Config) {
		c.TickTime = tickTime
		c.ExtendedTypes = true
		c.SuperDigest = superDigest
		// Every extension beyond ZooKeeper is on: the clients these tests run are stock
		// ones, which must see exactly ZooKeeper whatever the server enables.
		c.Extensions = ext.Of(ext.All...)
		if dataDir != "" {
			c.DataDir = dataDir
		}
		if more != nil {
			more(c)
		}
	})
}

// target is one server under test.
type target struct {
	name string // "zookeeper" or "zkd"
	addr string
}

// startPair starts a reference ZooKeeper and a zkd with equal settings.
func startPair(t *testing.T) []target {
	t.Helper()
	refzk.Require(t)
	// The container manager deletes containers and expired TTL nodes on its own schedule, which
	// would consume zxids at arbitrary points of a script: keep it out of the way.
	// Quotas are enforced on both (quota_test.go); no other group sets one.
	ref := refzk.StartStandalone(t, refOptions("", "znode.container.checkIntervalMs=3600000", "zookeeper.enforceQuota=true"))
	z := zktest.Start(t, zkdConfig("", func(c *server.Config) {
		c.ContainerCheckInterval = time.Hour
		c.EnforceQuota = true
	}))
	return []target{{"zookeeper", ref.Addr()}, {"zkd", z.Addr()}}
}

// event is one notification as received.
type event struct {
	Type  jute.EventType
	State jute.State
	Path  string
	Zxid  int64
}

// sess is one raw client connection (and the session it carries). Unlike rawzk.Client.Call,
// its methods report a closed connection as an error rather than failing the test, because a
// close is often the behaviour under comparison.
type sess struct {
	name     string
	c        *rawzk.Client
	xid      int32
	id       int64
	passwd   []byte
	timeout  int32
	lastZxid int64
	dead     bool // the connection is known to be closed
	events   []event
}

var errNoReply = errors.New("no reply: connection closed")

// send writes one request frame.
func (s *sess) send(xid int32, op jute.OpCode, body jute.Record) error {
	e := jute.Encoder{}
	(&jute.RequestHeader{Xid: xid, Type: op}).Encode(&e)
	if body != nil {
		body.Encode(&e)
	}
	return s.c.WriteFrame(e.Buf)
}

// nextXid returns the next ordinary xid.
func (s *sess) nextXid() int32 { s.xid++; return s.xid }

// read reads frames up to the reply with xid, collecting notifications on the way.
func (s *sess) read(xid int32) (jute.ReplyHeader, []byte, error) {
	for {
		b, err := s.c.ReadFrame()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return jute.ReplyHeader{}, nil, fmt.Errorf("no reply within the read deadline: %w", err)
			}
			s.dead = true
			return jute.ReplyHeader{}, nil, errNoReply
		}
		d := jute.NewDecoder(b)
		var h jute.ReplyHeader
		h.Decode(d)
		if d.Err() != nil {
			return h, nil, fmt.Errorf("short reply frame % x: %w", b, d.Err())
		}
		if h.Xid == jute.XidNotification {
			var ev jute.WatcherEvent
			ev.Decode(d)
			if d.Err() != nil || d.Remaining() != 0 {
				return h, nil, fmt.Errorf("bad notification % x", b)
			}
			s.events = append(s.events, event{ev.Type, ev.State, ev.Path, h.Zxid})
			continue
		}
		if h.Xid != xid {
			return h, nil, fmt.Errorf("reply xid %d, want %d", h.Xid, xid)
		}
		if h.Zxid > s.lastZxid {
			s.lastZxid = h.Zxid
		}
		return h, d.Rest(), nil
	}
}

// call sends a request and reads its reply.
func (s *sess) call(xid int32, op jute.OpCode, body jute.Record) (jute.ReplyHeader, []byte, error) {
	if err := s.send(xid, op, body); err != nil {
		s.dead = true
		return jute.ReplyHeader{}, nil, errNoReply
	}
	return s.read(xid)
}

// takeEvents returns and forgets the notifications received so far.
func (s *sess) takeEvents() []event {
	ev := s.events
	s.events = nil
	return ev
}

// closedByServer reports whether the server closes the connection (without sending anything
// more) within a generous deadline.
func (s *sess) closedByServer() string {
	s.c.NC.SetReadDeadline(time.Now().Add(20 * time.Second))
	var buf [64]byte
	n, err := s.c.NC.Read(buf[:])
	switch {
	case n > 0:
		return fmt.Sprintf("sent more: % x", buf[:n])
	case err == nil:
		return "open"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "still open after 20s"
	}
	s.dead = true
	return "closed"
}

// handshake sends a ConnectRequest and returns the raw ConnectResponse frame, or nil when the
// server closed the connection instead of answering.
func handshake(c *rawzk.Client, req *jute.ConnectRequest) ([]byte, error) {
	if err := c.WriteFrame(jute.Marshal(req)); err != nil {
		return nil, err
	}
	b, err := c.ReadFrame()
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isReset(err) {
			return nil, nil
		}
		return nil, err
	}
	return b, nil
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

// newSession opens a session with the usual client settings (45-byte ConnectRequest).
func newSession(t testing.TB, name, addr string, timeout int32) *sess {
	t.Helper()
	c := rawzk.Dial(t, addr)
	b, err := handshake(c, &jute.ConnectRequest{TimeOut: timeout, Passwd: make([]byte, 16), HasReadOnly: true})
	if err != nil || b == nil {
		t.Fatalf("%s: handshake: %v (closed: %v)", addr, err, b == nil)
	}
	var resp jute.ConnectResponse
	if err := jute.Unmarshal(b, &resp); err != nil || resp.SessionID == 0 {
		t.Fatalf("%s: handshake: %+v %v", addr, resp, err)
	}
	return &sess{name: name, c: c, id: resp.SessionID, passwd: resp.Passwd, timeout: resp.TimeOut}
}

// --- rendering -------------------------------------------------------------------------

// norm renders replies as the fuzzer does (zxids relative to the group's start, session ids
// by name, times by how they relate).
type norm struct{ difffuzz.Norm }

func data(b []byte) string                { return difffuzz.Data(b) }
func acls(v []jute.ACL) string            { return difffuzz.ACLs(v) }
func (n *norm) z(v int64) string          { return n.Z(v) }
func (n *norm) stat(st *jute.Stat) string { return n.Stat(st) }

func (n *norm) events(who string, ev []event, when string) []string {
	var out []string
	for _, e := range ev {
		s := fmt.Sprintf("  %s %s: %v %s", who, when, e.Type, e.Path)
		if e.State != jute.StateSyncConnected {
			s += fmt.Sprintf(" state=%d", e.State)
		}
		// The header's zxid is not compared: ZooKeeper 3.8 sends -1, 3.9 and zkd the zxid
		// of the change (versiondiff row ZOOKEEPER-4655; server tests check zkd's).
		out = append(out, s)
	}
	return out
}

// reply renders a reply header and body.
func (n *norm) reply(op jute.OpCode, h jute.ReplyHeader, b []byte, err error) string {
	if err != nil {
		return "ERROR " + err.Error()
	}
	return n.Reply(op, h, b)
}
