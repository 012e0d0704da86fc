package main

import (
	"testing"

	"github.com/zkd-io/zkd/internal/testing/rawzk"
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
	syncXid, getXid, err := r.sendSyncAndGet(path)
	if err != nil {
		return "", err
	}
	return r.syncAndGetReplies(syncXid, getXid)
}

// sendSyncAndGet sends sync(path) and getData(path). The server may close the connection
// at any point (a leader that finds it lost its quorum steps down): that is an error
// outcome, like an error reply.
func (r *rawSession) sendSyncAndGet(path string) (syncXid, getXid int32, err error) {
	if syncXid, err = r.c.TrySend(jute.OpSync, &jute.SyncRequest{Path: path}); err != nil {
		return 0, 0, err
	}
	getXid, err = r.c.TrySend(jute.OpGetData, &jute.GetDataRequest{Path: path})
	return syncXid, getXid, err
}

// syncAndGetReplies reads the replies of sendSyncAndGet and returns the data read.
func (r *rawSession) syncAndGetReplies(syncXid, getXid int32) (string, error) {
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
