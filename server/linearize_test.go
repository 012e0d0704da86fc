package server_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/zkd-io/zkd/internal/testing/linearize"
	"github.com/zkd-io/zkd/zk"
)

// TestEnsembleLinearizable runs concurrent register operations (sync+read, write,
// compare-and-set) on a few znodes while servers of a 3-server ensemble are stopped and
// restarted, and checks the history with porcupine.
func TestEnsembleLinearizable(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	e := startEnsemble(t, 3)
	e.waitServing()
	connString := strings.Join(e.addrs(), ",")
	keys := []string{"/r0", "/r1", "/r2"}
	setup, err := zk.Connect(context.Background(), connString, zk.WithSessionTimeout(4*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if _, err := setup.Create(context.Background(), k, []byte(""), zk.OpenACL(), zk.ModePersistent); err != nil {
			t.Fatal(err)
		}
	}
	setup.Close()

	start := time.Now()
	now := func() int64 { return int64(time.Since(start)) }
	var mu sync.Mutex
	var history []porcupine.Operation
	var unknown []porcupine.Operation
	stop := make(chan struct{})
	var wg sync.WaitGroup
	const clients = 4
	for ci := 0; ci < clients; ci++ {
		wg.Add(1)
		go func(ci int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(ci), 7))
			c, err := zk.Connect(context.Background(), connString, zk.WithSessionTimeout(6*time.Second))
			if err != nil {
				t.Errorf("client %d: %v", ci, err)
				return
			}
			defer c.Close()
			lastVersion := map[string]int32{}
			// A bounded history keeps the linearizability check fast.
			for n := 0; n < 2000; n++ {
				select {
				case <-stop:
					return
				default:
				}
				key := keys[rng.IntN(len(keys))]
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				call := now()
				var in linearize.Input
				var out linearize.Output
				var opErr error
				keep := true
				switch r := rng.IntN(10); {
				case r < 4:
					in = linearize.Input{Key: key, Kind: linearize.Get}
					err := c.Sync(ctx, key)
					var data []byte
					var st *zk.Stat
					if err == nil {
						data, st, err = c.Get(ctx, key)
					}
					if err != nil {
						opErr = err
						keep = false // a failed read has no effect
						break
					}
					out = linearize.Output{Value: string(data), Version: st.Version}
					lastVersion[key] = st.Version
				case r < 7:
					v := fmt.Sprintf("c%d-%d", ci, n)
					in = linearize.Input{Key: key, Kind: linearize.Set, Value: v}
					st, err := c.Set(ctx, key, []byte(v), -1)
					out, opErr = writeOutput(st, err), err
				default:
					v := fmt.Sprintf("c%d-%d", ci, n)
					exp := lastVersion[key] + int32(rng.IntN(2))
					in = linearize.Input{Key: key, Kind: linearize.CAS, Value: v, Version: exp}
					st, err := c.Set(ctx, key, []byte(v), exp)
					out, opErr = writeOutput(st, err), err
				}
				cancel()
				ret := now()
				if errors.Is(opErr, zk.ErrSessionExpired) || errors.Is(opErr, zk.ErrClosed) {
					// Never sent, or sent by a session that is gone: the client stops here.
					return
				}
				if !keep {
					continue
				}
				time.Sleep(time.Duration(8+rng.IntN(12)) * time.Millisecond) // spread over the restarts
				op := porcupine.Operation{ClientId: ci, Input: in, Call: call, Output: out, Return: ret}
				mu.Lock()
				if out.Result == linearize.Unknown {
					unknown = append(unknown, op)
				} else {
					history = append(history, op)
				}
				mu.Unlock()
			}
		}(ci)
	}
	// The nemesis: stop one server at a time (sometimes the leader), then restart it.
	rng := rand.New(rand.NewPCG(1, 1))
	for round := 0; round < 4; round++ {
		time.Sleep(time.Duration(400+rng.IntN(600)) * time.Millisecond)
		victim := rng.IntN(3)
		if round%2 == 0 {
			if li := e.leaderIndex(); li >= 0 {
				victim = li
			}
		}
		e.stop(victim)
		time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
		e.start(victim)
	}
	restartsDone := time.Since(start)
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	end := now() + 1
	for _, op := range unknown {
		// The client never learned the outcome: the write may take effect any time later.
		op.Return = end
		history = append(history, op)
	}
	writes := 0
	for _, op := range history {
		if op.Input.(linearize.Input).Kind != linearize.Get {
			writes++
		}
	}
	if len(history) < 100 || writes < 30 {
		t.Fatalf("too little happened to check: %d operations, %d writes", len(history), writes)
	}
	res := porcupine.CheckOperationsTimeout(linearize.Model.ToModel(), history, 2*time.Minute)
	if res != porcupine.Ok {
		t.Fatalf("history of %d operations is not linearizable (%v)", len(history), res)
	}
	last := int64(0)
	for _, op := range history {
		if op.Return < end && op.Return > last {
			last = op.Return
		}
	}
	if time.Duration(last) < restartsDone {
		t.Fatalf("the clients stopped at %v, before the restarts ended at %v", time.Duration(last), restartsDone)
	}
	t.Logf("%d operations (%d writes, %d with unknown outcome) linearizable across 4 server restarts", len(history), writes, len(unknown))
}

func writeOutput(st *zk.Stat, err error) linearize.Output {
	switch {
	case err == nil:
		return linearize.Output{Result: linearize.OK, Version: st.Version}
	case errors.Is(err, zk.ErrBadVersion):
		return linearize.Output{Result: linearize.BadVersion}
	}
	return linearize.Output{Result: linearize.Unknown}
}
