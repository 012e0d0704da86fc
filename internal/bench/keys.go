package bench

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path"
)

// Paths of the znodes zkbench works on. Every workload lives under the root (--root) except
// the memory workload, whose paths are short and of a fixed length so that the per-znode
// figure is comparable between runs: "/zkm/n" and ten digits, 16 bytes.
const (
	znodeParent = "/zkm"
	znodePrefix = znodeParent + "/n"
)

// keyPath is the i-th key of a key space: fixed width, so every request of a workload has
// the same size.
func keyPath(dir string, i int) string { return fmt.Sprintf("%s/%08d", dir, i) }

// appendKeyPath appends keyPath(dir, i) as a jute string (length, then bytes) to b.
func appendKeyPath(b []byte, dir string, i int) []byte {
	var d [20]byte
	n := len(d)
	for v := i; v > 0 || n > len(d)-8; v /= 10 {
		n--
		d[n] = byte('0' + v%10)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(dir)+1+len(d)-n))
	b = append(b, dir...)
	b = append(b, '/')
	return append(b, d[n:]...)
}

// keyPaths builds the whole key space once, so the hot path only indexes a slice.
func keyPaths(dir string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = keyPath(dir, i)
	}
	return keys
}

// createPath is the seq-th znode created by session s: unique across sessions without any
// coordination between them.
func createPath(dir string, s int, seq int64) string {
	return fmt.Sprintf("%s/s%04d-%010d", dir, s, seq)
}

// znodePath is the i-th znode of the memory workload.
func znodePath(i int) string { return fmt.Sprintf("%s%010d", znodePrefix, i) }

// pickKey draws a key index uniformly from [0, n).
func pickKey(rng *rand.Rand, n int) int { return rng.IntN(n) }

// sessionRNG gives each session its own deterministic stream, so runs with the same seed
// send the same keys in the same order per session.
func sessionRNG(seed uint64, session int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(session)+1))
}

// payload is the data written by a workload: deterministic, not all zeros.
func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

// ancestors lists the paths to create, outermost first, so that p exists.
func ancestors(p string) []string {
	var out []string
	for p != "/" && p != "." && p != "" {
		out = append([]string{p}, out...)
		p = path.Dir(p)
	}
	return out
}
