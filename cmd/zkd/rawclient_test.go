package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/zkd-io/zkd/jute"
)

type rawSession struct {
	nc net.Conn
}

// dialRawSession opens a session with a 30 s timeout that sends no pings.
func dialRawSession(t *testing.T, addr string) *rawSession {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	r := &rawSession{nc: nc}
	if err := r.write(jute.Marshal(&jute.ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16), HasReadOnly: true})); err != nil {
		t.Fatal(err)
	}
	b, err := r.read(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var resp jute.ConnectResponse
	if err := jute.Unmarshal(b, &resp); err != nil || resp.SessionID == 0 {
		t.Fatalf("connect: %+v %v", resp, err)
	}
	return r
}

func (r *rawSession) write(b []byte) error {
	var l [4]byte
	binary.BigEndian.PutUint32(l[:], uint32(len(b)))
	r.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := r.nc.Write(append(l[:], b...))
	return err
}

func (r *rawSession) read(timeout time.Duration) ([]byte, error) {
	r.nc.SetReadDeadline(time.Now().Add(timeout))
	var l [4]byte
	if _, err := io.ReadFull(r.nc, l[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(l[:]))
	_, err := io.ReadFull(r.nc, b)
	return b, err
}

// syncAndGet pipelines sync(path) and getData(path) and returns the data read.
func (r *rawSession) syncAndGet(path string) (string, error) {
	var e jute.Encoder
	(&jute.RequestHeader{Xid: 1, Type: jute.OpSync}).Encode(&e)
	(&jute.SyncRequest{Path: path}).Encode(&e)
	if err := r.write(e.Buf); err != nil {
		return "", err
	}
	e = jute.Encoder{}
	(&jute.RequestHeader{Xid: 2, Type: jute.OpGetData}).Encode(&e)
	(&jute.GetDataRequest{Path: path}).Encode(&e)
	if err := r.write(e.Buf); err != nil {
		return "", err
	}
	for {
		b, err := r.read(30 * time.Second)
		if err != nil {
			return "", err
		}
		d := jute.NewDecoder(b)
		var h jute.ReplyHeader
		h.Decode(d)
		if h.Xid != 2 {
			if h.Err != jute.OK {
				return "", fmt.Errorf("sync: %w", h.Err)
			}
			continue
		}
		if h.Err != jute.OK {
			return "", h.Err
		}
		var gd jute.GetDataResponse
		gd.Decode(d)
		return string(gd.Data), d.Err()
	}
}
