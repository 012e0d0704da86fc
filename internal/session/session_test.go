package session

import (
	"encoding/hex"
	"slices"
	"testing"
)

// Session id / password pairs from the ConnectResponses in /work/shared/protocol/golden
// (Apache ZooKeeper 3.8.0).
var goldenPasswords = []struct {
	id     int64
	passwd string
	where  string
}{
	{0x100000a4ed70000, "3bc14167ac7993231122ac9fd50f345e", "01 connection 1"},
	{0x100000a4ed70002, "157f4d676ce2d499279cdd482efe0ac4", "02 connection 1"},
	{0x100000a4ed70003, "28a047670c2eb4de1cdf447402871f91", "03 connection 1"},
	{0x100000a4ed70004, "87452a672ca81037e62d494d24338692", "03 connection 2"},
	{0x100000a4ed70005, "9a662467ccf3ef7bdb70b078f7bb9a5f", "03"},
	{0x100000a4ed70006, "61033667ec1052adfca77af67c215df8", "03"},
}

func TestPasswordGolden(t *testing.T) {
	for _, g := range goldenPasswords {
		p := Password(g.id)
		if got := hex.EncodeToString(p[:]); got != g.passwd {
			t.Errorf("Password(%#x) = %s, want %s (%s)", g.id, got, g.passwd, g.where)
		}
	}
}

// Vectors from java.util.Random on OpenJDK 17 (the generatePasswd formula), covering
// negative ids and the fact that Random keeps only the low 48 bits of its seed.
func TestPasswordJavaVectors(t *testing.T) {
	for _, v := range []struct {
		id     int64
		passwd string
	}{
		{-1, "20f62cb5648dc2d771471c8a2486a9ee"},
		{-9223372036854775807, "054cc74a37327db215e702e20c73f005"},
		{-144113937075959381, "237710bc62d77989a42e8da77022789d"},
		{1, "054cc74a37327db215e702e20c73f005"},
		{3007405056, "60b420bb3851d9d47acb933dbe70399b"},
	} {
		p := Password(v.id)
		if got := hex.EncodeToString(p[:]); got != v.passwd {
			t.Errorf("Password(%d) = %s, want %s", v.id, got, v.passwd)
		}
	}
}

func TestIDGenerator(t *testing.T) {
	// golden/01: standalone (server id 1) ids 0x100000a4ed70000, …0001, …; the 40 time bits
	// are 0xa4ed7 = the monotonic clock at start-up.
	g := NewIDGenerator(1, 0xa4ed7)
	for i, want := range []int64{0x100000a4ed70000, 0x100000a4ed70001, 0x100000a4ed70002} {
		if got := g.Next(); got != want {
			t.Fatalf("id %d = %#x, want %#x", i, got, want)
		}
	}
	// Only the low 40 bits of the clock are used.
	if got := NewIDGenerator(1, 0x7700000a4ed7).Next(); got != 0x100000a4ed70000 {
		t.Fatalf("high clock bits leaked: %#x", got)
	}
	// Server id 2 with clock 0 starts at 2<<56.
	if got := NewIDGenerator(2, 0).Next(); got != 2<<56 {
		t.Fatalf("server 2: %#x", got)
	}
}

func TestIDGeneratorSkipsReserved(t *testing.T) {
	// Server id 0 and clock 0 would start at 0.
	g := NewIDGenerator(0, 0)
	if got := g.Next(); got != 1 {
		t.Fatalf("first id = %#x, want 1 (0 skipped)", got)
	}
	// Server id 128 and clock 0 would start at 0x8000000000000000 (the container marker).
	g = NewIDGenerator(128, 0)
	if got := uint64(g.Next()); got != 1<<63+1 {
		t.Fatalf("first id = %#x, want 0x8000000000000001", got)
	}
}

