package zk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/jute"
)

// WithXID64 asks for 64-bit xids (ClickHouse Keeper's protocol version 11) from every
// server that offers them, zkd with the wide extension: a session's request numbers then
// never wrap. On a server that does not offer them (Apache ZooKeeper, zkd without the
// extension) the client uses ZooKeeper's 32-bit xids, as without the option, and says so
// at Info; XID64 reports which the current connection uses.
//
// A version-11 request is only sent to a server known to take it, because a server that
// does not know the version reads the request in ZooKeeper's layout and misreads it: on the
// first connection to each server the client connects as usual, reads the server's
// capability node before anything else, and, when the server enables wide, moves the
// session at once onto a version-11 connection to the same server. Later connections to
// that server ask for version 11 directly; one answered otherwise is dropped and made again
// with ZooKeeper's version.
func WithXID64() Option { return func(c *config) { c.xid64 = true } }

// XID64 reports whether the current (or last) connection uses 64-bit xids.
func (c *Conn) XID64() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.w != nil && c.w.xid64
}

// wideState is what a server was found to offer, for WithXID64.
type wideState int8

const (
	wideUnknown wideState = iota // not asked, or asked and not offered: ask again
	wideYes                      // enables wide: ask for version 11 directly
	wideBroken                   // asking failed: do not ask again (no connection loop)
)

// errXID64Refused: a server asked for version 11 answered another version.
var errXID64Refused = errors.New("zk: server did not grant protocol version 11 (64-bit xids)")

func (c *Conn) wideState(addr string) wideState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wideAt[addr]
}

func (c *Conn) setWideState(addr string, st wideState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wideAt == nil {
		c.wideAt = make(map[string]wideState)
	}
	c.wideAt[addr] = st
}

// connectXID64 is connectTo for WithXID64.
func (c *Conn) connectXID64(ctx context.Context, addr string, req *jute.ConnectRequest) (*wire, error) {
	if c.wideState(addr) == wideYes {
		w, err := c.connectTo(ctx, addr, req, true)
		if err == nil || ctx.Err() != nil || !versionRefused(err) {
			return w, err
		}
		c.log.Info("zk: server did not take a version-11 connection; connecting with 32-bit xids", "server", addr, "err", err)
		c.setWideState(addr, wideUnknown)
	}
	w, err := c.connectTo(ctx, addr, req, false)
	if err != nil || c.wideState(addr) == wideBroken || w.connResp.ReadOnly {
		// A read-only server's session is local to it: not moved.
		return w, err
	}
	has, err := c.serverHasWide(ctx, w)
	if err != nil {
		w.nc.Close()
		if ctx.Err() == nil {
			// Not asked again: a server that closes on the read (one enforcing an auth
			// scheme the session has yet to add) would do so at every attempt.
			c.setWideState(addr, wideBroken)
		}
		return nil, fmt.Errorf("reading the capabilities of %s: %w", addr, err)
	}
	if !has {
		c.log.Info("zk: server does not offer 64-bit xids (wide extension); using 32-bit xids", "server", addr)
		return w, nil
	}
	// The session is the one w made or resumed: a failure below leaves it to the next
	// attempt to resume.
	resp := w.connResp
	c.mu.Lock()
	c.sessionID, c.passwd, c.seenRW = resp.SessionID, resp.Passwd, true
	c.mu.Unlock()
	r64 := *req
	r64.SessionID, r64.Passwd = resp.SessionID, resp.Passwd
	w64, err := c.connectTo(ctx, addr, &r64, true)
	w.nc.Close()
	if err != nil {
		if ctx.Err() == nil && versionRefused(err) {
			c.setWideState(addr, wideBroken)
			c.log.Warn("zk: server enables wide but refused a version-11 connection; using 32-bit xids with it", "server", addr, "err", err)
		}
		return nil, err
	}
	c.setWideState(addr, wideYes)
	return w64, nil
}

// versionRefused reports whether a version-11 attempt failed for its version: another
// version answered, or the connection closed unanswered (zkd without the extension cannot
// read the request). Anything else (a server down, an expired session, refused
// credentials) is not about the version.
func versionRefused(err error) bool {
	return errors.Is(err, errXID64Refused) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// serverHasWide reads the capability node on w, before the loops run (as SASL does), and
// reports whether the server enables wide.
func (c *Conn) serverHasWide(ctx context.Context, w *wire) (bool, error) {
	if dl, ok := ctx.Deadline(); ok {
		w.nc.SetDeadline(dl)
		defer w.nc.SetDeadline(time.Time{})
	}
	c.mu.Lock()
	xid := c.nextXidLocked(w)
	c.mu.Unlock()
	r := newRequest(jute.OpGetData, ext.CapabilitiesNode, &jute.GetDataRequest{Path: ext.CapabilitiesNode}, nil, 0)
	r.setXid(xid, w.xid64)
	if _, err := w.nc.Write(r.frame); err != nil {
		return false, err
	}
	frame, err := w.readFrame()
	if err != nil {
		return false, err
	}
	d := jute.Decoder{B: frame}
	h := w.decodeHeader(&d)
	switch {
	case d.Err() != nil || h.Xid != xid:
		return false, fmt.Errorf("%w: reply xid %d to capabilities read %d", errProtocol, h.Xid, xid)
	case h.Err == ErrNoNode:
		return false, nil
	case h.Err != jute.OK:
		return false, h.Err
	}
	if h.Zxid > 0 {
		c.lastZxid.Store(h.Zxid)
	}
	var gd jute.GetDataResponse
	gd.Decode(&d)
	if d.Err() != nil {
		return false, fmt.Errorf("%w: capabilities reply: %w", ErrMarshallingError, d.Err())
	}
	caps := parseCapabilities(gd.Data)
	return caps.Has(ext.Wide), nil
}
