package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
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
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	if goal, now := int64(s[0].Value.Uint64()), heapObjects(); goal <= now {
		t.Errorf("just resumed: heap goal %d MiB, not above the heap's %d MiB", goal>>20, now>>20)
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

// TestRepeatedPauseKeepsBase: a second recovery that starts before any collection ended the
// first one's runway must not take the runway for the base to return to.
func TestRepeatedPauseKeepsBase(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	r1 := Pause(1 << 40)
	for i := 0; i < 64; i++ {
		sink = make([]byte, 1<<20)
	}
	r1()
	r2 := Pause(1 << 40)
	r2()
	waitPercent(t, func(p int) bool { return p == 100 }, "100 again after a cycle")
}

// TestRunwayGoal: after a pause during which a collection ran (the memory limit's guard),
// the heap goal is about a quarter above the heap, not twice it.
func TestRunwayGoal(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	r := Pause(1 << 40)
	liveSink = make([][]byte, 256)
	for i := range liveSink {
		liveSink[i] = make([]byte, 1<<20)
	}
	runtime.GC()
	now := heapObjects()
	r()
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	goal := int64(s[0].Value.Uint64())
	if want := now + now/4 + 4<<20; goal > want*11/10 || goal < now {
		t.Errorf("heap %d MiB: goal %d MiB, want about %d MiB", now>>20, goal>>20, want>>20)
	}
	liveSink = nil
}

// TestReleaseReturnsGarbage: after Release, memory that was garbage is no longer counted
// as heap objects.
func TestReleaseReturnsGarbage(t *testing.T) {
	resume := Pause(1 << 30)
	var keep [][]byte
	for i := 0; i < 64; i++ {
		b := make([]byte, 1<<20)
		if i%8 == 0 {
			keep = append(keep, b)
		}
	}
	before := heapObjects()
	resume()
	Release()
	after := heapObjects()
	if after > before-32<<20 {
		t.Errorf("heap objects %d before Release, %d after: the 56 MiB of garbage was not freed", before, after)
	}
	runtime.KeepAlive(keep)
}