func TestIDGeneratorObserve(t *testing.T) {
	g := NewIDGenerator(1, 0x1000)
	first := g.Next()
	g.Observe(first + 10)      // ours, ahead: skip past it
	g.Observe(first - 5)       // ours, behind: no effect
	g.Observe(2<<56 | 0xFFFFF) // another server's prefix: no effect
	if got := g.Next(); got != first+11 {
		t.Fatalf("after Observe: %#x, want %#x", got, first+11)
	}
	// High-bit (negative) ids compare as unsigned.
	g = NewIDGenerator(200, 0x10)
	a := g.Next()
	g.Observe(a + 3)
	if got := g.Next(); got != a+4 {
		t.Fatalf("negative ids: %#x, want %#x", got, a+4)
	}
}

func TestNegotiate(t *testing.T) {
	tests := []struct{ req, min, max, want int32 }{
		{3000, 4000, 40000, 4000}, // golden/02: 3000 asked, 4000 given
		{10000, 4000, 40000, 10000},
		{100000, 4000, 40000, 40000},
		{0, 4000, 40000, 4000},
		{-5, 4000, 40000, 4000},
		{5000, 6000, 3000, 3000}, // min > max: max wins, as in ZooKeeper
	}
	for _, tc := range tests {
		if got := Negotiate(tc.req, tc.min, tc.max); got != tc.want {
			t.Errorf("Negotiate(%d, %d, %d) = %d, want %d", tc.req, tc.min, tc.max, got, tc.want)
		}
	}
}

func TestDeadlineRounding(t *testing.T) {
	tests := []struct {
		now     int64
		timeout int32
		want    int64
	}{
		{0, 4000, 6000}, // an exact multiple goes to the next bucket (roundToNextInterval)
		{1, 4000, 6000},
		{1999, 4000, 6000},
		{2000, 4000, 8000},
		{2001, 3999, 8000},
		{1000, 10000, 12000},
	}
	for _, tc := range tests {
		tr := NewTracker(2000)
		tr.Add(1, tc.timeout, tc.now)
		b := tr.Buckets()
		if len(b) != 1 || b[0].Deadline != tc.want {
			t.Errorf("now %d timeout %d: buckets %v, want deadline %d", tc.now, tc.timeout, b, tc.want)
		}
	}
}

func TestTrackerExpiry(t *testing.T) {
	tr := NewTracker(2000)
	tr.Add(3, 4000, 0) // deadline 6000
	tr.Add(1, 4000, 0) // 6000
	tr.Add(2, 8000, 0) // 10000
	if d, ok := tr.NextDeadline(); !ok || d != 6000 {
		t.Fatalf("NextDeadline = %d %v", d, ok)
	}
	if got := tr.Expired(5999); got != nil {
		t.Fatalf("Expired(5999) = %v", got)
	}
	// A touch at 3000 moves session 3 to 3000+4000 -> 8000.
	if !tr.Touch(3, 3000) {
		t.Fatal("Touch(3) failed")
	}
	if got := tr.Expired(6000); !slices.Equal(got, []int64{1}) {
		t.Fatalf("Expired(6000) = %v, want [1]", got)
	}
	if !tr.IsClosing(1) || !tr.Exists(1) || tr.Touch(1, 6000) {
		t.Fatal("an expired session must stay tracked, closing and untouchable")
	}
	if got := tr.Expired(6000); got != nil {
		t.Fatalf("session returned twice: %v", got)
	}
	// Several buckets due at once come out by deadline, then id.
	tr.Add(0, 4000, 0) // 6000, already due
	if got := tr.Expired(20000); !slices.Equal(got, []int64{0, 3, 2}) {
		t.Fatalf("Expired(20000) = %v, want [0 3 2]", got)
	}
	if _, ok := tr.NextDeadline(); ok {
		t.Fatal("buckets left after everything expired")
	}
	for _, id := range []int64{0, 1, 2, 3} {
		if !tr.Remove(id) {
			t.Fatalf("Remove(%d) failed", id)
		}
	}
	if tr.Len() != 0 || tr.Remove(1) {
		t.Fatal("tracker not empty after Remove")
	}
}

