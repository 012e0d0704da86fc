package zk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/faultnet"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

func TestConfigClientAddrs(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"", nil},
		{"version=0", nil},
		// No client part: nothing to connect to.
		{"server.1=127.0.0.1:2888:3888:participant\nversion=100000000", nil},
		{"server.1=10.0.0.1:2888:3888:participant;10.0.0.1:2181\n" +
			"server.2=10.0.0.2:2888:3888:observer;0.0.0.0:2182\n" +
			"server.3=[::1]:2888:3888:participant;[::1]:2183\n" +
			"server.4=[fe80::1]:2888:3888:participant;[::]:2184\n" +
			"server.5=h5:2888:3888|h6:2888:3888:participant;2185\n" +
			"group.1=1:3\nweight.1=1\nversion=100000002",
			[]string{"10.0.0.1:2181", "10.0.0.2:2182", "[::1]:2183", "[fe80::1]:2184", "h5:2185"}},
		// Duplicates and garbage are skipped.
		{"server.1=a:1:2;a:3\nserver.2=a:1:2;a:3\nserver.3=b:1:2;b:x", []string{"a:3"}},
	} {
		if got := configClientAddrs([]byte(tc.text)); !slices.Equal(got, tc.want) {
			t.Errorf("configClientAddrs(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

// TestReconfigRequestNulls: an incremental reconfig sends a null newMembers (ZooKeeper takes
// any non-null one, even empty, for a non-incremental reconfig), unset lists are null, and
// a non-incremental reconfig sends its members even when there are none.
func TestReconfigRequestNulls(t *testing.T) {
	frame := func(r *request) []byte { return r.frame[requestHeaderLen:] }
	str := func(s string) []byte {
		e := jute.Encoder{}
		e.String(s)
		return e.Buf
	}
	null := []byte{0xff, 0xff, 0xff, 0xff}
	long := func(v int64) []byte {
		e := jute.Encoder{}
		e.Long(v)
		return e.Buf
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	a := "server.4=127.0.0.1:1:2;3"
	joining := []string{a, "server.5=127.0.0.1:4:5;6"}
	for _, tc := range []struct {
		name string
		r    *request
		want []byte
	}{
		{"incremental", func() *request {
			r, _ := (&Conn{}).encode(reconfigSpec(joinList(joining), joinList([]string{"1", "2"}), nil, 7), nil)
			return r
		}(), cat(str(a+",server.5=127.0.0.1:4:5;6"), str("1,2"), null, long(7))},
		{"incremental nil lists", func() *request { r, _ := (&Conn{}).encode(reconfigSpec(nil, nil, nil, -1), nil); return r }(),
			cat(null, null, null, long(-1))},
		{"bulk", func() *request {
			nm := a
			r, _ := (&Conn{}).encode(reconfigSpec(nil, nil, &nm, -1), nil)
			return r
		}(), cat(null, null, str(a), long(-1))},
		{"bulk empty", func() *request {
			nm := ""
			r, _ := (&Conn{}).encode(reconfigSpec(nil, nil, &nm, 0x100000003), nil)
			return r
		}(), cat(null, null, str(""), long(0x100000003))},
	} {
		if got := frame(tc.r); !bytes.Equal(got, tc.want) {
			t.Errorf("%s: body %x, want %x", tc.name, got, tc.want)
		}
		var back jute.ReconfigRequest
		d := jute.Decoder{B: frame(tc.r)}
		back.Decode(&d)
		if d.Err() != nil || d.Remaining() != 0 {
			t.Errorf("%s: decoding: %v, %d bytes left", tc.name, d.Err(), d.Remaining())
		}
	}
}

// TestReconfigDisabled: a zkd started without reconfigEnabled answers RECONFIGDISABLED to
// both kinds of reconfig, which the client returns as ErrReconfigDisabled.
func TestReconfigDisabled(t *testing.T) {
	s := zktest.Start(t)
	c := dial(t, s.Addr())
	ctx := testCtx(t)
	if _, _, err := c.Reconfig(ctx, []string{"server.1=127.0.0.1:1:2;3", "server.2=127.0.0.1:4:5;6"}, -1); !errors.Is(err, ErrReconfigDisabled) {
		t.Errorf("Reconfig: %v, want ErrReconfigDisabled", err)
	}
	if _, _, err := c.IncrementalReconfig(ctx, []string{"server.2=127.0.0.1:4:5;6"}, nil, -1); !errors.Is(err, ErrReconfigDisabled) {
		t.Errorf("IncrementalReconfig: %v, want ErrReconfigDisabled", err)
	}
	pipelined := []*Pending[struct{}]{
		goErr(ctx, func(ctx context.Context) error { _, _, err := c.Reconfig(ctx, nil, -1); return err }),
		goErr(ctx, func(ctx context.Context) error {
			_, _, err := c.IncrementalReconfig(ctx, nil, []string{"3"}, -1)
			return err
		}),
	}
	for _, p := range pipelined {
		if _, err := p.Wait(ctx); !errors.Is(err, ErrReconfigDisabled) {
			t.Errorf("pipelined reconfig: %v, want ErrReconfigDisabled", err)
		}
	}
}

// TestWithConfigWatch: a client with WithConfigWatch takes its server list from the
// configuration in /zookeeper/config (written here by the super user, standing in for a
// reconfig): a grown list is taken as it is, and when its own server leaves the list the
// client moves. A proxy gives the one server a second address.
func TestWithConfigWatch(t *testing.T) {
	const superPw = "pw"
	s := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.SuperDigest = DigestID("super", superPw) }))
	ctx := testCtx(t)
	su := dial(t, s.Addr())
	if err := su.AddAuth(ctx, "digest", []byte("super:"+superPw)); err != nil {
		t.Fatal(err)
	}
	p, err := faultnet.Start(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	direct, viaProxy := mustNormalize(t, s.Addr()), mustNormalize(t, p.Addr())

	c := dial(t, direct, WithConfigWatch())
	plain := dial(t, direct)
	servers := func(c *Conn) []string {
		c.mu.Lock()
		defer c.mu.Unlock()
		return slices.Sorted(slices.Values(c.hosts.servers))
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; servers %q, connected to %s", what, servers(c), c.Server())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	set := func(addrs ...string) {
		t.Helper()
		text := ""
		for i, a := range addrs {
			text += fmt.Sprintf("server.%d=127.0.0.1:%d:%d:participant;%s\n", i+1, 2888+i, 3888+i, a)
		}
		text += fmt.Sprintf("version=10000000%d", len(addrs))
		if _, err := su.Set(ctx, ConfigNode, []byte(text), AnyVersion); err != nil {
			t.Fatal(err)
		}
	}

	set(direct, viaProxy)
	want := slices.Sorted(slices.Values([]string{direct, viaProxy}))
	waitFor("the grown list", func() bool { return slices.Equal(servers(c), want) })
	set(viaProxy)
	waitFor("the move to the remaining server", func() bool {
		return slices.Equal(servers(c), []string{viaProxy}) && c.Server() == viaProxy && c.State() == StateConnected
	})
	if _, _, err := c.Exists(ctx, "/"); err != nil {
		t.Fatalf("after the move: %v", err)
	}
	// Without the option the list stays as given.
	if got := servers(plain); !slices.Equal(got, []string{direct}) {
		t.Errorf("client without WithConfigWatch has servers %q", got)
	}
}

func mustNormalize(t *testing.T, addr string) string {
	t.Helper()
	a, err := normalizeHost(addr)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
