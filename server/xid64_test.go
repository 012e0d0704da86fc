package server_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// clickHouseConnect is the ConnectRequest ClickHouse's client sends for 64-bit xids
// (ZooKeeperImpl.cpp's sendHandshake): the length 45, then 46 bytes, the compression byte
// after the version uncounted.
func clickHouseConnect(compression bool) []byte {
	e := jute.Encoder{}
	e.Int(45)
	e.Int(jute.ProtocolVersionXID64)
	e.Bool(compression)
	e.Long(0)    // lastZxidSeen
	e.Int(30000) // timeout
	e.Long(0)    // session
	e.Buffer(make([]byte, 16))
	e.Bool(true) // readOnly, as ClickHouse sends it
	return e.Buf
}

type raw64 struct {
	t  *testing.T
	nc net.Conn
}

func dial64(t *testing.T, addr string, hello []byte) *raw64 {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(time.Minute))
	if _, err := nc.Write(hello); err != nil {
		t.Fatal(err)
	}
	return &raw64{t: t, nc: nc}
}

func (r *raw64) frame() ([]byte, error) { return jute.ReadFrame(r.nc, 1<<20) }

func (r *raw64) send(xid int64, op jute.OpCode, body jute.Record) {
	r.t.Helper()
	e := jute.Encoder{}
	(&jute.RequestHeader64{Xid: xid, Type: op}).Encode(&e)
	if body != nil {
		body.Encode(&e)
	}
	if err := jute.WriteFrame(r.nc, e.Buf); err != nil {
		r.t.Fatal(err)
	}
}

// reply reads frames up to the next one with xid (notifications before it are returned
// too).
func (r *raw64) reply(xid int64) (jute.ReplyHeader64, *jute.Decoder, []jute.WatcherEvent) {
	r.t.Helper()
	var evs []jute.WatcherEvent
	for {
		f, err := r.frame()
		if err != nil {
			r.t.Fatalf("waiting for xid %d: %v", xid, err)
		}
		d := &jute.Decoder{B: f}
		var h jute.ReplyHeader64
		h.Decode(d)
		if d.Err() != nil {
			r.t.Fatalf("reply header: %v", d.Err())
		}
		if h.Xid == int64(jute.XidNotification) && xid != int64(jute.XidNotification) {
			var ev jute.WatcherEvent
			ev.Decode(d)
			evs = append(evs, ev)
			continue
		}
		if h.Xid != xid {
			r.t.Fatalf("reply xid %d, want %d", h.Xid, xid)
		}
		return h, d, evs
	}
}

func wideServer(t *testing.T, set ext.Set) *zktest.Server {
	return zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.Extensions = set }))
}

