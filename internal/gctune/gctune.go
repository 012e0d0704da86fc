// Package gctune owns the process's garbage-collector settings (GOGC and the memory limit).
// Go's collector lets the heap grow to twice the live data by default; for a server whose
// live data is a large tree that doubling is most of its memory, and for one whose tree is
// small it means a collection every few megabytes of requests. Govern replaces the fixed
// ratio with a headroom proportionate to the live heap, and Pause switches collection off
// while a snapshot loads (nearly everything it allocates stays live).
//
// The settings are process-wide, so this package is the only place that changes them; a
// program opts in to Govern, while Pause and its resume nest safely when several servers in
// one process (tests) recover at once.
package gctune

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Policy sets the headroom: the heap may grow by max(MinHeadroom, Fraction × live heap)
// before the next collection.
type Policy struct {
	MinHeadroom int64
	Fraction    float64
}

// DefaultPolicy keeps memory within about 1.06x the live data for large trees (past 1 GiB
// of live heap) while smaller ones, whose requests make most of the garbage, are collected
// every 64 MiB. The tree holds no pointers per node (internal/datatree), so a collection
// marks a few objects per 256 nodes whatever the tree's size: collecting often costs
// little, and a large headroom would be most of a large tree's memory.
var DefaultPolicy = Policy{MinHeadroom: 64 << 20, Fraction: 1.0 / 16}

var (
	mu       sync.Mutex
	policy   *Policy // nil: not governing; base is returned to after a pause
	base     = 100   // GOGC percent when not governing (read at the first Pause)
	paused   int
	memLimit int64
	hooked   bool // a cycle hook is armed
	runway   bool // GOGC holds a resume's runway until the next cycle: not a base to keep
)

// Govern makes every collection set the next one's target from the policy. It does
// nothing if the GOGC or GOMEMLIMIT environment variable is set: the operator has chosen.
func Govern(p Policy) bool {
	for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
		if _, set := os.LookupEnv(k); set {
			return false
		}
	}
	mu.Lock()
	defer mu.Unlock()
	policy = &p
	if paused == 0 {
		debug.SetGCPercent(percentFor(liveHeap()))
	}
	armLocked()
	return true
}

// Pause stops collection until the returned resume is called (Pauses nest). As a guard,
// the collector runs anyway once the heap has grown by more than growth bytes (a memory
// limit, never above one already set). Resume is idempotent.
func Pause(growth int64) (resume func()) {
	mu.Lock()
	guard := heapObjects() + growth
	if paused == 0 {
		old := debug.SetGCPercent(-1)
		if policy == nil && !runway {
			base = old
		}
		memLimit = debug.SetMemoryLimit(-1)
		debug.SetMemoryLimit(min(memLimit, guard))
	} else {
		// A nested pause (another server recovering in this process) may need more room.
		cur := debug.SetMemoryLimit(-1)
		debug.SetMemoryLimit(min(memLimit, max(cur, guard)))
	}
	paused++
	mu.Unlock()
	var once sync.Once
	return func() { once.Do(unpause) }
}

func unpause() {
	mu.Lock()
	defer mu.Unlock()
	paused--
	if paused > 0 {
		return
	}
	debug.SetMemoryLimit(memLimit)
	// The collector's target comes from the heap it last marked, which is far below what
	// the pause let the heap grow to: with the usual percentage the next collection would
	// start at once, far behind, and make every allocating goroutine help it (a stall just
	// as the server starts serving). Instead give the heap a runway of a quarter of its
	// size; the cycle that ends it sets the target from the real live heap.
	debug.SetGCPercent(runwayPercent(heapObjects(), liveHeap()))
	runway = true
	armLocked()
}

// Release collects now and returns what the collection frees to the operating system, so
// the resident size drops to what is live instead of waiting for the scavenger: for after
// a pause that made much short-lived garbage (a snapshot load decodes every node into
// buffers the tree copies from). The collection marks only objects that hold pointers,
// which zkd's tree keeps to a few per 256 nodes.
func Release() { debug.FreeOSMemory() }

// armLocked makes sure a hook runs after the next collection.
func armLocked() {
	if hooked {
		return
	}
	hooked = true
	s := &sentinel{}
	runtime.SetFinalizer(s, func(*sentinel) { afterCycle() })
}

// sentinel is garbage from birth; its finalizer runs after the collection that finds it.
// It holds a pointer so it is not a tiny allocation (those share blocks and may never be
// finalized).
type sentinel struct{ _ *int }

// runwayPercent is the GOGC percent whose heap goal is about a quarter above now, given the
// heap the last collection marked: the goal is marked × (1 + percent/100).
func runwayPercent(now, marked int64) int {
	marked = max(marked, 4<<20)
	target := now + now/4 + 4<<20
	return int(min(math.MaxInt32, max(10, 100*(target-marked)/marked)))
}

func afterCycle() {
	mu.Lock()
	defer mu.Unlock()
	hooked = false
	runway = false
	if paused > 0 {
		armLocked()
		return
	}
	if policy == nil {
		debug.SetGCPercent(base)
		return
	}
	debug.SetGCPercent(percentFor(liveHeap()))
	armLocked()
}

func percentFor(live int64) int {
	p := policy
	if p == nil {
		return base
	}
	live = max(live, 1<<20)
	headroom := max(p.MinHeadroom, int64(p.Fraction*float64(live)))
	return int(min(10000, max(10, 100*headroom/live)))
}

func liveHeap() int64    { return readUint("/gc/heap/live:bytes") }
func heapObjects() int64 { return readUint("/memory/classes/heap/objects:bytes") }

func readUint(name string) int64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(min(s[0].Value.Uint64(), math.MaxInt64))
}

// Percent reports the current GOGC percent, -1 when collection is off.
func Percent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	v := s[0].Value.Uint64()
	if v > math.MaxInt32 {
		return -1
	}
	return int(v)
}
