package nemesis

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/adler32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/zkd-io/zkd/internal/storage"
)

// Kind is a kind of fault.
type Kind int

const (
	Kill      Kind = iota // SIGKILL, restart after Dur
	Pause                 // SIGSTOP for Dur, then SIGCONT
	Partition             // cut the member off from the others' quorum and election traffic for Dur
	TornLog               // SIGKILL, damage the newest txn log's tail, restart after Dur
	Damaged               // SIGKILL, damage the member's data (a DamageClass), restart after Dur
	DiskError             // restart with a storage failpoint armed (Failpoint), after Dur restart it healthy
	numKinds
)

var kindNames = [...]string{"kill", "pause", "partition", "torn-log", "damage", "disk-error"}

func (k Kind) String() string { return kindNames[k] }

// ParseKinds reads a comma-separated list of fault kinds; "none" is the empty list.
func ParseKinds(s string) ([]Kind, error) {
	kinds := []Kind{}
	if s == "none" {
		return kinds, nil
	}
	for _, name := range strings.Split(s, ",") {
		i := slices.Index(kindNames[:], strings.TrimSpace(name))
		if i < 0 {
			return nil, fmt.Errorf("unknown fault kind %q (want %s, or none)", name, strings.Join(kindNames[:], ", "))
		}
		kinds = append(kinds, Kind(i))
	}
	return kinds, nil
}

// Tear is how a torn-log fault damages the log.
type Tear int

const (
	TearCut    Tear = iota // truncate inside the last entry
	TearGarble             // overwrite the last bytes of the last entry's txn (its checksum fails)
	TearTail               // a partial entry header of random bytes after the last entry
)

var tearNames = [...]string{"cut inside the last entry", "garble the last entry's bytes", "partial header after the last entry"}

// Fault is one step of a schedule. Faults run one at a time: each starts Gap after the
// previous one healed and the ensemble serves with every member again, so a quorum with
// every acknowledged write is always recoverable (at most one member is faulty, and a
// member whose log lost a tail has resynced before the next fault).
type Fault struct {
	Gap      time.Duration
	Kind     Kind
	Leader   bool // the target is the leader; otherwise a follower
	Follower int  // which follower (mod their number)
	Dur      time.Duration
	Reset    bool // Partition: also drop the connections open at its start
	Tear     Tear
	Damage   DamageClass
	// Failpoint is a DiskError's ZKD_FAILPOINTS spec (storage.Failpoints).
	Failpoint string
}

func (f Fault) String() string {
	who := "leader"
	if !f.Leader {
		who = fmt.Sprintf("follower #%d", f.Follower)
	}
	s := fmt.Sprintf("after %v: %s of the %s", f.Gap, f.Kind, who)
	switch f.Kind {
	case Kill:
		s += fmt.Sprintf(", restart after %v", f.Dur)
	case Pause:
		s += fmt.Sprintf(" for %v", f.Dur)
	case Partition:
		s += fmt.Sprintf(" for %v", f.Dur)
		if f.Reset {
			s += ", connections reset"
		} else {
			s += ", silent"
		}
	case TornLog:
		s += fmt.Sprintf(" (%s), restart after %v", tearNames[f.Tear], f.Dur)
	case Damaged:
		s += fmt.Sprintf(" (%s), restart after %v", f.Damage, f.Dur)
	case DiskError:
		s += fmt.Sprintf(" (%s) for %v", f.Failpoint, f.Dur)
	}
	return s
}

// Schedule makes n faults from seed. The first faults cover every kind in kinds, in a
// seeded order, so that even a short run sees each; the rest are drawn at random.
func Schedule(seed int64, n int, kinds []Kind) []Fault {
	if len(kinds) == 0 {
		return nil
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x6e656d65736973))
	ms := func(lo, hi int) time.Duration { return time.Duration(lo+r.IntN(hi-lo+1)) * time.Millisecond }
	order := append([]Kind(nil), kinds...)
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	var out []Fault
	for i := range n {
		k := kinds[r.IntN(len(kinds))]
		if i < len(order) {
			k = order[i]
		}
		f := Fault{Gap: ms(1000, 3000), Kind: k, Leader: r.IntN(2) == 0, Follower: r.IntN(2)}
		switch k {
		case Kill:
			f.Dur = ms(1500, 4000)
		case Pause:
			f.Dur = ms(4000, 8000)
		case Partition:
			f.Dur = ms(3000, 6000)
			f.Reset = r.IntN(2) == 0
		case TornLog:
			f.Dur = ms(1000, 3000)
			f.Tear = Tear(r.IntN(3))
		case Damaged:
			f.Dur = ms(1000, 3000)
			f.Damage = DamageClass(r.IntN(int(numDamageClasses)))
		case DiskError:
			f.Dur = ms(3000, 6000)
			point := storage.Failpoints[r.IntN(len(storage.Failpoints))]
			errs := []string{"eio", "enospc", "torn"}
			// The hit that fails: a log is written and synced many times a second under
			// the load; snapshots (one at start) and epoch files (at a new epoch) a few times.
			hits := 60
			switch {
			case strings.HasPrefix(point, "snap."):
				hits = 1
			case strings.HasPrefix(point, "epoch."), point == "dir.sync":
				hits = 2
			}
			f.Failpoint = fmt.Sprintf("%s=%s@%d", point, errs[r.IntN(len(errs))], 1+r.IntN(hits))
		}
		out = append(out, f)
	}
	return out
}