// TestXID64ClickHouseSession speaks to zkd as ClickHouse's client does with use_xid_64:
// ClickHouse's handshake bytes, version 11 answered, xids above 2^31 echoed in 64-bit
// headers, pings at -2 and a watch event at -1, while a stock go-zookeeper session on the
// same server sees ZooKeeper.
func TestXID64ClickHouseSession(t *testing.T) {
	srv := wideServer(t, ext.Of(ext.Wide))
	r := dial64(t, srv.Addr(), clickHouseConnect(false))
	f, err := r.frame()
	if err != nil {
		t.Fatalf("connect response: %v", err)
	}
	var resp jute.ConnectResponse
	if err := jute.Unmarshal(f, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.ProtocolVersion != jute.ProtocolVersionXID64 || resp.SessionID == 0 || resp.TimeOut <= 0 || !resp.HasReadOnly {
		t.Fatalf("connect response %+v", resp)
	}

	stock, _ := connect(t, srv.Addr(), 10*time.Second)

	const base = int64(1)<<31 + 5
	r.send(base, jute.OpCreate, &jute.CreateRequest{Path: "/x64", Data: []byte("a"), ACL: jute.OpenACLUnsafe})
	h, d, _ := r.reply(base)
	var cr jute.CreateResponse
	cr.Decode(d)
	if h.Err != jute.OK || cr.Path != "/x64" || h.Zxid <= 0 {
		t.Fatalf("create: %+v %q", h, cr.Path)
	}
	// Several in flight, answered in order with their own xids.
	for i := int64(1); i <= 3; i++ {
		r.send(base<<i, jute.OpGetData, &jute.GetDataRequest{Path: "/x64", Watch: i == 3})
	}
	for i := int64(1); i <= 3; i++ {
		h, d, _ := r.reply(base << i)
		var gd jute.GetDataResponse
		gd.Decode(d)
		if h.Err != jute.OK || string(gd.Data) != "a" {
			t.Fatalf("getData %d: %+v %q", i, h, gd.Data)
		}
	}
	r.send(int64(jute.XidPing), jute.OpPing, nil)
	if h, _, _ := r.reply(int64(jute.XidPing)); h.Err != jute.OK {
		t.Fatalf("ping: %+v", h)
	}
	// The stock session changes the node: the event reaches the 64-bit session at xid -1.
	if _, err := stock.Set("/x64", []byte("b"), -1); err != nil {
		t.Fatalf("stock set: %v", err)
	}
	h, d, _ = r.reply(int64(jute.XidNotification))
	var ev jute.WatcherEvent
	ev.Decode(d)
	if ev.Type != jute.EventNodeDataChanged || ev.Path != "/x64" {
		t.Fatalf("event %+v (%+v)", ev, h)
	}
	// The stock session is ZooKeeper's: its data and its own (32-bit) xids.
	data, _, err := stock.Get("/x64")
	if err != nil || string(data) != "b" {
		t.Fatalf("stock get: %q %v", data, err)
	}
	// close with ClickHouse's CLOSE_XID_64.
	r.send(1<<63-1, jute.OpCloseSession, nil)
	if h, _, _ := r.reply(1<<63 - 1); h.Err != jute.OK {
		t.Fatalf("close: %+v", h)
	}
}

// TestXID64Off: without the wide extension, ClickHouse's version-11 handshake gets what zkd
// answered before the extension existed: the request does not decode as ZooKeeper's, and
// the connection is closed without an answer. With it, a request for compression is closed
// the same way (ClickHouse's client then retries without compression).
func TestXID64Off(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  ext.Set
		comp bool
	}{
		{"off", ext.Set{}, false},
		{"all-but-wide", ext.Of(ext.Capabilities, ext.KeeperOps, ext.PagedList, ext.WatchResume, ext.LargeReplies, ext.SessionGrace), false},
		{"compression", ext.Of(ext.Wide), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := wideServer(t, tc.set)
			r := dial64(t, srv.Addr(), clickHouseConnect(tc.comp))
			if f, err := r.frame(); !errors.Is(err, io.EOF) {
				t.Fatalf("got frame % x, err %v; want the connection closed", f, err)
			}
		})
	}
}

// TestXID64StockVersionIgnored: a ZooKeeper-layout ConnectRequest naming another version
// is answered version 0 (ZooKeeper ignores the version): 12 with the extension on, and 11
// too with it off.
func TestXID64StockVersionIgnored(t *testing.T) {
	for _, tc := range []struct {
		set     ext.Set
		version int32
	}{{ext.Of(ext.Wide), 12}, {ext.Set{}, 11}, {ext.Of(ext.Capabilities), 11}} {
		srv := wideServer(t, tc.set)
		req := jute.Marshal(&jute.ConnectRequest{ProtocolVersion: tc.version, TimeOut: 30000, Passwd: make([]byte, 16), HasReadOnly: true})
		r := dial64(t, srv.Addr(), jute.AppendFrame(nil, req))
		f, err := r.frame()
		if err != nil {
			t.Fatal(err)
		}
		var resp jute.ConnectResponse
		if err := jute.Unmarshal(f, &resp); err != nil || resp.ProtocolVersion != 0 || resp.SessionID == 0 {
			t.Fatalf("%v, version %d: response %+v, %v", tc.set, tc.version, resp, err)
		}
	}
}

