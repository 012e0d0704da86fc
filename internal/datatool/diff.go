package datatool

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/zkd-io/zkd/jute"
)

// ErrDiffer reports that Diff found differences (diff's exit status 1).
var ErrDiffer = errors.New("snapshots differ")

// Diff prints the znodes that differ between two snapshots, by path: "- path" only in the
// first, "+ path" only in the second, "~ path: field a -> b, ..." in both but different
// (data, ACL or any persisted stat field). It returns an error wrapping ErrDiffer if any do.
func Diff(w io.Writer, pathA, pathB string) error {
	a, err := LoadSnapshot(pathA)
	if err != nil {
		return err
	}
	b, err := LoadSnapshot(pathB)
	if err != nil {
		return err
	}
	paths := make([]string, 0, len(a.Nodes)+len(b.Nodes))
	for p := range a.Nodes {
		paths = append(paths, p)
	}
	for p := range b.Nodes {
		if _, ok := a.Nodes[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	n := 0
	for _, p := range paths {
		na, nb := a.Nodes[p], b.Nodes[p]
		switch {
		case nb == nil:
			fmt.Fprintf(w, "- %s\n", p)
		case na == nil:
			fmt.Fprintf(w, "+ %s\n", p)
		default:
			d := nodeDiff(a, b, na, nb)
			if len(d) == 0 {
				continue
			}
			fmt.Fprintf(w, "~ %s: %s\n", p, strings.Join(d, ", "))
		}
		n++
	}
	if n > 0 {
		return fmt.Errorf("%w: %d nodes", ErrDiffer, n)
	}
	return nil
}

func nodeDiff(ta, tb *Tree, a, b *Node) []string {
	var d []string
	field := func(name string, x, y int64, hex bool) {
		if x == y {
			return
		}
		if hex {
			d = append(d, fmt.Sprintf("%s %s -> %s", name, hexZxid(x), hexZxid(y)))
		} else {
			d = append(d, fmt.Sprintf("%s %d -> %d", name, x, y))
		}
	}
	if !bytes.Equal(a.Data, b.Data) || (a.Data == nil) != (b.Data == nil) {
		d = append(d, fmt.Sprintf("data %s -> %s", dataSummary(a.Data), dataSummary(b.Data)))
	}
	if aa, ab := ta.acl(a.ACLKey), tb.acl(b.ACLKey); !slices.EqualFunc(aa, ab, func(x, y jute.ACL) bool { return x == y }) {
		d = append(d, fmt.Sprintf("acl %s -> %s", aclText(aa), aclText(ab)))
	}
	sa, sb := &a.Stat, &b.Stat
	field("czxid", sa.Czxid, sb.Czxid, true)
	field("mzxid", sa.Mzxid, sb.Mzxid, true)
	field("pzxid", sa.Pzxid, sb.Pzxid, true)
	field("ctime", sa.Ctime, sb.Ctime, false)
	field("mtime", sa.Mtime, sb.Mtime, false)
	field("version", int64(sa.Version), int64(sb.Version), false)
	field("cversion", int64(sa.Cversion), int64(sb.Cversion), false)
	field("aversion", int64(sa.Aversion), int64(sb.Aversion), false)
	field("ephemeralOwner", sa.EphemeralOwner, sb.EphemeralOwner, true)
	return d
}

// dataSummary shows short printable data as is and anything else by length.
func dataSummary(b []byte) string {
	if b == nil {
		return "null"
	}
	if len(b) <= 32 && isPrintable(b) {
		return fmt.Sprintf("%q", b)
	}
	return fmt.Sprintf("(%d bytes)", len(b))
}

func isPrintable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

func aclText(l []jute.ACL) string {
	parts := make([]string, len(l))
	for i, a := range l {
		parts[i] = fmt.Sprintf("%s:%s:%d", a.ID.Scheme, a.ID.ID, a.Perms)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// SubtreeStat is one line of Summary.
type SubtreeStat struct {
	Path  string
	Nodes int
	Bytes int64 // data bytes of the subtree's nodes
}

// Summary prints a snapshot's totals, then the top subtrees at the given depth (1: the
// root's children) by data bytes, then node count, at most top of them (0: all).
func Summary(w io.Writer, path string, depth, top int) error {
	t, err := LoadSnapshot(path)
	if err != nil {
		return err
	}
	depth = max(depth, 1)
	agg := map[string]*SubtreeStat{}
	var total int64
	eph := 0
	for p, n := range t.Nodes {
		total += int64(len(n.Data))
		if o := n.Stat.EphemeralOwner; o != 0 && o != containerOwner && n != t.Root {
			eph++
		}
		if p == "/" {
			continue
		}
		key := subtreeKey(p, depth)
		s := agg[key]
		if s == nil {
			s = &SubtreeStat{Path: key}
			agg[key] = s
		}
		s.Nodes++
		s.Bytes += int64(len(n.Data))
	}
	stats := make([]*SubtreeStat, 0, len(agg))
	for _, s := range agg {
		stats = append(stats, s)
	}
	slices.SortFunc(stats, func(x, y *SubtreeStat) int {
		if c := cmp.Compare(y.Bytes, x.Bytes); c != 0 {
			return c
		}
		if c := cmp.Compare(y.Nodes, x.Nodes); c != 0 {
			return c
		}
		return strings.Compare(x.Path, y.Path)
	})
	if top > 0 && len(stats) > top {
		stats = stats[:top]
	}
	fmt.Fprintf(w, "nodes %d, data bytes %d, ephemerals %d, sessions %d, ACL lists %d\n",
		len(t.Nodes), total, eph, len(t.Sessions), len(t.ACLs))
	if t.Digest != nil {
		fmt.Fprintf(w, "digest %d at zxid %s\n", t.Digest.Digest, hexZxid(t.Digest.Zxid))
	}
	fmt.Fprintf(w, "%12s %14s  %s\n", "nodes", "data bytes", "subtree (depth "+fmt.Sprint(depth)+")")
	for _, s := range stats {
		fmt.Fprintf(w, "%12d %14d  %s\n", s.Nodes, s.Bytes, s.Path)
	}
	return nil
}

// subtreeKey is p cut to its first depth components ("/a/b/c", 2 -> "/a/b").
func subtreeKey(p string, depth int) string {
	i := 0
	for k := 0; k < depth; k++ {
		j := strings.IndexByte(p[i+1:], '/')
		if j < 0 {
			return p
		}
		i += j + 1
	}
	return p[:i]
}
