package metrics

import "testing"

// TestPerRequestObserversDoNotAllocate: what the server calls on every read and write
// (the per-namespace sets, the latency summaries) allocates nothing once a key exists, so
// an enabled Prometheus provider costs the core no garbage per request.
func TestPerRequestObserversDoNotAllocate(t *testing.T) {
	r := New(Options{})
	path := "/app/some/node"
	r.NamespaceRead(path, 10) // makes the key's summary
	r.NamespaceWrite(path, 10)
	if n := testing.AllocsPerRun(1000, func() {
		r.NamespaceRead(path, 10)
		r.NamespaceWrite(path, 10)
	}); n != 0 {
		t.Errorf("NamespaceRead + NamespaceWrite allocate %.1f times per call", n)
	}
}
