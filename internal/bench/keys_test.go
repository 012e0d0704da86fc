package bench

import (
	"slices"
	"strings"
	"testing"
)

func TestKeyPaths(t *testing.T) {
	keys := keyPaths("/zkbench/keys", 1000)
	seen := map[string]bool{}
	for i, k := range keys {
		if len(k) != len("/zkbench/keys/00000000") {
			t.Fatalf("key %d = %q: not fixed width", i, k)
		}
		if k != keyPath("/zkbench/keys", i) {
			t.Fatalf("keyPaths[%d] = %q, keyPath = %q", i, k, keyPath("/zkbench/keys", i))
		}
		seen[k] = true
	}
	if len(seen) != len(keys) {
		t.Errorf("%d distinct keys of %d", len(seen), len(keys))
	}
	if !slices.IsSorted(keys) {
		t.Error("keys do not sort in index order")
	}
}

func TestCreatePathsUnique(t *testing.T) {
	seen := map[string]bool{}
	for s := range 20 {
		for seq := range int64(500) {
			p := createPath("/d", s, seq)
			if seen[p] {
				t.Fatalf("duplicate create path %q", p)
			}
			seen[p] = true
		}
	}
	// Large session and sequence numbers stay distinct too.
	if createPath("/d", 1, 10000000000) == createPath("/d", 11, 0) {
		t.Error("session and sequence run into each other")
	}
}

func TestZnodePath(t *testing.T) {
	for _, i := range []int{0, 1, 999999, 9999999999} {
		p := znodePath(i)
		if len(p) != 16 || !strings.HasPrefix(p, znodePrefix) {
			t.Errorf("znodePath(%d) = %q, want 16 bytes under %s", i, p, znodePrefix)
		}
	}
	if znodePath(1) == znodePath(10) {
		t.Error("znode paths collide")
	}
}

func TestPickKeyDeterministicAndInRange(t *testing.T) {
	draw := func(seed uint64, session int) []int {
		rng := sessionRNG(seed, session)
		out := make([]int, 2000)
		for i := range out {
			out[i] = pickKey(rng, 100)
		}
		return out
	}
	a, b := draw(7, 3), draw(7, 3)
	if !slices.Equal(a, b) {
		t.Error("same seed and session gave different keys")
	}
	if slices.Equal(a, draw(7, 4)) || slices.Equal(a, draw(8, 3)) {
		t.Error("different sessions or seeds gave the same keys")
	}
	counts := make([]int, 100)
	for _, k := range a {
		if k < 0 || k >= 100 {
			t.Fatalf("key %d outside [0,100)", k)
		}
		counts[k]++
	}
	// 2000 uniform draws over 100 keys: every key is drawn (the chance that one is not is
	// about 100 * 0.99^2000, 2e-7), and none absurdly often.
	for k, c := range counts {
		if c == 0 || c > 60 {
			t.Errorf("key %d drawn %d times of 2000", k, c)
		}
	}
}

func TestAncestorsAndPayload(t *testing.T) {
	if got := ancestors("/a/b/c"); !slices.Equal(got, []string{"/a", "/a/b", "/a/b/c"}) {
		t.Errorf("ancestors = %v", got)
	}
	if got := ancestors("/"); len(got) != 0 {
		t.Errorf("ancestors(/) = %v", got)
	}
	p := payload(30)
	if len(p) != 30 || p[0] != 'a' || p[26] != 'a' || p[25] != 'z' {
		t.Errorf("payload = %q", p)
	}
}
