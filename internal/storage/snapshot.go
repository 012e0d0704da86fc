package storage

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/adler32"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/jute"
)

var (
	// ErrCorruptSnapshot reports a snapshot that fails a seal or cannot be decoded.
	ErrCorruptSnapshot = errors.New("storage: corrupt snapshot")
	// ErrNoSnapshot reports that a directory holds no snapshot that passes the quick
	// validity check.
	ErrNoSnapshot = errors.New("storage: no snapshot")
	// ErrUnsupportedSnapshot reports a snapshot in a format this package cannot read. Snappy
	// snapshots are read now; the error stays for callers that test for it.
	ErrUnsupportedSnapshot = errors.New("storage: unsupported snapshot compression")
)

// snapStreamSignature ends a leader's SNAP stream.
const snapStreamSignature = "BenWasHere"

// SnapSession is one live session in a snapshot.
type SnapSession struct {
	ID      int64
	Timeout int32
}

// SnapNode is one znode in a snapshot (datatree's: the tree produces and loads them).
// Path is "" for the root; nil and empty Data are distinct on disk (length -1 vs 0); ACLKey
// -1 is world:anyone ALL, not in the ACL table.
type SnapNode = datatree.SnapNode

// SnapDigest is the 3.6+ ZxidDigest section.
type SnapDigest struct {
	Zxid    int64
	Version int32
	Digest  int64
}

// SnapshotHandler receives a snapshot's contents in file order. Nil callbacks are skipped.
// Contents arrive before the seals are checked: if reading fails, discard everything the
// callbacks received. Byte slices and ACL lists passed to callbacks are freshly allocated and
// may be kept.
type SnapshotHandler struct {
	Session func(SnapSession) error
	ACL     func(key int64, acls []jute.ACL) error
	Node    func(SnapNode) error
	// Digest is called after the digest section's seal has been checked.
	Digest func(SnapDigest) error
	// LastProcessedZxid receives the 3.9 section, after its seal has been checked.
	LastProcessedZxid func(zxid int64) error
}

// ---- writing ----

// SnapshotWriter writes a snapshot file, uncompressed or compressed. Nodes come first (a fuzzy walk produces them before
// the final ACL table is known) and are spooled to a temporary file; Finish writes the file
// in ZooKeeper's order and renames it into place.
type SnapshotWriter struct {
	fs        FS
	dir       string
	zxid      int64
	comp      SnapCompression
	spoolPath string
	outPath   string
	spool     File
	bw        *bufio.Writer
	enc       jute.Encoder
	err       error
	done      bool
}

// NewSnapshotWriter starts snapshot.<zxid> in dir (a version-2 directory, created if
// missing), uncompressed.
func NewSnapshotWriter(fsys FS, dir string, zxid int64) (*SnapshotWriter, error) {
	return NewCompressedSnapshotWriter(fsys, dir, zxid, SnapUncompressed)
}

// NewCompressedSnapshotWriter starts a snapshot in format c, as ZooKeeper writes it with
// zookeeper.snapshot.compression.method set: snapshot.<zxid>, snapshot.<zxid>.gz or
// snapshot.<zxid>.snappy. The seals' checksums cover the uncompressed bytes (ZooKeeper's
// CheckedOutputStream sits in front of the compressor), so the contents are those of the
// uncompressed file.
func NewCompressedSnapshotWriter(fsys FS, dir string, zxid int64, c SnapCompression) (*SnapshotWriter, error) {
	switch c {
	case SnapUncompressed, SnapGzip, SnapSnappy:
	default:
		return nil, fmt.Errorf("storage: unknown snapshot compression %q", string(c))
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("storage: create snapshot dir: %w", err)
	}
	w := &SnapshotWriter{
		fs:        fsys,
		dir:       dir,
		zxid:      zxid,
		comp:      c,
		spoolPath: join(dir, tempPrefix+SnapName(zxid)+".nodes"),
		outPath:   join(dir, tempPrefix+SnapFileName(zxid, c)),
	}
	f, err := fsys.OpenFile(w.spoolPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("storage: snapshot spool: %w", err)
	}
	w.spool = f
	w.bw = bufio.NewWriterSize(f, 256<<10)
	w.enc.Buf = make([]byte, 0, 4096)
	return w, nil
}