func TestTrackerClosing(t *testing.T) {
	tr := NewTracker(1000)
	tr.Add(1, 5000, 0)
	tr.Add(2, 5000, 0)
	if !tr.SetClosing(1) || tr.SetClosing(99) {
		t.Fatal("SetClosing result wrong")
	}
	if tr.Touch(1, 100) || tr.TouchTimeout(1, 5000, 100) {
		t.Fatal("touching a closing session succeeded")
	}
	// The closing session stays in its bucket (dump shows it) but is not reported as expired.
	if b := tr.Buckets(); len(b) != 1 || !slices.Equal(b[0].IDs, []int64{1, 2}) {
		t.Fatalf("Buckets = %v", b)
	}
	if got := tr.Expired(10000); !slices.Equal(got, []int64{2}) {
		t.Fatalf("Expired = %v, want [2]", got)
	}
}

func TestTrackerTouch(t *testing.T) {
	tr := NewTracker(2000)
	if tr.Touch(7, 0) {
		t.Fatal("Touch of an unknown session succeeded")
	}
	if !tr.Add(7, 4000, 0) || tr.Add(7, 10000, 0) {
		t.Fatal("Add must report new only the first time")
	}
	if to, ok := tr.Timeout(7); !ok || to != 10000 {
		t.Fatalf("Timeout = %d %v, want 10000 (re-Add replaces it)", to, ok)
	}
	// TouchTimeout uses the connection's timeout but keeps the stored one.
	if !tr.TouchTimeout(7, 4000, 1000) {
		t.Fatal("TouchTimeout failed")
	}
	if b := tr.Buckets(); len(b) != 1 || b[0].Deadline != 6000 {
		t.Fatalf("Buckets after TouchTimeout = %v", b)
	}
	if to, _ := tr.Timeout(7); to != 10000 {
		t.Fatalf("TouchTimeout changed the stored timeout to %d", to)
	}
	// Many touches leave exactly one bucket per live deadline, not one per tick seen.
	for now := int64(0); now < 1_000_000; now += 500 {
		tr.Touch(7, now)
	}
	if b := tr.Buckets(); len(b) != 1 || !slices.Equal(b[0].IDs, []int64{7}) {
		t.Fatalf("Buckets after many touches = %v", b)
	}
	if _, ok := tr.Timeout(8); ok {
		t.Fatal("Timeout of an unknown session")
	}
}

func TestTrackerSnapshotAndDump(t *testing.T) {
	tr := NewTracker(2000)
	tr.Add(0x100000a4ed70009, 4000, 0)
	tr.Add(0x100000a4ed70004, 10000, 0)
	tr.Add(0x100000a4ed70005, 10000, 0)
	tr.Add(-5, 30000, 0)
	want := []Info{{-5, 30000}, {0x100000a4ed70004, 10000}, {0x100000a4ed70005, 10000}, {0x100000a4ed70009, 4000}}
	if got := tr.All(); !slices.Equal(got, want) {
		t.Fatalf("All = %v, want %v", got, want)
	}
	b := tr.Buckets()
	if len(b) != 3 || b[0].Deadline != 6000 || b[1].Deadline != 12000 || b[2].Deadline != 32000 ||
		!slices.Equal(b[1].IDs, []int64{0x100000a4ed70004, 0x100000a4ed70005}) {
		t.Fatalf("Buckets = %v", b)
	}
	if tr.Len() != 4 {
		t.Fatalf("Len = %d", tr.Len())
	}
}

func TestTrackerZeroTick(t *testing.T) {
	tr := NewTracker(0)
	tr.Add(1, 10, 5)
	if got := tr.Expired(15); len(got) != 0 {
		t.Fatalf("Expired(15) = %v", got)
	}
	if got := tr.Expired(16); !slices.Equal(got, []int64{1}) {
		t.Fatalf("Expired(16) = %v, want [1]", got)
	}
}
