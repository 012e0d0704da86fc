package prep

import (
	"slices"
	"testing"
)

func TestJavaHash(t *testing.T) {
	for s, want := range map[string]int32{"": 0, "a": 97, "hello": 99162322, "/ce/lock-0000000003": javaHashRef("/ce/lock-0000000003"), "\U0001F600": 0xD83D*31 + 0xDE00} {
		if got := javaHash(s); got != want {
			t.Errorf("javaHash(%q) = %d, want %d", s, got, want)
		}
	}
}

// javaHashRef is String.hashCode's definition, s[0]*31^(n-1) + ... over ASCII.
func javaHashRef(s string) int32 {
	var h int32
	for i := 0; i < len(s); i++ {
		h = h*31 + int32(s[i])
	}
	return h
}

// TestCloseOrderMatchesZooKeeper: the order ZooKeeper 3.8.0 (JDK 17) deleted these eight
// ephemerals in, created in this order, when their session closed (compat group
// close-session-event-order).
func TestCloseOrderMatchesZooKeeper(t *testing.T) {
	created := []string{"e1", "zz", "a", "q7", "m", "lock-0000000003", "b2", "x"}
	var kept []ephemeral
	for i, n := range created {
		kept = append(kept, ephemeral{"/ce/" + n, int64(i + 2)})
	}
	got := closeOrder(kept, len(kept), nil)
	want := []string{"/ce/q7", "/ce/a", "/ce/zz", "/ce/m", "/ce/b2", "/ce/lock-0000000003", "/ce/x", "/ce/e1"}
	if !slices.Equal(got, want) {
		t.Fatalf("closeOrder = %q\nwant %q", got, want)
	}
	// Outstanding creates join the same buckets; an empty applied set starts at 16.
	if got := closeOrder(nil, 0, created); len(got) != len(created) {
		t.Fatalf("closeOrder of added only = %q", got)
	}
}

func TestTableSizeFor(t *testing.T) {
	for c, want := range map[int]int{0: 1, 1: 1, 2: 2, 3: 4, 5: 8, 11: 16, 16: 16, 17: 32} {
		if got := tableSizeFor(c); got != want {
			t.Errorf("tableSizeFor(%d) = %d, want %d", c, got, want)
		}
	}
}
