package nemesis

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"github.com/zkd-io/zkd/internal/storage"
)

// DamageClass is how a damage fault harms a stopped member's data directory. Unlike a
// torn tail, each may cost txns the member acknowledged: a zkd member must notice, stay out
// of elections and refill from the leader.
type DamageClass int

const (
	DamageLogFlip   DamageClass = iota // one bit flipped in the txn of a random log entry
	DamageLogZero                      // a random log entry zeroed
	DamageLogLength                    // a random log entry's length set to 0x7fffffff
	DamageSnapFlip                     // one bit flipped in the middle of the newest snapshot
	DamageEpoch                        // currentEpoch or acceptedEpoch garbled
	numDamageClasses
)

var damageNames = [...]string{"log-bit-flip", "log-zeroed-entry", "log-impossible-length", "snapshot-bit-flip", "epoch-garbled"}

func (c DamageClass) String() string { return damageNames[c] }

// Damage harms dataDir (a stopped member's) as class says, with r choosing where, and says
// what it did. A class with nothing to harm (no log entry yet) falls back to the epoch.
func Damage(dataDir string, class DamageClass, r *rand.Rand) (string, error) {
	dir := filepath.Join(dataDir, "version-2")
	switch class {
	case DamageLogFlip, DamageLogZero, DamageLogLength:
		var all []storage.LogEntry
		var files []string
		names, err := os.ReadDir(dir)
		if err != nil {
			return "", fmt.Errorf("damage: %w", err)
		}
		for _, n := range names {
			if _, ok := storage.ParseLogName(n.Name()); !ok {
				continue
			}
			path := filepath.Join(dir, n.Name())
			_, err := storage.ScanLogFile(storage.OSFS{}, path, false, func(e storage.LogEntry) error {
				all = append(all, storage.LogEntry{Offset: e.Offset, Zxid: e.Zxid, Txn: make([]byte, len(e.Txn))})
				files = append(files, path)
				return nil
			})
			if err != nil {
				return "", fmt.Errorf("damage: %w", err)
			}
		}
		if len(all) == 0 {
			return Damage(dataDir, DamageEpoch, r)
		}
		i := r.IntN(len(all))
		e, path := all[i], files[i]
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return "", fmt.Errorf("damage: %w", err)
		}
		defer f.Close()
		switch class {
		case DamageLogFlip:
			off := e.Offset + 12 + int64(r.IntN(len(e.Txn)))
			var b [1]byte
			if _, err := f.ReadAt(b[:], off); err != nil {
				return "", fmt.Errorf("damage: %w", err)
			}
			b[0] ^= 1 << r.IntN(8)
			_, err = f.WriteAt(b[:], off)
		case DamageLogZero:
			_, err = f.WriteAt(make([]byte, entryOverhead+len(e.Txn)), e.Offset)
		case DamageLogLength:
			_, err = f.WriteAt([]byte{0x7f, 0xff, 0xff, 0xff}, e.Offset+8)
		}
		if err != nil {
			return "", fmt.Errorf("damage: %w", err)
		}
		return fmt.Sprintf("%s: entry %d of %d (zxid %#x) in %s", class, i+1, len(all), e.Zxid, filepath.Base(path)), nil
	case DamageSnapFlip:
		snaps, err := storage.FindSnapshots(storage.OSFS{}, dir)
		if err != nil {
			return "", fmt.Errorf("damage: %w", err)
		}
		if len(snaps) == 0 {
			return Damage(dataDir, DamageEpoch, r)
		}
		path := filepath.Join(dir, snaps[0].Name)
		st, err := os.Stat(path)
		if err != nil {
			return "", fmt.Errorf("damage: %w", err)
		}
		off := st.Size()/4 + r.Int64N(max(st.Size()/2, 1))
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("damage: %w", err)
		}
		b[off] ^= 1 << r.IntN(8)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return "", fmt.Errorf("damage: %w", err)
		}
		return fmt.Sprintf("%s: %s at offset %d of %d", class, snaps[0].Name, off, st.Size()), nil
	case DamageEpoch:
		name := []string{"currentEpoch", "acceptedEpoch"}[r.IntN(2)]
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Sprintf("%s: no %s to garble", class, name), nil
		}
		if err != nil {
			return "", fmt.Errorf("damage: %w", err)
		}
		garbled := append(slices.Clone(b), "\x00x"...)
		if err := os.WriteFile(path, garbled, 0o644); err != nil {
			return "", fmt.Errorf("damage: %w", err)
		}
		return fmt.Sprintf("%s: %s %q -> %q", class, name, b, garbled), nil
	}
	return "", fmt.Errorf("damage: unknown class %d", class)
}
