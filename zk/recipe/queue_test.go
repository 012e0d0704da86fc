package recipe

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zkd-io/zkd/zk"
)

// testQueueFIFO: items come out in the order they went in, one listing serves a whole batch,
// TryTake does not block on an empty queue, and Take blocks until an item arrives.
func testQueueFIFO(t *testing.T, e *tenv) {
	ctx := testCtx(t)
	c := e.conn(t)
	h := newHookRec()
	q := NewQueue(c, "/q", h.opt())
	if _, ok, err := q.TryTake(ctx); ok || err != nil {
		t.Fatalf("TryTake on an empty queue: %v %v", ok, err)
	}
	const n = 20
	for i := range n {
		if _, err := q.Put(ctx, []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	if l, err := q.Len(ctx); l != n || err != nil {
		t.Fatalf("len %d %v", l, err)
	}
	h.mu.Lock()
	listed := h.listed
	h.mu.Unlock()
	for i := range n {
		data, err := q.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != strconv.Itoa(i) {
			t.Fatalf("took %q, want %d", data, i)
		}
	}
	h.mu.Lock()
	listings := h.listed - listed
	h.mu.Unlock()
	t.Logf("%s: %d items taken with %d getChildren", e.name, n, listings)
	if listings != 1 {
		t.Fatalf("%d listings for one batch of %d", listings, n)
	}

	got := make(chan []byte, 1)
	go func() {
		data, err := q.Take(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- data
	}()
	h.waitWaits(t, 1)
	noValue(t, got, "Take on an empty queue")
	if _, err := NewQueue(e.conn(t), "/q").Put(ctx, []byte("late")); err != nil {
		t.Fatal(err)
	}
	if data := recv(t, got, "blocked Take"); string(data) != "late" {
		t.Fatalf("took %q", data)
	}
	if err := q.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ch, _, err := c.Children(ctx, "/q"); err != nil || len(ch) != 0 {
		t.Fatalf("left in the queue: %v %v", ch, err)
	}
}

// testQueueConcurrent: 2 producers put 40 items each while 4 consumers in 2 sessions take
// them: every item is delivered exactly once, and each consumer sees each producer's items
// in order.
func testQueueConcurrent(t *testing.T, e *tenv) {
	const producers, perProducer, consumers = 2, 40, 4
	ctx := testCtx(t)
	conns := []*zk.Conn{e.conn(t), e.conn(t)}
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	var total atomic.Int32
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, producers+consumers)
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := NewQueue(conns[p%2], "/q")
			for i := range perProducer {
				if _, err := q.Put(ctx, []byte(fmt.Sprintf("%d-%d", p, i))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for k := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := NewQueue(conns[k%2], "/q")
			last := map[string]int{}
			for {
				data, err := q.Take(cctx)
				if err != nil {
					if cctx.Err() == nil {
						errs <- err
					}
					return
				}
				prod, idx, _ := strings.Cut(string(data), "-")
				i, _ := strconv.Atoi(idx)
				if l, ok := last[prod]; ok && i <= l {
					errs <- fmt.Errorf("consumer %d took %s after %s-%d", k, data, prod, l)
				}
				last[prod] = i
				mu.Lock()
				seen[string(data)]++
				mu.Unlock()
				if total.Add(1) == producers*perProducer {
					stop()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(seen) != producers*perProducer {
		t.Fatalf("%d distinct items delivered, want %d", len(seen), producers*perProducer)
	}
	for item, n := range seen {
		if n != 1 {
			t.Fatalf("%s delivered %d times", item, n)
		}
	}
}

// testQueueLostReplies: the connection breaks right after the server applied a Put, and
// right after it applied a Take's delete: the guid finds the put item (it is not put twice)
// and the receipt shows that the take was this consumer's (the item is neither lost nor
// delivered again).
func testQueueLostReplies(t *testing.T, e *tenv) {
	ctx := testCtx(t)
	d := &dropper{}
	h := newHookRec()
	c := e.conn(t, zk.WithDialer(d.dial))
	mustCreate(t, c, "/q", nil)
	q := NewQueue(c, "/q", h.opt())
	d.arm("qn-")
	if _, err := q.Put(ctx, []byte("a")); err != nil {
		t.Fatal(err)
	}
	d.waitFired(t, 1)
	if l, err := q.Len(ctx); l != 1 || err != nil {
		t.Fatalf("after a put with a lost reply: %d items (%v)", l, err)
	}
	if _, err := q.Put(ctx, []byte("b")); err != nil {
		t.Fatal(err)
	}
	if data, err := q.Take(ctx); string(data) != "a" || err != nil {
		t.Fatalf("take %q %v", data, err)
	}
	d.arm(receiptPrefix) // the next request naming the receipt is the take's multi
	if data, err := q.Take(ctx); string(data) != "b" || err != nil {
		t.Fatalf("take with a lost reply: %q %v", data, err)
	}
	d.waitFired(t, 2)
	h.mu.Lock()
	recovered := h.recovered
	h.mu.Unlock()
	if recovered != 2 {
		t.Fatalf("%d of the 2 lost replies recognised as applied", recovered)
	}
	other := NewQueue(e.conn(t), "/q")
	if data, ok, err := other.TryTake(ctx); ok || err != nil {
		t.Fatalf("another consumer took %q (%v) after b was taken", data, err)
	}
	if l, err := q.Len(ctx); l != 0 || err != nil {
		t.Fatalf("left: %d %v", l, err)
	}
}

// testPriorityQueue: items come out by priority (lower first, negatives included), equal
// priorities in FIFO order.
func testPriorityQueue(t *testing.T, e *tenv) {
	ctx := testCtx(t)
	q := NewPriorityQueue(e.conn(t), "/pq")
	items := []struct {
		data string
		prio int32
	}{{"e", 5}, {"a1", 1}, {"neg", -3}, {"a2", 1}, {"z", 1000}, {"min", -1 << 31}, {"a3", 1}}
	for _, it := range items {
		if _, err := q.Put(ctx, []byte(it.data), it.prio); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for range items {
		data, err := q.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(data))
	}
	if want := []string{"min", "neg", "a1", "a2", "a3", "e", "z"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}