// WriteNodes adds nodes in the order given; parents must come before their children.
func (w *SnapshotWriter) WriteNodes(nodes []SnapNode) error {
	if w.done {
		return errors.New("storage: snapshot writer finished")
	}
	if w.err != nil {
		return w.err
	}
	for i := range nodes {
		w.enc.Buf = appendNode(w.enc.Buf[:0], &nodes[i])
		if _, err := w.bw.Write(w.enc.Buf); err != nil {
			w.err = fmt.Errorf("storage: snapshot spool: %w", err)
			return w.err
		}
	}
	return nil
}

// Finish writes the snapshot: header, sessions (in the order given), the ACL table (by
// ascending key, which is Java's HashMap order for small keys), the nodes, the end marker,
// seal, digest section and second seal. The file is fsynced and renamed to
// snapshot.<zxid> (with the compression's suffix), and the directory fsynced. On error the temporary files are removed.
func (w *SnapshotWriter) Finish(sessions []SnapSession, acls map[int64][]jute.ACL, digestZxid, digest int64) error {
	if w.done {
		return errors.New("storage: snapshot writer finished")
	}
	err := w.finish(sessions, acls, digestZxid, digest)
	if err != nil {
		w.Abort()
		return err
	}
	w.done = true
	return nil
}

func (w *SnapshotWriter) finish(sessions []SnapSession, acls map[int64][]jute.ACL, digestZxid, digest int64) error {
	if w.err != nil {
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("storage: snapshot spool: %w", err)
	}
	if _, err := w.spool.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("storage: snapshot spool: %w", err)
	}
	err := writeSnapFile(w.fs, w.dir, w.zxid, w.comp, w.outPath, func(cw *checkedWriter) error {
		return w.writeAll(cw, sessions, acls, digestZxid, digest)
	})
	if err != nil {
		return err
	}
	w.spool.Close()
	w.spool = nil
	if err := w.fs.Remove(w.spoolPath); err != nil && !isNotExist(err) {
		return fmt.Errorf("storage: write snapshot: %w", err)
	}
	if err := w.fs.SyncDir(w.dir); err != nil {
		return fmt.Errorf("storage: write snapshot: %w", err)
	}
	return nil
}

// writeSnapFile writes a snapshot file at tmp through body, in compression c, fsyncs it,
// and renames it to its name for zxid in dir; the caller fsyncs dir. On error tmp may remain.
func writeSnapFile(fsys FS, dir string, zxid int64, c SnapCompression, tmp string, body func(*checkedWriter) error) error {
	out, err := fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("storage: write snapshot: %w", err)
	}
	// The compressor writes what it makes through a buffer of its own: both gzip and
	// snappy hand the file many small writes.
	var (
		disk              = &writeback{f: out}
		sink    io.Writer = disk
		fileBuf *bufio.Writer
		comp    io.WriteCloser
	)
	switch c {
	case SnapGzip:
		fileBuf = bufio.NewWriterSize(disk, 256<<10)
		comp = gzip.NewWriter(fileBuf)
	case SnapSnappy:
		fileBuf = bufio.NewWriterSize(disk, 256<<10)
		comp = NewSnappyWriter(fileBuf)
	}
	if comp != nil {
		sink = comp
	}
	cw := &checkedWriter{w: bufio.NewWriterSize(sink, 256<<10), h: adler32.New()}
	err = body(cw)
	if err == nil {
		err = cw.w.Flush()
	}
	if err == nil && comp != nil {
		if err = comp.Close(); err == nil {
			err = fileBuf.Flush()
		}
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("storage: write snapshot: %w", err)
	}
	if err := fsys.Rename(tmp, join(dir, SnapFileName(zxid, c))); err != nil {
		return fmt.Errorf("storage: write snapshot: %w", err)
	}
	return nil
}

// WriteSnapshot writes a view of the tree as snapshot.<zxid> in dir (a version-2 directory,
// created if missing), in compression c: the one way a snapshot file is made from a tree.
// A view is consistent and carries its ACL table, so the nodes go straight to the file,
// each encoded once. stop, when closed, abandons the snapshot (ErrSnapshotStopped); the
// file is then not renamed into place.
func WriteSnapshot(fsys FS, dir string, v *datatree.View, sessions []SnapSession, c SnapCompression, stop <-chan struct{}) error {
	switch c {
	case SnapUncompressed, SnapGzip, SnapSnappy:
	default:
		return fmt.Errorf("storage: unknown snapshot compression %q", string(c))
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("storage: create snapshot dir: %w", err)
	}
	zxid := v.LastZxid()
	tmp := join(dir, tempPrefix+SnapFileName(zxid, c))
	err := writeSnapFile(fsys, dir, zxid, c, tmp, func(cw *checkedWriter) error {
		e := jute.Encoder{Buf: make([]byte, 0, 64<<10)}
		hdr := jute.FileHeader{Magic: jute.SnapMagic, Version: 2, DBID: -1}
		hdr.Encode(&e)
		e.Buf = appendSessionsACLs(e.Buf, sessions, v.ACLs())
		if _, err := cw.Write(e.Buf); err != nil {
			return err
		}
		if err := writeView(cw, v, &e, stop); err != nil {
			return err
		}
		return writeTail(cw, &e, zxid, v.Digest())
	})
	if err != nil {
		fsys.Remove(tmp)
		return err
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("storage: write snapshot: %w", err)
	}
	return nil
}

