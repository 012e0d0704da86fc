package difffuzz

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// javaStringsFile is jute's golden file of byte strings: each line is a string in hex and
// what ZooKeeper's own jute jar (BinaryInputArchive.readString, BinaryOutputArchive.writeString)
// makes of it.
const javaStringsFile = "../../../jute/testdata/java-strings.txt"

type stringCase struct {
	in   []byte // sent as the ustring's bytes, not re-encoded
	java []byte // what ZooKeeper's jute writes back
}

func readStringCases(t *testing.T) []stringCase {
	f, err := os.Open(javaStringsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []stringCase
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		a, b, ok := strings.Cut(sc.Text(), " ")
		x, err1 := hex.DecodeString(strings.TrimPrefix(a, "-"))
		y, err2 := hex.DecodeString(strings.TrimPrefix(b, "-"))
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("%s: bad line %q", javaStringsFile, sc.Text())
		}
		cases = append(cases, stringCase{in: x, java: y})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 300 {
		t.Fatalf("%s: only %d strings", javaStringsFile, len(cases))
	}
	return cases
}

// rawString encodes b as a ustring byte for byte: jute.Encoder.String would turn a 4-byte
// UTF-8 sequence into CESU-8, and a client that is not Java sends it as it is.
func rawString(b []byte) []byte {
	e := jute.Encoder{}
	e.Int(int32(len(b)))
	e.Buf = append(e.Buf, b...)
	return e.Buf
}

// probeStrings sends the byte strings to tgt as paths (sync, create, getData), as digest ACL
// ids (setACL, getACL) and as digest credentials (addAuth, whoAmI), and returns one line per
// answer with every byte that must match ZooKeeper's (reply code and body, without zxids
// and times).
func probeStrings(ctx context.Context, tgt Target, cases []stringCase) ([]string, error) {
	r := &runner{ctx: ctx, tgt: tgt}
	ctl, err := r.control()
	if err != nil {
		return nil, err
	}
	defer ctl.nc.Close()
	if err := r.clear(ctl); err != nil {
		return nil, err
	}
	var lines []string
	call := func(what string, in []byte, op jute.OpCode, body []byte, keep func([]byte) []byte) error {
		h, b, err := ctl.call(1, op, body)
		if err != nil {
			return fmt.Errorf("%s %x: %w", what, in, err)
		}
		if keep != nil && h.Err == 0 {
			b = keep(b)
		} else {
			b = nil
		}
		lines = append(lines, fmt.Sprintf("%s %x: %v %x", what, in, h.Err, b))
		return nil
	}
	all := func(b []byte) []byte { return b }
	withoutStat := func(b []byte) []byte { return b[:max(0, len(b)-jute.StatSize)] }

	root := rawString([]byte(Root))
	e := jute.Encoder{Buf: bytes.Clone(root)}
	e.Buffer([]byte{})
	jute.EncodeACLs(&e, jute.OpenACLUnsafe)
	e.Int(0)
	if err := call("create", []byte(Root), jute.OpCreate, e.Buf, all); err != nil {
		return nil, err
	}
	for _, c := range cases {
		if err := call("sync", c.in, jute.OpSync, rawString(c.in), all); err != nil {
			return nil, err
		}
	}
	for _, c := range cases {
		path := rawString(append([]byte(Root+"/"), c.in...))
		e := jute.Encoder{Buf: path}
		e.Buffer([]byte("x"))
		jute.EncodeACLs(&e, jute.OpenACLUnsafe)
		e.Int(0)
		if err := call("create", c.in, jute.OpCreate, e.Buf, all); err != nil {
			return nil, err
		}
		if err := call("getData", c.in, jute.OpGetData, append(bytes.Clone(path), 0), withoutStat); err != nil {
			return nil, err
		}
	}
	for _, c := range cases {
		e := jute.Encoder{Buf: bytes.Clone(root)}
		e.Int(2)
		e.Int(jute.PermAll)
		e.String("digest")
		e.Buf = append(e.Buf, rawString(append(bytes.Clone(c.in), ":x"...))...)
		(&jute.ACL{Perms: jute.PermRead, ID: jute.WorldAnyone}).Encode(&e)
		e.Int(-1)
		if err := call("setACL", c.in, jute.OpSetACL, e.Buf, nil); err != nil {
			return nil, err
		}
		if err := call("getACL", c.in, jute.OpGetACL, root, withoutStat); err != nil {
			return nil, err
		}
	}
	// Digest credentials, forty to a session: whoAmI lists the ids the server made of them.
	for i := 0; i < len(cases); i += 40 {
		nc, resp, err := handshake(ctx, tgt.Addr, &jute.ConnectRequest{TimeOut: sessionTimeout, Passwd: make([]byte, 16)})
		if err != nil || resp == nil {
			return nil, fmt.Errorf("session for auth: %v %+v", err, resp)
		}
		s := &session{nc: nc, id: resp.SessionID}
		for _, c := range cases[i:min(i+40, len(cases))] {
			auth := jute.Marshal(&jute.AuthPacket{Scheme: "digest", Auth: append(bytes.Clone(c.in), ":pw"...)})
			h, _, err := s.call(jute.XidAuth, jute.OpAuth, auth)
			if err != nil {
				nc.Close()
				return nil, fmt.Errorf("auth %x: %w", c.in, err)
			}
			lines = append(lines, fmt.Sprintf("auth %x: %v", c.in, h.Err))
		}
		h, b, err := s.call(1, jute.OpWhoAmI, nil)
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("whoAmI: %w", err)
		}
		lines = append(lines, fmt.Sprintf("whoAmI after strings %d..: %v %s", i, h.Err, clientInfos(b)))
		s.call(2, jute.OpCloseSession, nil)
		nc.Close()
	}
	if err := r.clear(ctl); err != nil {
		return lines, err
	}
	return lines, nil
}

