package storage

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// A locked directory refuses a second lock, naming the holder's pid, until it is released.
func TestLockDir(t *testing.T) {
	dir := t.TempDir()
	l, err := LockDir(OSFS{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = LockDir(OSFS{}, dir)
	if !errors.Is(err, ErrDirLocked) || !strings.Contains(err.Error(), fmt.Sprintf("process %d", os.Getpid())) {
		t.Fatalf("second lock: %v, want ErrDirLocked naming pid %d", err, os.Getpid())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := LockDir(OSFS{}, dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l2.Close()
	if _, err := LockDir(NewMemFS(), "/d"); err != nil {
		t.Fatalf("MemFS: %v", err)
	}
}
