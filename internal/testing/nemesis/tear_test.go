package nemesis

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/jute"
)

// TestTearLog damages logs written by zkd's own storage and checks that recovery cuts them
// back as each kind of tear intends: a cut or garbled last entry is dropped, a partial
// header after it is not an entry; a garbled (whole) last entry is damage.
func TestTearLog(t *testing.T) {
	for _, tc := range []struct {
		tear Tear
		want int64
	}{{TearCut, 4}, {TearGarble, 4}, {TearTail, 5}} {
		for seed := range uint64(5) {
			dataDir := t.TempDir()
			dir := filepath.Join(dataDir, "version-2")
			l, err := storage.OpenLog(storage.OSFS{}, dir, storage.LogOptions{PreAllocSize: 4096})
			if err != nil {
				t.Fatal(err)
			}
			for z := int64(1); z <= 5; z++ {
				e := jute.Encoder{}
				(&jute.TxnHeader{ClientID: 1, Cxid: int32(z), Zxid: z, Type: jute.OpSetData}).Encode(&e)
				e.Buffer([]byte("some txn body"))
				if err := l.Append(z, e.Buf); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			l.Close()
			what, err := TearLog(dataDir, tc.tear, rand.New(rand.NewPCG(seed, 1)))
			if err != nil {
				t.Fatal(err)
			}
			l, err = storage.OpenLog(storage.OSFS{}, dir, storage.LogOptions{PreAllocSize: 4096})
			if tc.tear == TearGarble {
				// A whole entry whose checksum fails was written whole and changed since:
				// damage, which recovery leaves for an operator or the ensemble to cut.
				var d *storage.DamageError
				if !errors.As(err, &d) || d.LastGood != tc.want {
					t.Fatalf("%s: %v, want damage after zxid %d", what, err, tc.want)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: recovery failed: %v", what, err)
			}
			if got := l.LastZxid(); got != tc.want {
				t.Errorf("%s: recovered up to zxid %d, want %d", what, got, tc.want)
			}
			l.Close()
		}
	}
}
