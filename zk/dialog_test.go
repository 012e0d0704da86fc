package zk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// logRecorder is a slog.Handler keeping every record.
type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.recs = append(l.recs, r.Clone())
	l.mu.Unlock()
	return nil
}

// failures returns the failed-attempt lines logged, as "level server err".
func (l *logRecorder) failures() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.recs {
		if r.Message != "zk: connection attempt failed" {
			continue
		}
		line := r.Level.String()
		r.Attrs(func(a slog.Attr) bool {
			line += " " + a.Key + "=" + a.Value.String()
			return true
		})
		out = append(out, line)
	}
	return out
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestConnectLogsFailedDials: Connect to a port nothing listens on logs the failed dial at
// once, at Warn, and goes on logging at most one line per server per dialLogEvery however
// fast it retries; its error names the last attempt's failure.
func TestConnectLogsFailedDials(t *testing.T) {
	addr := closedPort(t)
	rec := &logRecorder{}
	var attempts atomic.Int32
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	d := &net.Dialer{}
	dial := func(ctx context.Context, network, a string) (net.Conn, error) {
		if attempts.Add(1) == 30 {
			cancel() // enough fast retries: give up
		}
		return d.DialContext(ctx, network, a)
	}
	start := time.Now()
	_, err := Connect(ctx, addr, WithLogger(slog.New(rec)), WithDialer(dial), WithReconnectBackoff(time.Millisecond, time.Millisecond))
	if err == nil || !errors.Is(err, syscall.ECONNREFUSED) && !strings.Contains(err.Error(), "refused") {
		t.Errorf("Connect to a closed port: %v, want the refused dial as its cause", err)
	}
	if attempts.Load() < 30 {
		t.Fatalf("Connect gave up after %d attempts: %v", attempts.Load(), err)
	}
	lines := rec.failures()
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "WARN server="+addr+" err=") {
		t.Fatalf("failed dials logged %q, want a WARN line for %s", lines, addr)
	}
	// Rate-limited: one line per dialLogEvery for the one server (and this test took less
	// than that, unless the machine stalled).
	if max := int(time.Since(start)/dialLogEvery) + 1; len(lines) > max {
		t.Errorf("%d attempts logged %d lines in %v, want at most %d: %q", attempts.Load(), len(lines), time.Since(start), max, lines)
	}
}

// TestDialLogRateLimit checks the limiter on a fake clock: the first failure per server
// logs, the following ones within dialLogEvery are counted into the next line, and a
// connection resets it.
func TestDialLogRateLimit(t *testing.T) {
	rec := &logRecorder{}
	log := slog.New(rec)
	now := time.Unix(1000, 0)
	d := &dialLog{now: func() time.Time { return now }}
	boom := errors.New("refused")
	d.failed(log, "a:1", boom)
	d.failed(log, "b:1", boom)
	for range 5 {
		now = now.Add(dialLogEvery / 10)
		d.failed(log, "a:1", boom)
	}
	now = now.Add(dialLogEvery)
	d.failed(log, "a:1", boom)
	d.reset()
	d.failed(log, "a:1", boom)
	want := []string{
		"WARN server=a:1 err=refused",
		"WARN server=b:1 err=refused",
		"WARN server=a:1 err=refused unlogged_failures=5",
		"WARN server=a:1 err=refused",
	}
	if got := rec.failures(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("logged %q, want %q", got, want)
	}
}

// TestReconnectFailuresLoggedAndStates: when the server goes away, the client announces
// Disconnected once (as Java's client, whose event thread drops repeated states), stays
// Disconnected while its redials fail, logs them, and announces Connected when one succeeds.
func TestReconnectFailuresLoggedAndStates(t *testing.T) {
	srv := startZKD(t)
	rec := &logRecorder{}
	var refuse atomic.Bool
	var mu sync.Mutex
	var live net.Conn
	d := &net.Dialer{}
	dial := func(ctx context.Context, network, a string) (net.Conn, error) {
		if refuse.Load() {
			return nil, fmt.Errorf("dial %s: %w", a, syscall.ECONNREFUSED)
		}
		nc, err := d.DialContext(ctx, network, a)
		mu.Lock()
		live = nc
		mu.Unlock()
		return nc, err
	}
	c, err := Connect(testCtx(t), srv.Addr(), WithLogger(slog.New(rec)), WithDialer(dial), WithReconnectBackoff(time.Millisecond, 10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	states := recordStates(c)
	states.waitFor(t, StateConnected, 1)

	refuse.Store(true)
	mu.Lock()
	live.Close()
	mu.Unlock()
	states.waitFor(t, StateDisconnected, 1)
	eventually(t, "a failed redial logged", func() error {
		if len(rec.failures()) == 0 {
			return errors.New("no line yet")
		}
		return nil
	})
	if st := c.State(); st != StateDisconnected {
		t.Errorf("State() while redials fail = %v, want %v", st, StateDisconnected)
	}
	refuse.Store(false)
	states.waitFor(t, StateConnected, 2)
	if got := states.states(); fmt.Sprint(got) != fmt.Sprint([]State{StateConnected, StateDisconnected, StateConnected}) {
		t.Errorf("session events %v, want Connected, Disconnected, Connected", got)
	}
}