// ErrSnapshotStopped is returned by a snapshot write abandoned through its stop channel.
var ErrSnapshotStopped = errors.New("storage: snapshot stopped")

// writeView encodes a view's nodes in pre-order to w, a batch at a time.
func writeView(w io.Writer, v *datatree.View, e *jute.Encoder, stop <-chan struct{}) error {
	walker := v.Walk()
	defer walker.Close()
	var nodes []SnapNode
	for done := false; !done; {
		select {
		case <-stop:
			return ErrSnapshotStopped
		default:
		}
		nodes, done = walker.Next(1024, nodes[:0])
		e.Buf = e.Buf[:0]
		for i := range nodes {
			n := &nodes[i]
			if len(n.Data) < directData {
				e.Buf = appendNode(e.Buf, n)
			} else {
				// The value goes to w from the node's own bytes, not through the batch.
				e.String(n.Path)
				e.Int(int32(len(n.Data)))
				if _, err := w.Write(e.Buf); err != nil {
					return err
				}
				if _, err := w.Write(n.Data); err != nil {
					return err
				}
				e.Buf = e.Buf[:0]
				e.Long(n.ACLKey)
				n.Stat.Encode(e)
			}
			if len(e.Buf) >= batchBytes || i == len(nodes)-1 {
				if _, err := w.Write(e.Buf); err != nil {
					return err
				}
				e.Buf = e.Buf[:0]
			}
		}
	}
	return nil
}

// A snapshot's batch of encoded nodes is written out once it holds batchBytes, and a value
// of directData bytes or more is written from the node itself. Without these bounds a
// batch of big values grew one buffer to tens of megabytes, copied again at each growth:
// the copy cannot be preempted, so every collection's stop of the world waited for it,
// and the core with it (a set's p99 went from ~0.1 s to ~0.8 s while a tree holding 64
// values of 1 MB was written).
const (
	batchBytes = 256 << 10
	directData = 64 << 10
)

// writeTail ends a snapshot file: the end-of-nodes marker, a seal, the digest section and
// a second seal.
func writeTail(cw *checkedWriter, e *jute.Encoder, digestZxid, digest int64) error {
	e.Buf = e.Buf[:0]
	e.String("/")
	if _, err := cw.Write(e.Buf); err != nil {
		return err
	}
	if err := cw.seal(); err != nil {
		return err
	}
	e.Buf = e.Buf[:0]
	e.Long(digestZxid)
	e.Int(jute.DigestVersion)
	e.Long(digest)
	if _, err := cw.Write(e.Buf); err != nil {
		return err
	}
	return cw.seal()
}

