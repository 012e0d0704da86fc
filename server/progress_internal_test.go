package server

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"testing"
)

func TestRecoveryProgress(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(slog.New(slog.NewTextHandler(&buf, nil)), "replaying the txn log", "fromZxid", "0x0")
	p.every = 0
	for n := 1; n <= 3*4096+5; n++ {
		p.tick(n, func() []any { return []any{"txns", n} })
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d reports, want 3 (one per 4096 txns):\n%s", len(lines), buf.String())
	}
	for i, l := range lines {
		if !strings.Contains(l, "replaying the txn log") || !strings.Contains(l, "fromZxid=0x0") ||
			!strings.Contains(l, "txns="+strconv.Itoa((i+1)*4096)) || !strings.Contains(l, "elapsed=") {
			t.Errorf("report %d: %s", i, l)
		}
	}
	buf.Reset()
	q := newProgress(slog.New(slog.NewTextHandler(&buf, nil)), "loading snapshot")
	for n := 1; n <= 5*4096; n++ {
		q.tick(n, func() []any { return []any{"nodes", n} })
	}
	if buf.Len() != 0 {
		t.Fatalf("reported before progressEvery passed: %s", buf.String())
	}
}
