package server

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// The quota warnings go through a RateLogger as in ZooKeeper: a new message is logged at
// once, repeats are counted and logged with their count when the interval has passed or
// another message comes.
func TestRateLogger(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, nil))
	var r rateLogger
	t0 := time.Unix(1000, 0)
	r.log(l, t0, "A")
	r.log(l, t0.Add(time.Millisecond), "A")
	r.log(l, t0.Add(2*time.Millisecond), "A")
	if n := strings.Count(buf.String(), "\n"); n != 1 {
		t.Fatalf("repeats within the interval logged:\n%s", buf.String())
	}
	r.log(l, t0.Add(3*time.Millisecond), "B")
	out := buf.String()
	if !strings.Contains(out, "msg=A repeated=2") || !strings.Contains(out, "msg=B") {
		t.Fatalf("after another message:\n%s", out)
	}
	buf.Reset()
	r.log(l, t0.Add(time.Second), "B")
	if !strings.Contains(buf.String(), "msg=B repeated=1") {
		t.Fatalf("a repeat after the interval:\n%s", buf.String())
	}
}