func (w *SnapshotWriter) writeAll(cw *checkedWriter, sessions []SnapSession, acls map[int64][]jute.ACL, digestZxid, digest int64) error {
	e := jute.Encoder{Buf: w.enc.Buf[:0]}
	hdr := jute.FileHeader{Magic: jute.SnapMagic, Version: 2, DBID: -1}
	hdr.Encode(&e)
	e.Buf = appendSessionsACLs(e.Buf, sessions, acls)
	if _, err := cw.Write(e.Buf); err != nil {
		return err
	}
	buf := make([]byte, 256<<10)
	for {
		n, err := w.spool.Read(buf)
		if n > 0 {
			if _, werr := cw.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	return writeTail(cw, &e, digestZxid, digest)
}

// Abort discards the snapshot being written.
func (w *SnapshotWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	if w.spool != nil {
		w.spool.Close()
		w.spool = nil
	}
	w.fs.Remove(w.spoolPath)
	w.fs.Remove(w.outPath)
}

type checkedWriter struct {
	w *bufio.Writer
	h hash.Hash32
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	c.h.Write(p)
	return c.w.Write(p)
}

// seal writes SnapStream.sealStream: the running checksum, then "/". Both are covered by
// later seals.
func (c *checkedWriter) seal() error {
	var b [13]byte
	binary.BigEndian.PutUint64(b[:8], uint64(c.h.Sum32()))
	binary.BigEndian.PutUint32(b[8:12], 1)
	b[12] = '/'
	_, err := c.Write(b[:])
	return err
}

func appendNode(b []byte, n *SnapNode) []byte {
	e := jute.Encoder{Buf: b}
	e.String(n.Path)
	e.Buffer(n.Data)
	e.Long(n.ACLKey)
	n.Stat.Encode(&e)
	return e.Buf
}

// appendSessionsACLs encodes what precedes the nodes in both snapshots and SNAP streams.
func appendSessionsACLs(b []byte, sessions []SnapSession, acls map[int64][]jute.ACL) []byte {
	e := jute.Encoder{Buf: b}
	e.Int(int32(len(sessions)))
	for _, s := range sessions {
		e.Long(s.ID)
		e.Int(s.Timeout)
	}
	keys := make([]int64, 0, len(acls))
	for k := range acls {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	e.Int(int32(len(keys)))
	for _, k := range keys {
		e.Long(k)
		list := acls[k]
		if list == nil {
			// ZooKeeper's reader refuses a null ACL vector.
			list = []jute.ACL{}
		}
		jute.EncodeACLs(&e, list)
	}
	return e.Buf
}

// ---- reading ----

// ReadSnapshot decodes a snapshot from r (uncompressed) and checks its seals. Decoding
// problems and seal mismatches return an error wrapping ErrCorruptSnapshot; errors from h
// are returned as they are (wrapped with context).
//
// The digest section (3.6+) and the lastProcessedZxid section (3.9+) are optional, as in
// ZooKeeper's reader: end of file where one would start means it is absent.
//
// Decoding runs on a goroutine of its own, ahead of h, whose callbacks all run on the
// caller's goroutine, in file order: building the tree and decoding the file then share
// the machine's cores.
func ReadSnapshot(r io.Reader, h SnapshotHandler) error {
	return pipelined(h, func(h SnapshotHandler) error { return readSnapshot(r, h) })
}

func readSnapshot(r io.Reader, h SnapshotHandler) error {
	sr := newStreamReader(r, adler32.New())
	magic, err := sr.int32()
	if err != nil {
		return err
	}
	if magic != jute.SnapMagic {
		return sr.corrupt(fmt.Sprintf("bad magic %#x", uint32(magic)))
	}
	if _, err := sr.int32(); err != nil { // version: ZooKeeper does not check it
		return err
	}
	if _, err := sr.int64(); err != nil { // dbid
		return err
	}
	if err := readTree(sr, h); err != nil {
		return err
	}
	if err := sr.checkSeal("seal 1"); err != nil {
		return err
	}

	var d SnapDigest
	if d.Zxid, err = sr.int64(); err != nil {
		return sr.optionalEOF(err)
	}
	if d.Version, err = sr.int32(); err != nil {
		return sr.optionalEOF(err)
	}
	if d.Version < 2 {
		// Before digest version 2 the digest was a hex string.
		s, _, err := sr.ustring()
		if err != nil {
			return sr.optionalEOF(err)
		}
		v, perr := strconv.ParseUint(s, 16, 64)
		if perr != nil {
			return sr.corrupt(fmt.Sprintf("bad digest %q", s))
		}
		d.Digest = int64(v)
	} else if d.Digest, err = sr.int64(); err != nil {
		return sr.optionalEOF(err)
	}
	if err := sr.checkSeal("seal 2"); err != nil {
		return err
	}
	if h.Digest != nil {
		if err := h.Digest(d); err != nil {
			return fmt.Errorf("storage: snapshot digest: %w", err)
		}
	}

	last, err := sr.int64()
	if err != nil {
		return sr.optionalEOF(err)
	}
	if err := sr.checkSeal("seal 3"); err != nil {
		return err
	}
	if h.LastProcessedZxid != nil {
		if err := h.LastProcessedZxid(last); err != nil {
			return fmt.Errorf("storage: snapshot last processed zxid: %w", err)
		}
	}
	// ZooKeeper ignores anything after the last section it knows.
	return nil
}

// readTree reads sessions, the ACL table and the nodes up to and including the "/" marker.
func readTree(sr *streamReader, h SnapshotHandler) error {
	count, err := sr.int32()
	if err != nil {
		return err
	}
	// Java loops "while (count > 0)", so a negative count means none.
	for ; count > 0; count-- {
		var s SnapSession
		if s.ID, err = sr.int64(); err != nil {
			return err
		}
		if s.Timeout, err = sr.int32(); err != nil {
			return err
		}
		if h.Session != nil {
			if err := h.Session(s); err != nil {
				return fmt.Errorf("storage: snapshot session: %w", err)
			}
		}
	}
	if count, err = sr.int32(); err != nil {
		return err
	}
	for ; count > 0; count-- {
		key, err := sr.int64()
		if err != nil {
			return err
		}
		acls, err := sr.acls()
		if err != nil {
			return err
		}
		if h.ACL != nil {
			if err := h.ACL(key, acls); err != nil {
				return fmt.Errorf("storage: snapshot acl: %w", err)
			}
		}
	}
	var stat [60]byte
	for {
		if n, ok, err := sr.nodeFast(); err != nil {
			return err
		} else if ok {
			if h.Node != nil {
				if err := h.Node(n); err != nil {
					return fmt.Errorf("storage: snapshot node %q: %w", n.Path, err)
				}
			}
			continue
		}
		path, null, err := sr.ustring()
		if err != nil {
			return err
		}
		if null {
			return sr.corrupt("null node path")
		}
		if path == "/" {
			return nil
		}
		n := SnapNode{Path: path}
		if n.Data, err = sr.buffer(); err != nil {
			return err
		}
		if n.ACLKey, err = sr.int64(); err != nil {
			return err
		}
		if err := sr.full(stat[:]); err != nil {
			return err
		}
		d := jute.Decoder{B: stat[:]}
		n.Stat.Decode(&d)
		if h.Node != nil {
			if err := h.Node(n); err != nil {
				return fmt.Errorf("storage: snapshot node %q: %w", path, err)
			}
		}
	}
}

// streamReader decodes jute values from a stream, optionally keeping ZooKeeper's running
// Adler32 over every byte consumed.
type streamReader struct {
	digestBuf []byte // NodeDigest's scratch
	slab      []byte // where nodeFast carves paths and data (carve)
	br        *bufio.Reader
	h         hash.Hash32 // nil: no checksum (SNAP stream)
	off       int64
	b         [8]byte
}

func newStreamReader(r io.Reader, h hash.Hash32) *streamReader {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	return &streamReader{br: br, h: h}
}

func (r *streamReader) corrupt(why string) error {
	return fmt.Errorf("%w: offset %d: %s", ErrCorruptSnapshot, r.off, why)
}

// ioErr classifies an error from the underlying stream.
func (r *streamReader) ioErr(err error) error {
	var fe flate.CorruptInputError
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return r.corrupt("truncated")
	case errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader), errors.As(err, &fe),
		errors.Is(err, errSnappy):
		return fmt.Errorf("%w: offset %d: %w", ErrCorruptSnapshot, r.off, err)
	}
	return fmt.Errorf("storage: reading snapshot at offset %d: %w", r.off, err)
}

// optionalEOF turns end of stream inside an optional trailing section into success.
func (r *streamReader) optionalEOF(err error) error {
	if errors.Is(err, errSnapEOF) {
		return nil
	}
	return err
}

// errSnapEOF marks a truncation error so optional sections can tell it apart.
var errSnapEOF = errors.New("end of stream")

// nodeFast decodes a whole node record from the reader's buffer when it is there: one
// buffer look-up and one checksum update instead of one per field. It reports false, having
// consumed nothing, for the "/" end marker, records larger than the buffer, and anything
// unusual, which the field-by-field path then reads (and reports, if it is bad).
func (r *streamReader) nodeFast() (SnapNode, bool, error) {
	const fixed = 8 + jute.StatPersistedSize // ACL key and stat
	b, _ := r.br.Peek(4)
	if len(b) < 4 {
		return SnapNode{}, false, nil
	}
	pl := int(int32(binary.BigEndian.Uint32(b)))
	if pl < 2 || pl > r.br.Size()/2 {
		return SnapNode{}, false, nil
	}
	b, _ = r.br.Peek(4 + pl + 4)
	if len(b) < 4+pl+4 {
		return SnapNode{}, false, nil
	}
	dl := int(int32(binary.BigEndian.Uint32(b[4+pl:])))
	if dl < -1 {
		return SnapNode{}, false, nil
	}
	total := 4 + pl + 4 + max(dl, 0) + fixed
	if total > r.br.Size() {
		return SnapNode{}, false, nil
	}
	b, _ = r.br.Peek(total)
	if len(b) < total {
		return SnapNode{}, false, nil
	}
	var n SnapNode
	if pb := b[4 : 4+pl]; utf8.Valid(pb) {
		n.Path = unsafe.String(unsafe.SliceData(r.carve(pb)), pl)
	} else {
		n.Path = jute.JavaString(pb)
	}
	rest := b[4+pl+4:]
	if dl >= 0 {
		n.Data = r.carve(rest[:dl])
		rest = rest[dl:]
	}
	n.ACLKey = int64(binary.BigEndian.Uint64(rest))
	n.Stat.Decode(&jute.Decoder{B: rest[8:fixed]})
	// Hashed here, on the decoding goroutine, the node's digest costs the loader nothing.
	n.Digest, r.digestBuf = datatree.NodeDigest(r.digestBuf, n.Path, n.Data, &n.Stat)
	if r.h != nil {
		r.h.Write(b)
	}
	r.off += int64(total)
	if _, err := r.br.Discard(total); err != nil {
		return SnapNode{}, false, r.ioErr(err)
	}
	return n, true, nil
}

// carve copies b into the reader's slab: the nodes of a snapshot share a few large
// allocations instead of making two small ones each. A slab is never written again once
// carved, so what a handler keeps stays valid (and keeps its slab alive).
func (r *streamReader) carve(b []byte) []byte {
	const slabSize = 64 << 10
	if len(b) == 0 {
		return []byte{} // empty, not null, data
	}
	if len(b) > slabSize/4 {
		return append(make([]byte, 0, len(b)), b...)
	}
	if cap(r.slab)-len(r.slab) < len(b) {
		r.slab = make([]byte, 0, slabSize)
	}
	start := len(r.slab)
	r.slab = append(r.slab, b...)
	return r.slab[start:len(r.slab):len(r.slab)]
}

func (r *streamReader) full(p []byte) error {
	n, err := io.ReadFull(r.br, p)
	if r.h != nil {
		r.h.Write(p[:n])
	}
	r.off += int64(n)
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return fmt.Errorf("%w (%w)", r.ioErr(err), errSnapEOF)
		}
		return r.ioErr(err)
	}
	return nil
}

