package server_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zk"
)

// TestReadOnlyModeZkClient: zkd's client connects read-only to a partitioned member, reads,
// is refused writes, and finds a read-write server by itself once the quorum is back.
func TestReadOnlyModeZkClient(t *testing.T) {
	e := startEnsembleConfig(t, 3, func(c *server.Config) { c.ReadOnlyMode = true })
	e.waitServing()
	survivor := (e.leaderIndex() + 1) % 3
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	quietLog := zk.WithLogger(slog.New(slog.DiscardHandler))

	w, err := zk.Connect(ctx, e.members[survivor].cfg.ListenAddr, quietLog)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Create(ctx, "/ro", []byte("data"), zk.WorldACL(zk.PermAll), 0); err != nil {
		t.Fatal(err)
	}
	w.Close()
	for i := range e.members {
		if i != survivor {
			e.stop(i)
		}
	}
	waitFor(t, "the survivor to serve read-only", func() bool { return e.members[survivor].srv.Mode() == "read-only" })

	// Without WithReadOnly the client gets no session.
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	if c, err := zk.Connect(short, e.members[survivor].cfg.ListenAddr, quietLog); err == nil {
		c.Close()
		t.Fatal("read-write client connected to a read-only server")
	}
	cancelShort()

	c, err := zk.Connect(ctx, strings.Join(e.addrs(), ","), zk.WithReadOnly(), zk.WithSessionTimeout(10*time.Second), quietLog)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if st := c.State(); st != zk.StateConnectedReadOnly {
		t.Fatalf("state %v, want ConnectedReadOnly", st)
	}
	roSession := c.SessionID()
	if d, _, err := c.Get(ctx, "/ro"); err != nil || string(d) != "data" {
		t.Fatalf("read in read-only mode: %q %v", d, err)
	}
	if _, err := c.Create(ctx, "/w", nil, zk.WorldACL(zk.PermAll), 0); !errors.Is(err, zk.ErrNotReadOnly) {
		t.Fatalf("create in read-only mode: %v, want ErrNotReadOnly", err)
	}

	for i := range e.members {
		if i != survivor {
			e.start(i)
		}
	}
	waitFor(t, "the client to reach a read-write server", func() bool { return c.State() == zk.StateConnected })
	if c.SessionID() == roSession {
		t.Fatalf("read-write session kept the read-only session's id 0x%x", roSession)
	}
	var lastErr error
	waitFor(t, "a write to succeed", func() bool {
		_, lastErr = c.Create(ctx, "/w", nil, zk.WorldACL(zk.PermAll), 0)
		return lastErr == nil || errors.Is(lastErr, zk.ErrNodeExists)
	})
}

// TestReadOnlyModeClientHuntsReadWrite: the read-only member stays cut off while the two
// others form a quorum; the client, still served read-only, finds them by asking "isro".
func TestReadOnlyModeClientHuntsReadWrite(t *testing.T) {
	e := startEnsembleConfig(t, 3, func(c *server.Config) { c.ReadOnlyMode = true })
	e.waitServing()
	survivor := (e.leaderIndex() + 1) % 3
	for i := range e.members {
		if i != survivor {
			e.stop(i)
		}
	}
	waitFor(t, "the survivor to serve read-only", func() bool { return e.members[survivor].srv.Mode() == "read-only" })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	roAddr := e.members[survivor].cfg.ListenAddr
	c, err := zk.Connect(ctx, strings.Join(e.addrs(), ","), zk.WithReadOnly(), zk.WithSessionTimeout(10*time.Second),
		zk.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if st, srv := c.State(), c.Server(); st != zk.StateConnectedReadOnly || srv != roAddr {
		t.Fatalf("state %v on %s, want ConnectedReadOnly on %s", st, srv, roAddr)
	}

	// The survivor hears no election traffic from now on.
	e.net.mu.Lock()
	e.net.down[e.members[survivor].cfg.ServerID] = true
	e.net.mu.Unlock()
	for i := range e.members {
		if i != survivor {
			e.start(i)
		}
	}
	waitFor(t, "the client to move to a read-write server", func() bool {
		return c.State() == zk.StateConnected && c.Server() != roAddr
	})
	if m := e.members[survivor].srv.Mode(); m != "read-only" {
		t.Fatalf("survivor is %q, want still read-only", m)
	}
	var lastErr error
	waitFor(t, "a write to succeed", func() bool {
		_, lastErr = c.Create(ctx, "/w", nil, zk.WorldACL(zk.PermAll), 0)
		return lastErr == nil || errors.Is(lastErr, zk.ErrNodeExists)
	})
}
