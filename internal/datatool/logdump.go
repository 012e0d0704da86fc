package datatool

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/jute"
)

// Options shape the dumps.
type Options struct {
	// Loc is the time zone dates print in (Java uses the JVM's default zone); nil means
	// time.Local.
	Loc *time.Location
	// JSON prints one JSON object per line instead of the ZooKeeper tool's text.
	JSON bool
	// Data prints each znode's data (base64) instead of its length, as SnapshotFormatter -d.
	Data bool
}

func (o Options) loc() *time.Location {
	if o.Loc == nil {
		return time.Local
	}
	return o.Loc
}

// ErrDamaged reports a file that is torn or corrupt; the dump printed what could be read.
var ErrDamaged = errors.New("damaged file")

// javaOpNames is Request.op2String.
var javaOpNames = map[jute.OpCode]string{
	jute.OpNotification: "notification", jute.OpCreate: "create", jute.OpDelete: "delete",
	jute.OpExists: "exists", jute.OpGetData: "getData", jute.OpSetData: "setData",
	jute.OpGetACL: "getACL", jute.OpSetACL: "setACL", jute.OpGetChildren: "getChildren",
	jute.OpSync: "sync", jute.OpPing: "ping", 12: "getChildren2", jute.OpCheck: "check",
	jute.OpMulti: "multi", 15: "create2", jute.OpReconfig: "reconfig",
	jute.OpCheckWatches: "checkWatches", jute.OpRemoveWatches: "removeWatches",
	jute.OpCreateContainer: "createContainer", jute.OpDeleteContainer: "deleteContainer",
	jute.OpCreateTTL: "createTtl", jute.OpMultiRead: "multiRead", jute.OpAuth: "auth",
	jute.OpSetWatches: "setWatches", 105: "setWatches2", jute.OpSASL: "sasl",
	jute.OpGetEphemerals: "getEphemerals", jute.OpGetAllChildrenNumber: "getAllChildrenNumber",
	jute.OpCreateSession: "createSession", jute.OpCloseSession: "closeSession",
	jute.OpError: "error", jute.OpWhoAmI: "whoAmI",
}

func opName(t jute.OpCode) string {
	if n, ok := javaOpNames[t]; ok {
		return n
	}
	return "unknown " + strconv.Itoa(int(t))
}

// DumpLog prints the txn log file at path as ZooKeeper's TxnLogToolkit does (or as JSON
// lines). An entry whose checksum does not match is printed twice, first prefixed with
// "CRC ERROR - ", as the toolkit does. A torn or corrupt tail ends the dump with an error
// wrapping ErrDamaged.
func DumpLog(w io.Writer, path string, opts Options) error {
	f, err := openLogHeader(path)
	if err != nil {
		return err
	}
	if !opts.JSON {
		fmt.Fprintf(w, "ZooKeeper Transactional Log File with dbid %d txnlog format version %d\n", f.DBID, f.Version)
	}
	enc := json.NewEncoder(w)
	scan, err := storage.ScanLogFile(storage.OSFS{}, path, true, func(e storage.LogEntry) error {
		if opts.JSON {
			return enc.Encode(logEntryJSON(e))
		}
		line := txnLine(e.Txn, opts.loc())
		if !e.ChecksumOK {
			if _, err := io.WriteString(w, "CRC ERROR - "+line); err != nil {
				return err
			}
		}
		_, err := io.WriteString(w, line)
		return err
	})
	if err != nil {
		return err
	}
	if scan.Status != storage.LogClean {
		return fmt.Errorf("%w: %s: %s entry at offset %d (%s) after %d txns", ErrDamaged, path, scan.Status, scan.StopAt, scan.StopCause, scan.Entries)
	}
	if !opts.JSON {
		fmt.Fprintf(w, "EOF reached after %d txns.\n", scan.Entries)
	}
	return nil
}

// openLogHeader reads and checks a log file's header, as the toolkit does before dumping.
func openLogHeader(path string) (jute.FileHeader, error) {
	var h jute.FileHeader
	f, err := storage.OSFS{}.OpenFile(path, 0, 0)
	if err != nil {
		return h, err
	}
	defer f.Close()
	var b [16]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return h, fmt.Errorf("%w: %s: short file header", ErrDamaged, path)
	}
	h.Decode(jute.NewDecoder(b[:]))
	if h.Magic != jute.LogMagic {
		return h, fmt.Errorf("%w: invalid magic number for %s", ErrDamaged, path)
	}
	return h, nil
}