func (r *streamReader) int32() (int32, error) {
	if err := r.full(r.b[:4]); err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(r.b[:4])), nil
}

func (r *streamReader) int64() (int64, error) {
	if err := r.full(r.b[:8]); err != nil {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(r.b[:8])), nil
}

// bytes reads n bytes. Large lengths are read in growing chunks so a corrupt length cannot
// make us allocate more than the stream actually holds.
func (r *streamReader) bytes(n int) ([]byte, error) {
	const direct = 1 << 20
	if n <= direct {
		p := make([]byte, n)
		return p, r.full(p)
	}
	buf := make([]byte, 0, direct)
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(n, 2*cap(buf))-len(buf))
		}
		end := min(n, cap(buf))
		if err := r.full(buf[len(buf):end]); err != nil {
			return nil, err
		}
		buf = buf[:end]
	}
	return buf, nil
}

func (r *streamReader) length() (int, bool, error) {
	n, err := r.int32()
	if err != nil {
		return 0, false, err
	}
	if n == -1 {
		return 0, true, nil
	}
	if n < 0 {
		return 0, false, r.corrupt(fmt.Sprintf("bad length %d", n))
	}
	return int(n), false, nil
}

// buffer reads a jute buffer; null is nil.
func (r *streamReader) buffer() ([]byte, error) {
	n, null, err := r.length()
	if err != nil || null {
		return nil, err
	}
	return r.bytes(n)
}

