package main

import (
	"testing"
	"time"
)

// logWait bounds the wait for a line a test expects in a server's log. The line is written by
// another process, after the event the test saw (a refusal is answered before it is logged),
// and reaches the test through a pipe: on a loaded machine that takes a while, so the bound
// is generous and only a missing line costs it.
const logWait = 2 * time.Minute

// waitForLog waits until ok holds for the log, reporting (t.Errorf, with the log's tail) and
// returning false when it has not after logWait.
func waitForLog(t *testing.T, log func() string, what string, ok func(log string) bool) bool {
	t.Helper()
	deadline := time.Now().Add(logWait)
	for {
		l := log()
		if ok(l) {
			return true
		}
		if time.Now().After(deadline) {
			t.Errorf("after %v the log still lacks %s:\n%s", logWait, what, tail(l, 40))
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}