// FormatSchedule is a schedule, one fault a line.
func FormatSchedule(s []Fault) string {
	var b strings.Builder
	for i, f := range s {
		fmt.Fprintf(&b, "  %2d. %s\n", i+1, f)
	}
	return b.String()
}

const (
	logHeaderSize = 16        // magic, version, dbid
	entryOverhead = 8 + 4 + 1 // checksum, length, 0x42
)

// TearLog damages the tail of the newest txn log in dataDir/version-2 as tear says, with
// r choosing the bytes, and says what it did. Recovery has to cut the log back to its
// last valid entry: the checksum (Adler-32 of the txn) or the missing end marker shows
// where.
func TearLog(dataDir string, tear Tear, r *rand.Rand) (string, error) {
	dir := filepath.Join(dataDir, "version-2")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("tear log: %w", err)
	}
	newest, newestZxid := "", int64(-1)
	for _, e := range ents {
		if z, ok := storage.ParseLogName(e.Name()); ok && z > newestZxid {
			newest, newestZxid = e.Name(), z
		}
	}
	if newest == "" {
		return "", errors.New("tear log: no log file")
	}
	path := filepath.Join(dir, newest)
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("tear log: %w", err)
	}
	start, end := lastEntry(b)
	if start < 0 {
		return fmt.Sprintf("%s has no complete entry; left alone", newest), nil
	}
	txnLen := end - start - entryOverhead
	switch tear {
	case TearCut:
		cut := start + 1 + r.IntN(end-start-1) // keeps a strict prefix of the entry
		if err := os.Truncate(path, int64(cut)); err != nil {
			return "", fmt.Errorf("tear log: %w", err)
		}
		return fmt.Sprintf("%s: truncated to %d bytes, inside its last entry [%d,%d)", newest, cut, start, end), nil
	case TearGarble:
		n := 1 + r.IntN(min(4, txnLen))
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return "", fmt.Errorf("tear log: %w", err)
		}
		defer f.Close()
		garbled := make([]byte, n)
		for i := range garbled {
			garbled[i] = b[end-1-n+i] ^ byte(1+r.IntN(255))
		}
		if _, err := f.WriteAt(garbled, int64(end-1-n)); err != nil {
			return "", fmt.Errorf("tear log: %w", err)
		}
		return fmt.Sprintf("%s: garbled %d bytes at the end of its last entry [%d,%d)", newest, n, start, end), nil
	default:
		n := 1 + r.IntN(entryOverhead-2)
		junk := make([]byte, n)
		for i := range junk {
			junk[i] = byte(1 + r.IntN(255))
		}
		if err := os.Truncate(path, int64(end)); err != nil {
			return "", fmt.Errorf("tear log: %w", err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return "", fmt.Errorf("tear log: %w", err)
		}
		defer f.Close()
		if _, err := f.Write(junk); err != nil {
			return "", fmt.Errorf("tear log: %w", err)
		}
		return fmt.Sprintf("%s: cut after its last entry (%d bytes) and %d random bytes appended", newest, end, n), nil
	}
}

// lastEntry finds the last valid entry of a txn log file: [start, end) spans its checksum,
// length, txn and end marker. start is -1 when there is none.
func lastEntry(b []byte) (start, end int) {
	start, end = -1, -1
	off := logHeaderSize
	for off+12 <= len(b) {
		sum := binary.BigEndian.Uint64(b[off:])
		n := int(int32(binary.BigEndian.Uint32(b[off+8:])))
		if n <= 0 || off+12+n+1 > len(b) {
			break
		}
		txn := b[off+12 : off+12+n]
		if uint64(adler32.Checksum(txn)) != sum || b[off+12+n] != 'B' {
			break
		}
		start, end = off, off+12+n+1
		off = end
	}
	return start, end
}
