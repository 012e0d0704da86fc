package gctune

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// sink keeps allocations from being optimized away.
var sink []byte

func waitPercent(t *testing.T, want func(int) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !want(Percent()) {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC percent %d: want %s", Percent(), what)
		}
		runtime.GC() // the hook runs after a cycle, in the finalizer goroutine
		time.Sleep(time.Millisecond)
	}
}

func TestPauseStopsCollectionAndResumeRestores(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	resume := Pause(1 << 40)
	if p := Percent(); p != -1 {
		t.Fatalf("paused: GOGC %d, want off", p)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < 64; i++ { // 64 MiB of garbage: many cycles' worth at GOGC=100
		sink = make([]byte, 1<<20)
	}
	runtime.ReadMemStats(&after)
	if after.NumGC != before.NumGC {
		t.Errorf("%d collections while paused", after.NumGC-before.NumGC)
	}
	inner := Pause(1 << 40)
	inner()
	if p := Percent(); p != -1 {
		t.Fatalf("after a nested resume: GOGC %d, want still off", p)
	}
	resume()
	resume() // idempotent
	if p := Percent(); p <= 100 {
		t.Errorf("just resumed: GOGC %d, want a runway above the old 100", p)
	}
	waitPercent(t, func(p int) bool { return p == 100 }, "100 again after a cycle")
}

func TestGovernSetsHeadroomFromLiveHeap(t *testing.T) {
	defer func() {
		mu.Lock()
		policy = nil
		mu.Unlock()
		debug.SetGCPercent(100)
	}()
	unsetenv(t, "GOMEMLIMIT")
	t.Setenv("GOGC", "")
	if Govern(DefaultPolicy) {
		t.Fatal("governing although GOGC is set")
	}
	// t.Setenv cannot unset; clear it for this process for the rest of the test.
	unsetenv(t, "GOGC")
	t.Setenv("GOMEMLIMIT", "1GiB")
	if Govern(DefaultPolicy) {
		t.Fatal("governing although GOMEMLIMIT is set")
	}
	unsetenv(t, "GOMEMLIMIT")
	if !Govern(Policy{MinHeadroom: 8 << 20, Fraction: 0.5}) {
		t.Fatal("Govern refused")
	}
	// A live heap of about 64 MiB: the fraction decides, 50%.
	// In a package variable, so it stays live until the test drops it.
	liveSink = make([][]byte, 64)
	for i := range liveSink {
		liveSink[i] = make([]byte, 1<<20)
	}
	waitPercent(t, func(p int) bool { return p >= 45 && p <= 55 }, "about 50 with 64 MiB live")
	liveSink = nil
	// A small live heap: the minimum headroom decides, far above 100.
	waitPercent(t, func(p int) bool { return p > 150 }, "above 150 with little live")
}

var liveSink [][]byte
