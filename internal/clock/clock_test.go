package clock

import (
	"testing"
	"time"
)

func TestFakeFiresInOrderAndOnlyWhenDue(t *testing.T) {
	f := NewFake(time.Unix(1000, 0))
	tk := f.NewTicker(time.Second)
	tm := f.NewTimer(1500 * time.Millisecond)
	f.Advance(999 * time.Millisecond)
	select {
	case <-tk.C():
		t.Fatal("ticker fired early")
	case <-tm.C():
		t.Fatal("timer fired early")
	default:
	}
	f.Advance(time.Millisecond)
	if got := <-tk.C(); !got.Equal(time.Unix(1001, 0)) {
		t.Fatalf("tick at %v", got)
	}
	f.Advance(time.Second)
	if got := <-tm.C(); !got.Equal(time.Unix(1001, 5e8)) {
		t.Fatalf("timer at %v", got)
	}
	// The 2 s tick was not read before the 3 s one: one is dropped, as a real ticker does.
	f.Advance(time.Second)
	<-tk.C()
	select {
	case <-tk.C():
		t.Fatal("a missed tick was queued")
	default:
	}
	if !f.Now().Equal(time.Unix(1003, 0)) {
		t.Fatalf("now %v", f.Now())
	}
	tm.Reset(time.Second)
	tk.Stop()
	f.Advance(2 * time.Second)
	if _, ok := <-tm.C(); !ok {
		t.Fatal("reset timer did not fire")
	}
	select {
	case <-tk.C():
		t.Fatal("stopped ticker fired")
	default:
	}
}