// ustring reads a jute ustring and reports null.
func (r *streamReader) ustring() (string, bool, error) {
	n, null, err := r.length()
	if err != nil || null {
		return "", null, err
	}
	p, err := r.bytes(n)
	if err != nil {
		return "", false, err
	}
	// ZooKeeper reads snapshot strings with BinaryInputArchive: malformed UTF-8 (and the
	// CESU-8 its writer makes of characters above U+FFFF, which ACL ids may hold) reads as
	// U+FFFD, not as corruption.
	return jute.JavaString(p), false, nil
}

func (r *streamReader) acls() ([]jute.ACL, error) {
	n, null, err := r.length()
	if err != nil {
		return nil, err
	}
	if null {
		// ReferenceCountedACLCache.deserialize: "missing acls".
		return nil, r.corrupt("null ACL list")
	}
	list := make([]jute.ACL, 0, min(n, 16))
	for i := 0; i < n; i++ {
		var a jute.ACL
		if a.Perms, err = r.int32(); err != nil {
			return nil, err
		}
		if a.ID.Scheme, _, err = r.ustring(); err != nil {
			return nil, err
		}
		if a.ID.ID, _, err = r.ustring(); err != nil {
			return nil, err
		}
		list = append(list, a)
	}
	return list, nil
}

// checkSeal is SnapStream.checkSealIntegrity: the stored checksum must equal the running
// checksum of everything before it; a "/" follows.
func (r *streamReader) checkSeal(which string) error {
	want := uint64(r.h.Sum32())
	got, err := r.int64()
	if err != nil {
		return err
	}
	s, _, err := r.ustring()
	if err != nil {
		return err
	}
	if uint64(got) != want {
		return r.corrupt(fmt.Sprintf("%s: checksum %#x, computed %#x", which, uint64(got), want))
	}
	if s != "/" {
		return r.corrupt(fmt.Sprintf("%s: terminator %q", which, s))
	}
	return nil
}