// TestSequential64Server: a stock client's create with the 64-bit sequential flags gets
// ZooKeeper's answer to an unknown mode (BADARGUMENTS) without the wide extension; with it,
// the names carry the create's zxid, 19 digits, and keep growing across a restart (log
// replay and snapshots hold nothing new: the zxid is in them already).
func TestSequential64Server(t *testing.T) {
	off := zktest.Start(t)
	rc := rawzk.Connect(t, off.Addr())
	if h := rc.Call(jute.OpCreate, &jute.CreateRequest{Path: "/s", ACL: jute.OpenACLUnsafe}, &jute.CreateResponse{}); h.Err != jute.OK {
		t.Fatal(h.Err)
	}
	for _, f := range []int32{jute.FlagPersistentSequential64, jute.FlagEphemeralSequential64} {
		req := &jute.CreateRequest{Path: "/s/n-", ACL: jute.OpenACLUnsafe, Flags: f}
		if h := rc.Call(jute.OpCreate, req, &jute.CreateResponse{}); h.Err != jute.ErrBadArguments {
			t.Errorf("flags %d without wide: %v, want BADARGUMENTS", f, h.Err)
		}
		multi := &jute.MultiRequest{Ops: []jute.MultiOp{{Type: jute.OpCreate, Body: req}}}
		if h := rc.Call(jute.OpMulti, multi, &jute.MultiResponse{}); h.Err != jute.ErrMarshallingError {
			t.Errorf("multi with flags %d without wide: %v, want MARSHALLINGERROR", f, h.Err)
		}
	}

	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.Extensions = ext.Of(ext.Wide)
		c.SnapCount = 2 // snapshots between the creates
	}))
	c, _ := connect(t, srv.Addr(), 10*time.Second)
	if _, err := c.Create("/s", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	var names []string
	create := func() {
		t.Helper()
		// go-zookeeper checks flags itself: the create goes out raw.
		rc := rawzk.Connect(t, srv.Addr())
		var cr jute.CreateResponse
		if h := rc.Call(jute.OpCreate, &jute.CreateRequest{Path: "/s/n-", Data: []byte("x"), ACL: jute.OpenACLUnsafe, Flags: jute.FlagPersistentSequential64}, &cr); h.Err != jute.OK {
			t.Fatal(h.Err)
		}
		p := cr.Path
		_, st, err := c.Get(p)
		if err != nil || p != fmt.Sprintf("/s/n-%019d", st.Czxid) {
			t.Fatalf("created %q, Stat %+v, %v", p, st, err)
		}
		if len(names) > 0 && p <= names[len(names)-1] {
			t.Fatalf("%q after %q", p, names[len(names)-1])
		}
		names = append(names, p)
	}
	for range 5 {
		create()
	}
	c.Close()
	srv.Restart()
	c, _ = connect(t, srv.Addr(), 10*time.Second)
	for range 5 {
		create()
	}
	kids, _, err := c.Children("/s")
	if err != nil || len(kids) != len(names) {
		t.Fatalf("children %v, %v; want %d", kids, err, len(names))
	}
}

// TestWideEnsemble: on every member of an ensemble with wide, a ClickHouse-style session
// (64-bit xids past 2^31) makes 64-bit sequential nodes: a follower forwards the write
// under its token, the leader names the node with the txn's zxid, and the reply reaches
// the session under its own xid; every member then holds every node.
func TestWideEnsemble(t *testing.T) {
	e := startEnsembleConfig(t, 3, func(c *server.Config) { c.Extensions = ext.Of(ext.Wide) })
	e.waitServing()
	stock := connectTo(t, e.addrs()[0])
	if _, err := stock.Create("/w", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	var made []string
	for i, addr := range e.addrs() {
		r := dial64(t, addr, clickHouseConnect(false))
		f, err := r.frame()
		if err != nil {
			t.Fatalf("member %d (%s): connect: %v", i, e.modes()[i], err)
		}
		var resp jute.ConnectResponse
		if err := jute.Unmarshal(f, &resp); err != nil || resp.ProtocolVersion != jute.ProtocolVersionXID64 {
			t.Fatalf("member %d: connect response %+v, %v", i, resp, err)
		}
		for j := int64(0); j < 3; j++ {
			xid := int64(1)<<33 + j
			r.send(xid, jute.OpCreate, &jute.CreateRequest{Path: "/w/n-", ACL: jute.OpenACLUnsafe, Flags: jute.FlagPersistentSequential64})
			h, d, _ := r.reply(xid)
			var cr jute.CreateResponse
			cr.Decode(d)
			if h.Err != jute.OK || cr.Path != fmt.Sprintf("/w/n-%019d", h.Zxid) {
				t.Fatalf("member %d (%s): create: %+v %q", i, e.modes()[i], h, cr.Path)
			}
			made = append(made, cr.Path)
		}
	}
	for i, addr := range e.addrs() {
		c := connectTo(t, addr)
		if _, err := c.Sync("/w"); err != nil {
			t.Fatal(err)
		}
		kids, _, err := c.Children("/w")
		if err != nil || len(kids) != len(made) {
			t.Fatalf("member %d: children %v, %v; made %v", i, kids, err, made)
		}
	}
}

// TestXID64ShortConnect: with wide, a version-11 request is read in ClickHouse's layout,
// one byte past its length; a client that never sends that byte is closed by the connect
// timeout, as one that never finishes its request.
func TestXID64ShortConnect(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.Extensions = ext.Of(ext.Wide)
		c.ConnectTimeout = 200 * time.Millisecond
	}))
	req := jute.Marshal(&jute.ConnectRequest{ProtocolVersion: jute.ProtocolVersionXID64, TimeOut: 30000, Passwd: make([]byte, 16), HasReadOnly: true})
	r := dial64(t, srv.Addr(), jute.AppendFrame(nil, req))
	if f, err := r.frame(); !errors.Is(err, io.EOF) {
		t.Fatalf("got frame % x, err %v; want the connection closed", f, err)
	}
}
