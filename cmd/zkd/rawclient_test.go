package main

import (
	"testing"

	"github.com/zkd-io/zkd/internal/rawzk"
	"github.com/zkd-io/zkd/jute"
)

type rawSession struct{ c *rawzk.Client }

// dialRawSession opens a session with a 30 s timeout that sends no pings.
func dialRawSession(t *testing.T, addr string) *rawSession {
	t.Helper()
	c := rawzk.Dial(t, addr)
	resp, err := c.Handshake(&jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16), HasReadOnly: true})
	if err != nil || resp.SessionID == 0 {
		t.Fatalf("connect: %+v %v", resp, err)
	}
	return &rawSession{c: c}
}

// syncAndGet pipelines sync(path) and getData(path) and returns the data read.
func (r *rawSession) syncAndGet(path string) (string, error) {
	syncXid := r.c.Send(jute.OpSync, &jute.SyncRequest{Path: path})
	getXid := r.c.Send(jute.OpGetData, &jute.GetDataRequest{Path: path})
	if h, err := r.c.Reply(syncXid, &jute.SyncResponse{}); err != nil {
		return "", err
	} else if h.Err != jute.OK {
		return "", h.Err
	}
	var gd jute.GetDataResponse
	h, err := r.c.Reply(getXid, &gd)
	if err != nil {
		return "", err
	}
	if h.Err != jute.OK {
		return "", h.Err
	}
	return string(gd.Data), nil
}
