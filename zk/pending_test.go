package zk

import (
	"context"
	"errors"
	"testing"
)

// TestGo: Go returns once f has queued its request, not when f returns; Wait gives up with
// its context but the operation goes on; an f that sends nothing makes Go wait for it.
func TestGo(t *testing.T) {
	ctx := testCtx(t)
	release := make(chan struct{})
	p := Go(ctx, func(ctx context.Context) (int, error) {
		markSent(ctx) // as await does once the request is queued
		<-release
		return 7, errors.New("late")
	})
	select {
	case <-p.Done():
		t.Fatal("done before f returned")
	default:
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Wait(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with a cancelled context: %v", err)
	}
	close(release)
	if v, err := p.Wait(ctx); v != 7 || err == nil || err.Error() != "late" {
		t.Fatalf("Wait = %v, %v", v, err)
	}

	q := Go(ctx, func(context.Context) (string, error) { return "none sent", nil })
	select {
	case <-q.Done():
	default:
		t.Fatal("Go returned before an f that sent nothing")
	}
}
