package main

import (
	"context"
	"fmt"
	"io"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestErrKind(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{status.Error(codes.ResourceExhausted, "etcdserver: mvcc: database space exceeded"), "ResourceExhausted"},
		{fmt.Errorf("put: %w", status.Error(codes.Unavailable, "connection to 127.0.0.1:2379 lost")), "Unavailable"},
		{fmt.Errorf("put: %w", context.DeadlineExceeded), "timeout"},
		// No gRPC code: named as zkbench names it.
		{fmt.Errorf("put: %w", io.EOF), "connection closed by the server"},
		{status.Error(codes.Unknown, "something"), "rpc error: code = Unknown desc = something"},
	} {
		if got := errKind(c.err); got != c.want {
			t.Errorf("errKind(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

func TestParse(t *testing.T) {
	c, err := parse([]string{"--endpoints", " 127.0.0.1:1, ,127.0.0.1:2", "--clients", "3"}, io.Discard)
	if err != nil || len(c.endpoints) != 2 || c.clients != 3 || c.outstanding != 32 {
		t.Errorf("parse: %+v, %v", c, err)
	}
	for _, args := range [][]string{{"--endpoints", ","}, {"--clients", "0"}, {"--duration", "0s"}, {"extra"}} {
		if _, err := parse(args, io.Discard); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