// clientInfos lists a WhoAmIResponse's entries, each as its raw bytes, sorted: ZooKeeper
// keeps a connection's ids in a hash set, so their order is not the order of the auths.
func clientInfos(b []byte) string {
	d := jute.NewDecoder(b)
	n := int(d.Int())
	var out []string
	for i := 0; i < n && d.Err() == nil; i++ {
		start := d.Off
		d.Buffer() // scheme: a ustring's bytes, taken as they are
		d.Buffer() // user
		out = append(out, hex.EncodeToString(b[start:d.Off]))
	}
	if d.Err() != nil || d.Remaining() != 0 {
		return fmt.Sprintf("malformed %x", b)
	}
	sort.Strings(out)
	return fmt.Sprintf("%d: %s", n, strings.Join(out, " "))
}

// TestStringsMatchZooKeeper sends every string of jute's golden file, as path, ACL id and
// digest credential, to Apache ZooKeeper and zkd, and requires the same answers byte for
// byte: ZooKeeper decodes ustrings with new String(b, UTF_8) and writes characters above
// U+FFFF as CESU-8, and zkd must echo, store and reject exactly as it does.
func TestStringsMatchZooKeeper(t *testing.T) {
	cases := readStringCases(t)
	pair, refDir, zkdDir := startPairDirs(t)
	ctx := context.Background()
	ref, err := probeStrings(ctx, pair.Ref, cases)
	if err != nil {
		t.Fatalf("zookeeper: %v", err)
	}
	// The harness's own check: ZooKeeper echoes each sync path as its jute jar writes it.
	for i, c := range cases {
		want := fmt.Sprintf("sync %x: %v %x", c.in, jute.Code(0), rawString(c.java))
		if got := ref[1+i]; got != want {
			t.Fatalf("zookeeper answered %q, the golden file says %q", got, want)
		}
	}
	got, err := probeStrings(ctx, pair.Zkd, cases)
	if err != nil {
		t.Fatalf("zkd: %v", err)
	}
	if len(got) != len(ref) {
		t.Fatalf("zkd gave %d answers, zookeeper %d", len(got), len(ref))
	}
	diffs := 0
	for i := range ref {
		if got[i] != ref[i] {
			diffs++
			if diffs <= 20 {
				t.Errorf("answer %d:\nzookeeper: %s\n      zkd: %s", i, ref[i], got[i])
			}
		}
	}
	if diffs > 0 {
		t.Errorf("%d of %d answers differ", diffs, len(ref))
	}
	t.Logf("%d strings, %d answers compared", len(cases), len(ref))

	// What the requests wrote: every create, setACL and error txn, with its path, data and
	// ACL ids as the log holds them, must be ZooKeeper's bytes.
	refTxns, zkdTxns := loggedTxns(t, refDir), loggedTxns(t, zkdDir)
	if len(refTxns) < len(cases) || len(zkdTxns) != len(refTxns) {
		t.Fatalf("zookeeper logged %d txns, zkd %d", len(refTxns), len(zkdTxns))
	}
	diffs = 0
	for i := range refTxns {
		if zkdTxns[i] != refTxns[i] {
			diffs++
			if diffs <= 10 {
				t.Errorf("logged txn %d:\nzookeeper: %s\n      zkd: %s", i, refTxns[i], zkdTxns[i])
			}
		}
	}
	if diffs > 0 {
		t.Errorf("%d of %d logged txns differ", diffs, len(refTxns))
	}
	t.Logf("%d logged txns compared", len(refTxns))
}

// startPairDirs is startPair, also returning each server's data directory.
func startPairDirs(t *testing.T) (Pair, string, string) {
	t.Helper()
	refzk.Require(t)
	ref := refzk.StartStandalone(t, refzk.Options{
		TickTime: 2000,
		SystemProperties: []string{
			"zookeeper.DigestAuthenticationProvider.superDigest=" + SuperDigest,
			"zookeeper.preAllocSize=1024",
		},
	})
	z := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.TickTime = 2000
		c.SuperDigest = SuperDigest
	}))
	super := "super:" + SuperPassword
	return Pair{
		Ref: Target{Name: "zookeeper", Addr: ref.Addr(), SuperAuth: super},
		Zkd: Target{Name: "zkd", Addr: z.Addr(), SuperAuth: super},
	}, ref.DataDir(), z.DataDir()
}

// loggedTxns reads the txn log of a data directory: one line per create, delete, setACL or
// error txn, its type and its record's bytes (no header: times, zxids and session ids
// differ; no digest). The deletes come last and sorted: the runner's clean-up deletes in
// getChildren's order, which ZooKeeper leaves to a hash set.
func loggedTxns(t *testing.T, dataDir string) []string {
	var out, deletes []string
	_, err := storage.ReadLog(storage.OSFS{}, filepath.Join(dataDir, "version-2"), 0, func(_ int64, txn []byte) error {
		lt, err := jute.DecodeTxn(txn)
		if err != nil {
			return err
		}
		switch lt.Header.Type {
		case jute.OpCreate, jute.OpDelete, jute.OpSetACL, jute.OpError:
		default:
			return nil
		}
		body := txn[jute.TxnHeaderSize:]
		if lt.Digest != nil {
			body = body[:len(body)-12]
		}
		line := fmt.Sprintf("%v %x", lt.Header.Type, body)
		if lt.Header.Type == jute.OpDelete {
			deletes = append(deletes, line)
		} else {
			out = append(out, line)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading the log in %s: %v", dataDir, err)
	}
	sort.Strings(deletes)
	return append(out, deletes...)
}
