package storage

import "testing"

func TestSnapInProgress(t *testing.T) {
	for name, want := range map[string]bool{
		"tmp.snapshot.1a2b":       true,  // zkd, being written
		"tmp.snapshot.1a2b.gz":    true,  // zkd, compressed
		"snapshot.1a2b.tmp":       true,  // ZooKeeper 3.8's AtomicFileOutputStream
		"snapshot.1a2b":           false, // complete
		"snapshot.1a2b.snappy":    false,
		"log.100000001":           false,
		"tmp.log.1":               false,
		"acceptedEpoch.tmp":       false,
		"snapshot.1a2b.tmp.extra": false,
		"tmp.snapshot.xyz":        false,
	} {
		if got := SnapInProgress(name); got != want {
			t.Errorf("SnapInProgress(%q) = %v, want %v", name, got, want)
		}
	}
}