// txnLine is TxnLogToolkit.printTxn's line, newline included.
func txnLine(txn []byte, loc *time.Location) string {
	var hdr jute.TxnHeader
	hdr.Decode(jute.NewDecoder(txn))
	body := ""
	if lt, err := jute.DecodeTxn(txn); err == nil {
		body = txnString(lt.Body)
	}
	s := fmt.Sprintf("%s session 0x%s cxid 0x%s zxid 0x%s %s %s",
		javaShortLongDate(hdr.Time, loc),
		strconv.FormatUint(uint64(hdr.ClientID), 16),
		strconv.FormatUint(uint64(int64(hdr.Cxid)), 16),
		strconv.FormatUint(uint64(hdr.Zxid), 16),
		opName(hdr.Type), body)
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}

// txnString is TxnLogToolkit.getFormattedTxnStr.
func txnString(r jute.Record) string {
	switch t := r.(type) {
	case *jute.CreateTxn:
		pcv := t.ParentCVersion
		if t.V0 {
			pcv = -1
		}
		return t.Path + "," + javaUTF8(t.Data) + "," + aclListString(t.ACL) + "," +
			strconv.FormatBool(t.Ephemeral) + "," + strconv.Itoa(int(pcv))
	case *jute.SetDataTxn:
		return t.Path + "," + javaUTF8(t.Data) + "," + strconv.Itoa(int(t.Version))
	case *jute.CreateContainerTxn:
		return t.Path + "," + javaUTF8(t.Data) + "," + aclListString(t.ACL) + "," + strconv.Itoa(int(t.ParentCVersion))
	case *jute.CreateTTLTxn:
		return t.Path + "," + javaUTF8(t.Data) + "," + aclListString(t.ACL) + "," +
			strconv.Itoa(int(t.ParentCVersion)) + "," + strconv.FormatInt(t.TTL, 10)
	case *jute.MultiTxn:
		parts := make([]string, len(t.Txns))
		for i, sub := range t.Txns {
			parts[i] = opName(sub.Type) + ":" + javaUTF8(sub.Data)
		}
		return strings.Join(parts, ";")
	}
	// Everything else prints through Record.toString (ToStringOutputArchive).
	a := newToString()
	a.startRecord(false)
	switch t := r.(type) {
	case *jute.PathRequest: // DeleteTxn
		a.str(t.Path)
	case *jute.PathVersionRequest: // CheckVersionTxn
		a.str(t.Path)
		a.long(int64(t.Version))
	case *jute.SetACLTxn:
		a.str(t.Path)
		a.acls(t.ACL)
		a.long(int64(t.Version))
	case *jute.ErrorTxn:
		a.long(int64(t.Err))
	case *jute.CreateSessionTxn:
		a.long(int64(t.TimeOut))
	case *jute.CloseSessionTxn:
		if t.NoBody {
			return "" // Java reads no record: the txn is null
		}
		a.startVector()
		for _, p := range t.Paths2Delete {
			a.str(p)
		}
		a.endVector()
	default:
		return ""
	}
	a.endRecord(false)
	return a.sb.String()
}

// logEntryJSON is one --json line of a log dump.
func logEntryJSON(e storage.LogEntry) map[string]any {
	m := map[string]any{"offset": e.Offset, "zxid": hexZxid(e.Zxid), "checksumOK": e.ChecksumOK}
	lt, err := jute.DecodeTxn(e.Txn)
	m["session"] = hexZxid(lt.Header.ClientID)
	m["cxid"] = lt.Header.Cxid
	m["time"] = lt.Header.Time
	m["type"] = opName(lt.Header.Type)
	if err != nil {
		m["error"] = err.Error()
		return m
	}
	m["txn"] = bodyJSON(lt.Body)
	if lt.Digest != nil {
		m["digest"] = map[string]any{"version": lt.Digest.Version, "treeDigest": lt.Digest.TreeDigest}
	}
	return m
}

func bodyJSON(r jute.Record) any {
	mt, ok := r.(*jute.MultiTxn)
	if !ok {
		return camelJSON(r)
	}
	subs := make([]map[string]any, len(mt.Txns))
	for i, sub := range mt.Txns {
		s := map[string]any{"type": opName(sub.Type)}
		if body := jute.NewTxnBody(sub.Type); body != nil {
			d := jute.NewDecoder(sub.Data)
			body.Decode(d)
			if d.Err() == nil {
				s["txn"] = camelJSON(body)
			}
		}
		if _, ok := s["txn"]; !ok {
			s["data"] = sub.Data
		}
		subs[i] = s
	}
	return map[string]any{"txns": subs}
}

func hexZxid(v int64) string { return "0x" + strconv.FormatUint(uint64(v), 16) }
