package storage

import (
	"errors"
	"syscall"
	"testing"
)

// Each failpoint fails the operation it names, with the error asked for, from the hit it
// names on; the Log then refuses everything (its sticky failure), and what was synced
// before survives.
func TestFaultFS(t *testing.T) {
	for _, tc := range []struct {
		spec  string
		errno error
	}{
		{"log.write=eio@3", syscall.EIO},
		{"log.sync=enospc@2", syscall.ENOSPC},
		{"log.create=eio@2", syscall.EIO},
		{"dir.sync=eio@2", syscall.EIO},
		{"log.write=torn@2", syscall.EIO},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			m := NewMemFS()
			f, err := NewFaultFS(m, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			l, err := OpenLog(f, vdir, LogOptions{PreAllocSize: -1, ForceSync: true, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			synced := int64(0)
			var failure error
			for z := int64(1); z <= 20 && failure == nil; z++ {
				if err := l.Append(z, mkTxn(z, 10, 0)); err != nil {
					failure = err
					break
				}
				if z%5 == 0 {
					if err := l.Roll(); err != nil {
						failure = err
						break
					}
				}
				if err := l.Sync(); err != nil {
					failure = err
					break
				}
				synced = z
			}
			if !errors.Is(failure, ErrInjected) || !errors.Is(failure, tc.errno) {
				t.Fatalf("failure %v, want an injected %v", failure, tc.errno)
			}
			if err := l.Append(synced+100, mkTxn(synced+100, 1, 0)); err == nil {
				t.Fatal("the log took an append after a failure")
			}
			m.Crash()
			l2 := openLog(t, m, -1)
			if l2.LastZxid() < synced {
				t.Fatalf("after the crash the log ends at %d, but %d was synced", l2.LastZxid(), synced)
			}
			l2.Close()
		})
	}
	for _, bad := range []string{"log.flush=eio", "log.write=boom", "log.write=eio@0", "nonsense"} {
		if _, err := NewFaultFS(NewMemFS(), bad); err == nil {
			t.Errorf("spec %q accepted", bad)
		}
	}
}
