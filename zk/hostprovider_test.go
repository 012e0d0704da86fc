package zk

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func seeded(i int) *rand.Rand { return rand.New(rand.NewPCG(uint64(i), 0x5eed)) }

func servers(names ...string) []string { return names }

func TestHostProviderRoundRobin(t *testing.T) {
	all := servers("a:1", "b:1", "c:1", "d:1")
	h := newHostProvider(all, seeded(1))
	var round []string
	for i := range len(all) {
		addr, wrapped := h.next()
		if wrapped {
			t.Fatalf("attempt %d reported a full round", i)
		}
		round = append(round, addr)
	}
	if !slices.Equal(sorted(round), all) {
		t.Fatalf("first round %v does not visit every server once", round)
	}
	// The next attempt starts a new round: the caller backs off.
	if addr, wrapped := h.next(); !wrapped || addr != round[0] {
		t.Fatalf("second round starts with %s wrapped=%v", addr, wrapped)
	}
	// After a connection, a full round counts from the server that worked.
	h.onConnected()
	for i := range len(all) - 1 {
		if addr, wrapped := h.next(); wrapped || addr != round[(i+1)%len(all)] {
			t.Fatalf("after connecting: %s wrapped=%v", addr, wrapped)
		}
	}
	if addr, wrapped := h.next(); !wrapped || addr != round[0] {
		t.Fatalf("back at the connected server: %s wrapped=%v", addr, wrapped)
	}

	// The shuffle is seeded, and different seeds give different orders.
	h2 := newHostProvider(all, seeded(1))
	h3 := newHostProvider(all, seeded(2))
	if !slices.Equal(h.servers, h2.servers) {
		t.Fatal("same seed, different order")
	}
	orders := map[string]bool{}
	for i := range 50 {
		orders[fmt.Sprint(newHostProvider(all, seeded(i)).servers)] = true
	}
	if len(orders) < 10 || slices.Equal(h.servers, h3.servers) && len(orders) < 2 {
		t.Fatalf("shuffle yields only %d orders", len(orders))
	}
}

// simulate connects n clients to oldList, updates them to newList, lets every client that
// must move pick its next server, and returns the fraction that moved and the resulting
// number of clients per server.
func simulate(n int, oldList, newList []string) (moved float64, load map[string]int) {
	load = map[string]int{}
	movers := 0
	for i := range n {
		h := newHostProvider(oldList, seeded(i))
		cur, _ := h.next()
		h.onConnected()
		if h.update(newList, cur) {
			movers++
			cur, _ = h.next()
			h.onConnected()
		}
		load[cur]++
	}
	return float64(movers) / float64(n), load
}

// TestHostProviderRebalanceGrow is ZooKeeper's 3 -> 5 servers example: each client moves with
// probability 1 - 3/5 = 0.4, always to one of the new servers, and every server ends up with
// a fifth of the clients.
func TestHostProviderRebalanceGrow(t *testing.T) {
	const n = 10000
	old := servers("s1:1", "s2:1", "s3:1")
	grown := servers("s1:1", "s2:1", "s3:1", "s4:1", "s5:1")
	moved, load := simulate(n, old, grown)
	if math.Abs(moved-0.4) > 0.02 {
		t.Errorf("%.3f of the clients moved, want 0.40", moved)
	}
	for _, s := range grown {
		if share := float64(load[s]) / n; math.Abs(share-0.2) > 0.02 {
			t.Errorf("%s has %.3f of the clients, want 0.20", s, share)
		}
	}
}

// TestHostProviderRebalanceShrink: clients of removed servers always move, the others never,
// and the remaining servers share the load evenly.
func TestHostProviderRebalanceShrink(t *testing.T) {
	const n = 10000
	five := servers("s1:1", "s2:1", "s3:1", "s4:1", "s5:1")
	three := servers("s1:1", "s2:1", "s3:1")
	for i := range n {
		h := newHostProvider(five, seeded(i))
		cur, _ := h.next()
		h.onConnected()
		move := h.update(three, cur)
		if move != !slices.Contains(three, cur) {
			t.Fatalf("client on %s: move=%v", cur, move)
		}
	}
	moved, load := simulate(n, five, three)
	if math.Abs(moved-0.4) > 0.02 {
		t.Errorf("%.3f moved, want the 0.40 on removed servers", moved)
	}
	for _, s := range three {
		if share := float64(load[s]) / n; math.Abs(share-1.0/3) > 0.02 {
			t.Errorf("%s has %.3f of the clients, want 0.333", s, share)
		}
	}
}

// TestHostProviderRebalanceReplace: one server replaced by two new ones (3 -> 4 servers).
func TestHostProviderRebalanceReplace(t *testing.T) {
	const n = 10000
	old := servers("s1:1", "s2:1", "s3:1")
	next := servers("s1:1", "s2:1", "s4:1", "s5:1")
	_, load := simulate(n, old, next)
	for _, s := range next {
		if share := float64(load[s]) / n; math.Abs(share-0.25) > 0.02 {
			t.Errorf("%s has %.3f of the clients, want 0.25", s, share)
		}
	}
	if load["s3:1"] != 0 {
		t.Errorf("%d clients stayed on the removed server", load["s3:1"])
	}
}

// TestHostProviderMoveOrder: a client told to move tries every new server before the old
// ones, then falls back to round robin with a backoff.
func TestHostProviderMoveOrder(t *testing.T) {
	old := servers("s1:1", "s2:1", "s3:1")
	grown := servers("s1:1", "s2:1", "s3:1", "s4:1", "s5:1")
	for i := range 200 {
		h := newHostProvider(old, seeded(i))
		cur, _ := h.next()
		h.onConnected()
		if !h.update(grown, cur) {
			continue
		}
		var tried []string
		for range 5 {
			addr, wrapped := h.next()
			if wrapped {
				t.Fatalf("backoff before trying every server: %v", tried)
			}
			tried = append(tried, addr)
		}
		if !slices.Equal(sorted(tried[:2]), servers("s4:1", "s5:1")) || !slices.Equal(sorted(tried[2:]), old) {
			t.Fatalf("move order %v: want the new servers first", tried)
		}
		if _, wrapped := h.next(); !wrapped {
			t.Fatal("no backoff after every server failed")
		}
		return
	}
	t.Fatal("no client moved in 200 tries")
}

// TestHostProviderUpdateUnchanged: the same list never moves anyone.
func TestHostProviderUpdateUnchanged(t *testing.T) {
	list := servers("s1:1", "s2:1", "s3:1")
	for i := range 100 {
		h := newHostProvider(list, seeded(i))
		cur, _ := h.next()
		h.onConnected()
		if h.update(list, cur) {
			t.Fatal("unchanged list moved a client")
		}
		// The round continues after the current server.
		seen := map[string]bool{}
		for range 3 {
			a, _ := h.next()
			seen[a] = true
		}
		if len(seen) != 3 {
			t.Fatalf("round robin after update visits %v", seen)
		}
	}
}

func TestHostProviderUpdateWhileDisconnected(t *testing.T) {
	h := newHostProvider(servers("s1:1", "s2:1"), seeded(3))
	if h.update(servers("s3:1"), "") != true {
		t.Fatal("a client whose servers are all gone must move")
	}
	if a, _ := h.next(); a != "s3:1" {
		t.Fatalf("next %s", a)
	}
}