// ---- files ----

// SnapshotFile names one snapshot in a directory.
type SnapshotFile struct {
	Name string // base name, e.g. "snapshot.3c" or "snapshot.3c.gz"
	Zxid int64
}

// FindSnapshots lists the snapshot files in dir, newest (highest zxid) first. It does not
// check them; a missing dir has none.
func FindSnapshots(fsys FS, dir string) ([]SnapshotFile, error) {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		if isNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("storage: list snapshots: %w", err)
	}
	var out []SnapshotFile
	for _, n := range names {
		if z, _, ok := ParseSnapName(n); ok {
			out = append(out, SnapshotFile{Name: n, Zxid: z})
		}
	}
	slices.SortFunc(out, func(a, b SnapshotFile) int {
		if c := cmpInt64(b.Zxid, a.Zxid); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// ValidSnapshot is ZooKeeper's quick check (SnapStream.isValidSnapshot): an uncompressed
// snapshot is at least 10 bytes and ends with the ustring "/"; a compressed one starts with
// its format's magic bytes.
func ValidSnapshot(fsys FS, dir string, sf SnapshotFile) (bool, error) {
	name := join(dir, sf.Name)
	size, err := fsys.Stat(name)
	if err != nil {
		return false, err
	}
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	_, suffix, _ := ParseSnapName(sf.Name)
	var want []byte
	var at int64
	switch suffix {
	case ".gz":
		want = []byte{0x1f, 0x8b}
	case ".snappy":
		want = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}
	default:
		if size < 10 {
			return false, nil
		}
		want = []byte{0, 0, 0, 1, '/'}
		at = size - 5
	}
	got := make([]byte, len(want))
	if _, err := f.ReadAt(got, at); err != nil {
		if err == io.EOF {
			return false, nil
		}
		return false, err
	}
	return bytes.Equal(got, want), nil
}

// ReadSnapshotFile reads dir/sf, decompressing a .gz or .snappy snapshot.
func ReadSnapshotFile(fsys FS, dir string, sf SnapshotFile, h SnapshotHandler) error {
	_, suffix, ok := ParseSnapName(sf.Name)
	if !ok {
		return fmt.Errorf("storage: %q is not a snapshot name", sf.Name)
	}
	f, err := fsys.OpenFile(join(dir, sf.Name), os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("storage: open snapshot: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if suffix == ".gz" {
		zr, err := gzip.NewReader(bufio.NewReaderSize(f, 64<<10))
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrCorruptSnapshot, sf.Name, err)
		}
		defer zr.Close()
		r = zr
	} else if suffix == ".snappy" {
		sr, err := newSnappyReader(f)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrCorruptSnapshot, sf.Name, err)
		}
		r = sr
	}
	if err := ReadSnapshot(r, h); err != nil {
		return fmt.Errorf("%s: %w", sf.Name, err)
	}
	return nil
}

