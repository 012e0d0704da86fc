package datatool

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/jute"
)

// Tree is a snapshot loaded for the tools: every node by path ("/" for the root), with
// children in the order the file listed them.
type Tree struct {
	Nodes    map[string]*Node
	Root     *Node
	Sessions []storage.SnapSession // file order, duplicates removed (the last timeout wins)
	ACLs     map[int64][]jute.ACL
	Digest   *storage.SnapDigest
	// NameZxid is the zxid in the file name, -1 if the name carries none.
	NameZxid int64
	count    int // nodes in the file
}

// Node is one znode of a Tree.
type Node struct {
	Path     string
	Data     []byte
	ACLKey   int64
	Stat     jute.StatPersisted
	Children []string // names, in file order
}

// containerOwner is EphemeralType.CONTAINER's ephemeralOwner.
const containerOwner = -1 << 63

// LoadSnapshot reads a snapshot file, uncompressed, gzip or snappy (told apart by their
// first bytes, so a renamed file still reads), checking its seals.
func LoadSnapshot(path string) (*Tree, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var r io.Reader = br
	magic, _ := br.Peek(8)
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r = zr
	case bytes.Equal(magic, []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}):
		sr, err := storage.NewSnappyReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r = sr
	}
	t := &Tree{Nodes: map[string]*Node{}, ACLs: map[int64][]jute.ACL{}, NameZxid: -1}
	if z, _, ok := storage.ParseSnapName(filepath.Base(path)); ok {
		t.NameZxid = z
	}
	seen := map[int64]int{}
	h := storage.SnapshotHandler{
		Session: func(s storage.SnapSession) error {
			if i, ok := seen[s.ID]; ok {
				t.Sessions[i].Timeout = s.Timeout
				return nil
			}
			seen[s.ID] = len(t.Sessions)
			t.Sessions = append(t.Sessions, s)
			return nil
		},
		ACL: func(key int64, acls []jute.ACL) error { t.ACLs[key] = acls; return nil },
		Node: func(sn storage.SnapNode) error {
			t.count++
			n := &Node{Path: sn.Path, Data: sn.Data, ACLKey: sn.ACLKey, Stat: sn.Stat}
			slash := strings.LastIndexByte(sn.Path, '/')
			if slash < 0 {
				n.Path = "/"
				t.Root = n
				t.Nodes["/"] = n
				return nil
			}
			parentPath := sn.Path[:slash]
			if parentPath == "" {
				parentPath = "/"
			}
			parent := t.Nodes[parentPath]
			if parent == nil {
				return fmt.Errorf("invalid data tree: no parent %s of %s", sn.Path[:slash], sn.Path)
			}
			// A repeated path replaces the node, as Java's map does, but is one child.
			if _, dup := t.Nodes[sn.Path]; !dup {
				parent.Children = append(parent.Children, sn.Path[slash+1:])
			} else {
				n.Children = t.Nodes[sn.Path].Children
			}
			t.Nodes[sn.Path] = n
			return nil
		},
		Digest: func(d storage.SnapDigest) error { t.Digest = &d; return nil },
	}
	if err := storage.ReadSnapshot(r, h); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if t.Root == nil {
		return nil, fmt.Errorf("%s: %w: no root node", path, storage.ErrCorruptSnapshot)
	}
	return t, nil
}

// javaChildren is the order DataNode.getChildren (a HashSet(8)) iterates n's children in.
func javaChildren(n *Node) []string {
	return javaHashSetOrder(n.Children, javaStringHash, 8)
}

func childPath(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}

// Walk visits the tree from the root in SnapshotFormatter's order.
func (t *Tree) Walk(fn func(*Node)) {
	var walk func(*Node)
	walk = func(n *Node) {
		fn(n)
		for _, c := range javaChildren(n) {
			if cn := t.Nodes[childPath(n.Path, c)]; cn != nil {
				walk(cn)
			}
		}
	}
	walk(t.Root)
}

