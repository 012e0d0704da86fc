package server

import (
	"io"
	"log/slog"
	"testing"
)

// BenchmarkCoreStatsStep is the step a scrape (or mntr) takes on the core goroutine, on a
// standalone server with 1,000 sessions.
func BenchmarkCoreStatsStep(b *testing.B) {
	s, err := New(Config{DataDir: b.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.txlog.Close() })
	for id := range int64(1000) {
		s.sessions[id+1] = &clientSession{id: id + 1, valid: true}
	}
	b.ReportAllocs()
	for b.Loop() {
		st := adminBackend{s: s}.serverStats()
		if st.GlobalSessions != 1000 {
			b.Fatal(st.GlobalSessions)
		}
	}
}