// LoadNewest reads the newest snapshot in dir that passes the quick validity check and
// reads without error, falling back to older ones as ZooKeeper does. handler is called
// before each attempt and must return callbacks that start from an empty state (a failed
// attempt may have delivered part of a snapshot).
//
// With no snapshot passing the quick check, it returns an error wrapping ErrNoSnapshot:
// a fresh database. If some passed but none could be read, the error wraps the failures
// (typically ErrCorruptSnapshot) and not ErrNoSnapshot.
func LoadNewest(fsys FS, dir string, logger *slog.Logger, handler func(SnapshotFile) SnapshotHandler) (SnapshotFile, error) {
	if logger == nil {
		logger = slog.Default()
	}
	files, err := FindSnapshots(fsys, dir)
	if err != nil {
		return SnapshotFile{}, err
	}
	var errs []error
	for _, sf := range files {
		ok, err := ValidSnapshot(fsys, dir, sf)
		if err != nil {
			logger.Warn("cannot check snapshot", "file", join(dir, sf.Name), "error", err)
			errs = append(errs, err)
			continue
		}
		if !ok {
			logger.Warn("skipping invalid snapshot", "file", join(dir, sf.Name))
			continue
		}
		err = ReadSnapshotFile(fsys, dir, sf, handler(sf))
		if err == nil {
			return sf, nil
		}
		logger.Warn("problem reading snapshot; trying an older one", "file", join(dir, sf.Name), "error", err)
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return SnapshotFile{}, fmt.Errorf("storage: no readable snapshot in %s: %w", dir, errors.Join(errs...))
	}
	return SnapshotFile{}, fmt.Errorf("%w in %s", ErrNoSnapshot, dir)
}

// CleanTemp removes leftovers of snapshot writes interrupted by a crash. Call it at start-up,
// before any SnapshotWriter exists.
func CleanTemp(fsys FS, dir string) error {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		if isNotExist(err) {
			return nil
		}
		return err
	}
	for _, n := range names {
		if strings.HasPrefix(n, tempPrefix+snapPrefix) {
			if err := fsys.Remove(join(dir, n)); err != nil && !isNotExist(err) {
				return fmt.Errorf("storage: clean temp files: %w", err)
			}
		}
	}
	return nil
}

// ---- SNAP stream ----

// SnapStreamWriter writes the body of a leader's SNAP packet: sessions, ACL table, nodes,
// "/", then the "BenWasHere" signature, with no header and no seals.
type SnapStreamWriter struct {
	bw  *bufio.Writer
	buf []byte
	err error
}

// NewSnapStreamWriter writes the sessions and ACL table to w; nodes follow.
func NewSnapStreamWriter(w io.Writer, sessions []SnapSession, acls map[int64][]jute.ACL) (*SnapStreamWriter, error) {
	s := &SnapStreamWriter{bw: bufio.NewWriterSize(w, 64<<10)}
	s.buf = appendSessionsACLs(make([]byte, 0, 4096), sessions, acls)
	if _, err := s.bw.Write(s.buf); err != nil {
		return nil, err
	}
	return s, nil
}

// WriteNodes writes nodes; parents must come before their children.
func (s *SnapStreamWriter) WriteNodes(nodes []SnapNode) error {
	if s.err != nil {
		return s.err
	}
	for i := range nodes {
		s.buf = appendNode(s.buf[:0], &nodes[i])
		if _, err := s.bw.Write(s.buf); err != nil {
			s.err = err
			return err
		}
	}
	return nil
}

// Finish writes the end marker and signature and flushes.
func (s *SnapStreamWriter) Finish() error {
	if s.err != nil {
		return s.err
	}
	e := jute.Encoder{Buf: s.buf[:0]}
	e.String("/")
	e.String(snapStreamSignature)
	if _, err := s.bw.Write(e.Buf); err != nil {
		return err
	}
	return s.bw.Flush()
}

// WriteSnapStream writes a view as the body of a leader's SNAP packet.
func WriteSnapStream(w io.Writer, v *datatree.View, sessions []SnapSession) error {
	s, err := NewSnapStreamWriter(w, sessions, v.ACLs())
	if err != nil {
		return err
	}
	e := jute.Encoder{Buf: s.buf[:0]}
	if err := writeView(s.bw, v, &e, nil); err != nil {
		return err
	}
	s.buf = e.Buf
	return s.Finish()
}

// ReadSnapStream reads a SNAP stream body from r, which it does not read past: the quorum
// packets that follow stay in r.
func ReadSnapStream(r *bufio.Reader, h SnapshotHandler) error {
	return pipelined(h, func(h SnapshotHandler) error { return readSnapStream(r, h) })
}

func readSnapStream(r *bufio.Reader, h SnapshotHandler) error {
	sr := newStreamReader(r, nil)
	if err := readTree(sr, h); err != nil {
		return err
	}
	sig, _, err := sr.ustring()
	if err != nil {
		return err
	}
	if sig != snapStreamSignature {
		return sr.corrupt(fmt.Sprintf("missing signature, got %q", sig))
	}
	return nil
}