// ephemerals counts each session's ephemeral nodes, as DataTree.getEphemerals.
func (t *Tree) ephemerals() map[int64]int {
	m := map[int64]int{}
	for _, n := range t.Nodes {
		if o := n.Stat.EphemeralOwner; o != 0 && o != containerOwner && n != t.Root {
			m[o]++
		}
	}
	return m
}

// DumpSnapshot prints the snapshot at path as ZooKeeper's SnapshotFormatter does, or as
// JSON lines: one {"node": ...} per znode in the same order, then one {"session": ...} per
// session and a {"digest": ...}.
func DumpSnapshot(w io.Writer, path string, opts Options) error {
	t, err := LoadSnapshot(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	if opts.JSON {
		err = t.dumpJSON(bw, opts)
	} else {
		t.dumpText(bw, opts)
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

func (t *Tree) dumpText(w *bufio.Writer, opts Options) {
	loc := opts.loc()
	// Java's map holds the root under "" and "/".
	fmt.Fprintf(w, "ZNode Details (count=%d):\n", len(t.Nodes)+1)
	var last int64
	t.Walk(func(n *Node) {
		s := &n.Stat
		fmt.Fprintf(w, "----\n%s\n", n.Path)
		fmt.Fprintf(w, "  cZxid = %s\n  ctime = %s\n", javaHex16(s.Czxid), javaDateString(s.Ctime, loc))
		fmt.Fprintf(w, "  mZxid = %s\n  mtime = %s\n", javaHex16(s.Mzxid), javaDateString(s.Mtime, loc))
		fmt.Fprintf(w, "  pZxid = %s\n  cversion = %d\n  dataVersion = %d\n  aclVersion = %d\n",
			javaHex16(s.Pzxid), s.Cversion, s.Version, s.Aversion)
		fmt.Fprintf(w, "  ephemeralOwner = %s\n", javaHex16(s.EphemeralOwner))
		if opts.Data {
			fmt.Fprintf(w, "  data = %s\n", base64.StdEncoding.EncodeToString(n.Data))
		} else {
			fmt.Fprintf(w, "  dataLength = %d\n", len(n.Data))
		}
		last = max(last, s.Mzxid, s.Pzxid)
	})
	w.WriteString("----\nSession Details (sid, timeout, ephemeralCount):\n")
	eph := t.ephemerals()
	for _, s := range t.javaSessions() {
		fmt.Fprintf(w, "%s, %d, %d\n", javaHex16(s.ID), s.Timeout, eph[s.ID])
	}
	fmt.Fprintf(w, "----\nLast zxid: 0x%s\n", strconv.FormatUint(uint64(max(t.NameZxid, last)), 16))
}

// javaSessions is the HashMap<Long, Integer> iteration order of the sessions.
func (t *Tree) javaSessions() []storage.SnapSession {
	return javaHashSetOrder(t.Sessions, func(s storage.SnapSession) int32 {
		return int32(s.ID ^ int64(uint64(s.ID)>>32))
	}, 16)
}

type nodeJSON struct {
	Path           string  `json:"path"`
	Czxid          string  `json:"czxid"`
	Mzxid          string  `json:"mzxid"`
	Pzxid          string  `json:"pzxid"`
	Ctime          int64   `json:"ctime"`
	Mtime          int64   `json:"mtime"`
	Version        int32   `json:"dataVersion"`
	Cversion       int32   `json:"cversion"`
	Aversion       int32   `json:"aclVersion"`
	EphemeralOwner string  `json:"ephemeralOwner"`
	DataLength     int     `json:"dataLength"`
	Data           *string `json:"data,omitempty"`
	NumChildren    int     `json:"numChildren"`
	ACL            any     `json:"acl"` // []jute.ACL, with lowerCamel keys (camelJSON)
}

func (t *Tree) nodeJSON(n *Node, withData bool) nodeJSON {
	s := &n.Stat
	j := nodeJSON{
		Path: n.Path, Czxid: hexZxid(s.Czxid), Mzxid: hexZxid(s.Mzxid), Pzxid: hexZxid(s.Pzxid),
		Ctime: s.Ctime, Mtime: s.Mtime, Version: s.Version, Cversion: s.Cversion, Aversion: s.Aversion,
		EphemeralOwner: hexZxid(s.EphemeralOwner), DataLength: len(n.Data), NumChildren: len(n.Children),
		ACL: camelJSON(t.acl(n.ACLKey)),
	}
	if withData {
		d := base64.StdEncoding.EncodeToString(n.Data)
		j.Data = &d
	}
	return j
}

// acl resolves a node's ACL key; -1 is world:anyone with every permission.
func (t *Tree) acl(key int64) []jute.ACL {
	if key == -1 {
		return []jute.ACL{{Perms: 31, ID: jute.ID{Scheme: "world", ID: "anyone"}}}
	}
	if l, ok := t.ACLs[key]; ok {
		return l
	}
	return []jute.ACL{}
}

func (t *Tree) dumpJSON(w io.Writer, opts Options) error {
	enc := json.NewEncoder(w)
	var err error
	t.Walk(func(n *Node) {
		if err == nil {
			err = enc.Encode(map[string]any{"node": t.nodeJSON(n, opts.Data)})
		}
	})
	eph := t.ephemerals()
	for _, s := range t.Sessions {
		if err == nil {
			err = enc.Encode(map[string]any{"session": map[string]any{
				"id": hexZxid(s.ID), "timeout": s.Timeout, "ephemerals": eph[s.ID]}})
		}
	}
	if t.Digest != nil && err == nil {
		err = enc.Encode(map[string]any{"digest": map[string]any{
			"zxid": hexZxid(t.Digest.Zxid), "version": t.Digest.Version, "digest": t.Digest.Digest}})
	}
	return err
}

// DumpNcdu prints SnapshotFormatter -json's output: the tree in ncdu's export format, with
// ZooKeeper's quirks (each node's data size as both sizes, inode numbers from 1001), so
// `ncdu -f` can browse a snapshot.
func DumpNcdu(w io.Writer, path string, now time.Time) error {
	t, err := LoadSnapshot(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `[1,0,{"progname":"SnapshotFormatter.java","progver":"0.01","timestamp":%d}`, now.UnixMilli())
	ino := 1000
	var walk func(n *Node)
	walk = func(n *Node) {
		name := n.Path
		if name != "/" {
			name = name[strings.LastIndexByte(name, '/')+1:]
		}
		ino++
		rec := fmt.Sprintf(`{"name":"%s","asize":%d,"dsize":%d,"dev":0,"ino":%d}`, jacksonQuote(name), len(n.Data), len(n.Data), ino)
		bw.WriteString(",")
		if len(n.Children) == 0 {
			bw.WriteString(rec)
			return
		}
		bw.WriteString("[" + rec)
		for _, c := range javaChildren(n) {
			if cn := t.Nodes[childPath(n.Path, c)]; cn != nil {
				walk(cn)
			}
		}
		bw.WriteString("]")
	}
	walk(t.Root)
	bw.WriteString("]")
	return bw.Flush()
}

// jacksonQuote is Jackson's JsonStringEncoder.quoteAsString: quotes, backslashes and
// control characters escaped, everything else as is.
func jacksonQuote(s string) string {
	var sb strings.Builder
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			sb.WriteByte('\\')
			sb.WriteRune(c)
		case c == '\b':
			sb.WriteString(`\b`)
		case c == '\t':
			sb.WriteString(`\t`)
		case c == '\n':
			sb.WriteString(`\n`)
		case c == '\f':
			sb.WriteString(`\f`)
		case c == '\r':
			sb.WriteString(`\r`)
		case c < 0x20:
			fmt.Fprintf(&sb, `\u%04X`, c)
		default:
			sb.WriteRune(c)
		}
	}
	return sb.String()
}
