package peer

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// drain takes what is on a transport's queue right now.
func drain(tr Transport) []Message {
	var ms []Message
	for {
		select {
		case m, ok := <-tr.Recv():
			if !ok {
				return ms
			}
			ms = append(ms, m)
		default:
			return ms
		}
	}
}

func payloads(ms []Message) []string {
	var s []string
	for _, m := range ms {
		s = append(s, fmt.Sprintf("%d:%s", m.From, m.Payload))
	}
	return s
}

func TestMemDeliversInOrderWithoutFaults(t *testing.T) {
	n := NewMemNetwork(1)
	a, b := n.Join(1), n.Join(2)
	for i := range 5 {
		a.Send(2, []byte{byte('0' + i)})
	}
	a.Send(1, []byte("self"))
	if got := payloads(drain(b)); !slices.Equal(got, []string{"1:0", "1:1", "1:2", "1:3", "1:4"}) {
		t.Errorf("b got %v", got)
	}
	if got := payloads(drain(a)); !slices.Equal(got, []string{"1:self"}) {
		t.Errorf("a got %v", got)
	}
}

func TestMemDelayRunsOnVirtualClock(t *testing.T) {
	n := NewMemNetwork(2)
	n.SetDelay(10*time.Millisecond, 50*time.Millisecond)
	a, b := n.Join(1), n.Join(2)
	var sent []string
	for i := range 20 {
		a.Send(2, []byte(fmt.Sprint(i)))
		sent = append(sent, fmt.Sprintf("1:%d", i))
	}
	if got := drain(b); len(got) != 0 || n.InFlight() != 20 {
		t.Fatalf("delivered %v before the clock moved; in flight %d", got, n.InFlight())
	}
	n.Advance(9 * time.Millisecond)
	if got := drain(b); len(got) != 0 {
		t.Fatalf("delivered %v before the minimum delay", got)
	}
	n.Advance(41 * time.Millisecond)
	got := payloads(drain(b))
	if len(got) != 20 || n.InFlight() != 0 {
		t.Fatalf("after the maximum delay: %d delivered, %d in flight", len(got), n.InFlight())
	}
	if slices.Equal(got, sent) {
		t.Errorf("random delays did not reorder anything: %v", got)
	}
}

func TestMemDropAndDuplicate(t *testing.T) {
	n := NewMemNetwork(3)
	n.SetDropRate(0.3)
	n.SetDuplicateRate(0.2)
	a, b := n.Join(1), n.Join(2)
	const sent = 1000
	for i := range sent {
		a.Send(2, []byte(fmt.Sprint(i)))
	}
	st := n.Stats()
	got := drain(b)
	if st.Sent != sent || st.Delivered != len(got) || st.Delivered != sent-st.Dropped+st.Duplicated {
		t.Fatalf("stats %+v, received %d", st, len(got))
	}
	if st.Dropped < 200 || st.Dropped > 400 || st.Duplicated < 100 || st.Duplicated > 200 {
		t.Errorf("stats %+v far from the rates", st)
	}
}

func TestMemPartitionAndHeal(t *testing.T) {
	n := NewMemNetwork(4)
	trs := map[int64]*MemTransport{1: n.Join(1), 2: n.Join(2), 3: n.Join(3), 4: n.Join(4)}
	n.Partition([]int64{1, 2}, []int64{3})
	for from := range trs {
		for to := range trs {
			if from != to {
				trs[from].Send(to, []byte("p"))
			}
		}
	}
	for id, tr := range trs {
		var from []int64
		for _, m := range drain(tr) {
			from = append(from, m.From)
		}
		slices.Sort(from)
		var want []int64
		switch id {
		case 1:
			want = []int64{2}
		case 2:
			want = []int64{1}
		}
		if !slices.Equal(from, want) {
			t.Errorf("server %d heard from %v, want %v", id, from, want)
		}
	}
	trs[4].Send(4, []byte("self")) // loopback ignores partitions
	if len(drain(trs[4])) != 1 {
		t.Error("loopback blocked by the partition")
	}
	n.Heal()
	trs[3].Send(1, []byte("healed"))
	if got := payloads(drain(trs[1])); !slices.Equal(got, []string{"3:healed"}) {
		t.Errorf("after Heal: %v", got)
	}
}

func TestMemSameSeedSameRun(t *testing.T) {
	run := func(seed uint64) []string {
		n := NewMemNetwork(seed)
		n.SetDropRate(0.2)
		n.SetDuplicateRate(0.2)
		n.SetDelay(0, 30*time.Millisecond)
		a, b := n.Join(1), n.Join(2)
		var got []string
		for i := range 200 {
			a.Send(2, []byte(fmt.Sprint(i)))
			n.Advance(time.Millisecond)
			got = append(got, payloads(drain(b))...)
		}
		n.Advance(time.Second)
		return append(got, payloads(drain(b))...)
	}
	if x, y := run(9), run(9); !slices.Equal(x, y) {
		t.Errorf("seed 9 replayed differently:\n%v\n%v", x, y)
	}
	if x, y := run(9), run(10); slices.Equal(x, y) {
		t.Error("seeds 9 and 10 made the same run")
	}
}

func TestMemClose(t *testing.T) {
	n := NewMemNetwork(5)
	a, b := n.Join(1), n.Join(2)
	b.Close()
	a.Send(2, []byte("x"))
	if _, ok := <-b.Recv(); ok {
		t.Error("closed transport received a message")
	}
	if st := n.Stats(); st.Dropped != 1 {
		t.Errorf("stats %+v", st)
	}
	b.Send(1, []byte("from closed"))
	if len(drain(a)) != 0 {
		t.Error("a closed transport sent")
	}
	b.Close()
}

func TestMemQueueDropsOldest(t *testing.T) {
	n := NewMemNetwork(6)
	n.SetQueueLen(2)
	a, b := n.Join(1), n.Join(2)
	for _, s := range []string{"a", "b", "c"} {
		a.Send(2, []byte(s))
	}
	if got := payloads(drain(b)); !slices.Equal(got, []string{"1:b", "1:c"}) {
		t.Errorf("got %v", got)
	}
	if n.Stats().Overflowed != 1 {
		t.Errorf("stats %+v", n.Stats())
	}
}
