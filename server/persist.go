package server

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/gctune"
	"github.com/zkd-io/zkd/internal/prep"
	"github.com/zkd-io/zkd/internal/session"
	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/internal/zab"
	"github.com/zkd-io/zkd/jute"
)

type logItem struct {
	zxid int64
	data []byte
	roll bool
	// buf, when set, holds data and goes back to txnBufs once the log has copied it.
	buf *[]byte
	// op, when set, runs on the storage goroutine once everything queued before it is
	// written and synced; what it returns, if not nil, then runs on the core.
	op func() func()
}

// persist is the storage side of the pipeline. The storage goroutine owns the log and does
// every disk operation the core needs, in the order the core queued them: appends (group
// commit), epoch files, truncation, reloading the data directory, the snapshot of a SNAP
// sync. The core never waits for it: completions come back as events.
type persist struct {
	txlog         *storage.Log // the storage goroutine's once serving
	logCh         chan logItem
	durable       atomic.Int64
	durableSignal chan struct{}
	logDone       chan struct{}
	// failed: a storage failure stopped the server; nothing more may reach the disk.
	failed atomic.Bool
	// lastQueued is the zxid of the last txn the core queued for the log (core-owned).
	lastQueued int64

	// completions of storage operations, for the core, in order
	doneMu     sync.Mutex
	doneQueue  []func()
	doneSignal chan struct{}
}

func (s *Server) snapDir() string { return filepath.Join(s.cfg.DataDir, "version-2") }
func (s *Server) logDir() string  { return filepath.Join(s.cfg.DataLogDir, "version-2") }

// loaded is the data directory's state as recovery rebuilt it, for the core to install.
type loaded struct {
	tree     *datatree.Tree
	history  historyRing     // the last txns replayed
	sessions map[int64]int32 // live sessions and their timeouts
	snapZxid int64           // the snapshot it started from
	replayed int             // txns replayed from the log after it
	// damaged: the log lost txns to damage and has not been refilled since (openLog).
	damaged bool
}

// recover loads the data directory at start-up, before anything runs concurrently.
func (s *Server) recover() error {
	ld, err := s.load()
	if err != nil {
		return err
	}
	s.install(ld)
	// Like ZooKeeper, snapshot at start, so the next recovery replays only what comes after
	// it. An empty database is snapshotted at once (snapshot.0); otherwise the snapshot is
	// taken in the background once serving (the log holds everything until then).
	if ld.snapZxid == 0 && ld.replayed == 0 {
		return s.snapshotNow()
	}
	s.snappedZxid.Store(ld.snapZxid)
	s.startSnapshot = s.worthSnapshot(ld.snapZxid)
	return nil
}

// load opens the log (cutting a torn or corrupt tail back to the last valid entry), loads
// the newest valid snapshot and replays the log after it. It touches no core state: at
// start-up it runs before the core, later on the storage goroutine, which owns the log.
func (s *Server) load() (*loaded, error) {
	fs := s.cfg.FS
	for _, d := range []string{s.snapDir(), s.logDir()} {
		if err := fs.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("server: create %s: %w", d, err)
		}
	}
	start := time.Now()
	// Collecting garbage while recovering is wasted work: what the tree keeps is live, and
	// what it does not (the decoded copies of nodes) is freed in one collection after. The guard, well above what the snapshot's
	// tree takes, bounds the garbage a long replay makes (data replaced by later txns): the
	// collector runs when the heap has grown that much.
	resumeGC := gctune.Pause(512<<20 + 6*s.newestSnapshotSize())
	defer func() {
		resumeGC()
		// The decoding's garbage (a copy of every node) goes back to the system now, not
		// minutes later: the resident size after a restart is the tree's.
		gctune.Release()
	}()
	tree, snapZxid, sessions, snapDigest, err := s.loadSnapshot()
	quarantined := false
	if err != nil && s.ensembleMode() {
		// No snapshot can be read: a member starts empty, marked damaged, and takes the
		// leader's (SNAP) once a leader elected without it syncs it.
		if qerr := s.quarantine(err); qerr != nil {
			return nil, qerr
		}
		quarantined = true
		tree, snapZxid, sessions, snapDigest, err = s.loadSnapshot()
	}
	if err != nil {
		return nil, err
	}
	// Opening the log first cuts a torn tail back to the last valid entry; damage stops here.
	damaged, err := s.openLog(snapZxid)
	if err != nil {
		return nil, err
	}
	damaged = damaged || quarantined
	replayed := 0
	prog := newProgress(s.log, "replaying the txn log", "fromZxid", hex(snapZxid))
	tree.BeginReplay()
	var history historyRing
	decode := func(zxid int64, b []byte) (jute.LoggedTxn, error) {
		// b is only valid during the call, and the txn is applied later, on this
		// goroutine: it gets a copy (which the tree copies the data it keeps out of).
		b = bytes.Clone(b)
		history.add(zxid, b)
		t, err := jute.DecodeTxn(b)
		if err != nil {
			return t, fmt.Errorf("txn 0x%x: %w", zxid, err)
		}
		return t, nil
	}
	replayDigest := s.newReplayDigest(snapZxid, snapDigest)
	last, err := storage.ReadLogAhead(fs, s.logDir(), snapZxid, decode, func(t jute.LoggedTxn) error {
		tree.Apply(&t.Header, t.Body)
		replayDigest.check(tree, &t)
		switch t.Header.Type {
		case jute.OpCreateSession:
			sessions[t.Header.ClientID] = t.Body.(*jute.CreateSessionTxn).TimeOut
		case jute.OpCloseSession:
			delete(sessions, t.Header.ClientID)
		}
		replayed++
		prog.tick(replayed, func() []any { return []any{"txns", replayed, "zxid", hex(t.Header.Zxid)} })
		return nil
	})
	tree.EndReplay()
	resumeGC()
	if err != nil {
		return nil, fmt.Errorf("server: replay log: %w", err)
	}
	if last > tree.LastZxid() {
		tree.SetLastZxid(last)
	}
	if newest := s.newestSnapshotZxid(); newest > tree.LastZxid() {
		// The newest snapshot could not be read and the log does not reach its zxid: the
		// txns in between are gone. (A torn newest snapshot with the log covering it loses
		// nothing: ZooKeeper writes snapshots in place, so a crash can leave one.)
		why := fmt.Sprintf("snapshot %s is unreadable and the log reaches only zxid %s", hex(newest), hex(tree.LastZxid()))
		if !s.ensembleMode() {
			s.txlog.Close()
			return nil, fmt.Errorf("server: %w: %s: refusing to start; nothing was changed: %s", errDamaged, why, repairHint(s.cfg.DataDir))
		}
		if err := storage.WriteDamageMark(fs, s.logDir(), newest); err != nil {
			return nil, err
		}
		s.log.Warn("damaged data directory: this member will not vote until it has synced with a leader", "cause", why)
		damaged = true
	}
	s.log.Info("data recovered", "snapshotZxid", hex(snapZxid), "replayed", replayed,
		"zxid", hex(tree.LastZxid()), "nodes", tree.NodeCount(), "sessions", len(sessions),
		"took", time.Since(start).Round(time.Millisecond))
	s.durable.Store(tree.LastZxid())
	return &loaded{tree: tree, history: history, sessions: sessions, snapZxid: snapZxid, replayed: replayed, damaged: damaged}, nil
}

// maxDamageCuts bounds the cuts an ensemble member makes to a damaged log at one start.
const maxDamageCuts = 16

// errDamaged marks a data directory whose damage costs txns: a standalone server refuses to
// start on it.
var errDamaged = errors.New("data directory damaged")

func repairHint(dataDir string) string {
	return fmt.Sprintf("inspect it with `zkd tool verify %s`; `zkd tool repair %s` cuts the log at the damage (keeping every file it changes as damaged.*), losing the txns named above", dataDir, dataDir)
}

// openLog opens the txn log for a replay from snapZxid and says whether this server is a
// damaged member. Damage (storage.DamageError) stops a standalone server with nothing
// changed: the acknowledged txns after it are an operator's to save. An ensemble member
// instead marks itself damaged (storage.WriteDamageMark), cuts the log at the damage
// keeping the files it changes, and goes on with the valid prefix: it votes with no zxid
// until a leader elected without it has refilled it (see Server.electionZxid), so the
// txns it lost cannot be lost by the ensemble.
func (s *Server) openLog(snapZxid int64) (damaged bool, err error) {
	fs := s.cfg.FS
	opts := storage.LogOptions{PreAllocSize: s.cfg.PreAllocSize, ForceSync: !s.cfg.NoSync, Logger: s.log, FromZxid: snapZxid}
	// Each cut leaves only what comes before the damage, so the next open finds none there;
	// the bound is a guard against a cut that changed nothing.
	for cuts := 0; ; cuts++ {
		s.txlog, err = storage.OpenLog(fs, s.logDir(), opts)
		var d *storage.DamageError
		if !errors.As(err, &d) {
			break
		}
		if cuts == maxDamageCuts {
			return false, fmt.Errorf("server: %w: still damaged after %d cuts: %w", errDamaged, cuts, err)
		}
		if !s.ensembleMode() {
			return false, fmt.Errorf("server: %w: %w; refusing to start; nothing was changed: %s", errDamaged, err, repairHint(s.cfg.DataDir))
		}
		s.log.Warn("damaged txn log: this member keeps the valid prefix and will not vote until it has synced with a leader",
			"file", d.File, "offset", d.Offset, "why", d.Why, "last_good_zxid", hex(d.LastGood),
			"lost_txns", d.After, "highest_zxid", hex(d.Highest))
		if err := storage.WriteDamageMark(fs, s.logDir(), d.Highest); err != nil {
			return false, err
		}
		kept, err := storage.CutAtDamage(fs, s.logDir(), d, strconv.FormatInt(s.clk.Now().UnixMilli(), 10))
		if err != nil {
			return false, fmt.Errorf("server: cut a damaged log: %w", err)
		}
		s.log.Warn("damaged log files kept", "files", kept)
	}
	if err != nil {
		return false, fmt.Errorf("server: open log: %w", err)
	}
	highest, marked, err := storage.ReadDamageMark(fs, s.logDir())
	if err != nil {
		s.txlog.Close()
		return false, err
	}
	if marked && !s.ensembleMode() {
		// A member's directory run standalone: what it lost was the ensemble's to refill.
		s.txlog.Close()
		return false, fmt.Errorf("server: %w: %s holds %s: this directory lost txns as an ensemble member and has not been refilled by a leader since; run it in its ensemble, or remove the file to accept the loss",
			errDamaged, s.logDir(), storage.DamageMark)
	}
	if marked {
		s.log.Warn("damaged member, not refilled since: it will not vote until it has synced with a leader",
			"mark", filepath.Join(s.logDir(), storage.DamageMark), "highest_zxid", hex(highest))
	}
	return marked, nil
}

// quarantine moves every snapshot and log file of a member whose snapshots cannot be read
// aside (renamed damaged.<tag>.<name>, kept for an operator), after marking it damaged: the
// log alone, without the state it starts from, rebuilds nothing. cause is why.
func (s *Server) quarantine(cause error) error {
	fs := s.cfg.FS
	var highest int64
	snaps, _ := storage.FindSnapshots(fs, s.snapDir())
	for _, sf := range snaps {
		highest = max(highest, sf.Zxid)
	}
	s.log.Warn("no snapshot can be read: this member moves its data files aside, starts empty and will not vote until a leader has refilled it",
		"cause", cause)
	if err := storage.WriteDamageMark(fs, s.logDir(), highest); err != nil {
		return err
	}
	tag := "damaged." + strconv.FormatInt(s.clk.Now().UnixMilli(), 10) + "."
	// The logs go first: a crash between the two leaves snapshots that cannot be read (and
	// quarantines again), never a log without the state it starts from.
	for _, dir := range []string{s.logDir(), s.snapDir()} {
		names, err := fs.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("server: quarantine: %w", err)
		}
		for _, n := range names {
			_, _, isSnap := storage.ParseSnapName(n)
			_, isLog := storage.ParseLogName(n)
			if !isSnap && !isLog {
				continue
			}
			if err := fs.Rename(filepath.Join(dir, n), filepath.Join(dir, tag+n)); err != nil {
				return fmt.Errorf("server: quarantine: %w", err)
			}
		}
		if err := fs.SyncDir(dir); err != nil {
			return fmt.Errorf("server: quarantine: %w", err)
		}
	}
	return nil
}

// hasSnapshotFiles says whether the snapshot directory holds any snapshot file, valid or not.
func (s *Server) hasSnapshotFiles() bool {
	files, err := storage.FindSnapshots(s.cfg.FS, s.snapDir())
	return err != nil || len(files) > 0
}

// hasLoggedTxns reports whether the txn log holds any txn (FileTxnLog.getLastLoggedZxid
// is not -1); an error reading it counts as yes, so that it is not taken for empty.
func (s *Server) hasLoggedTxns() bool {
	found := errors.New("found")
	_, err := storage.ReadLog(s.cfg.FS, s.logDir(), 0, func(int64, []byte) error { return found })
	return err != nil
}

// newestSnapshotZxid is the zxid in the newest snapshot file's name, readable or not.
func (s *Server) newestSnapshotZxid() int64 {
	files, err := storage.FindSnapshots(s.cfg.FS, s.snapDir())
	if err != nil || len(files) == 0 {
		return 0
	}
	return files[0].Zxid
}

// install makes a loaded state the core's: the tree, its sessions, a fresh overlay.
func (s *Server) install(ld *loaded) {
	if s.walk != nil {
		// The walk is of the tree being replaced, and would finish with the new tree's ACL
		// table, whose keys mean other ACLs: the snapshot is given up.
		s.walk.abort()
		s.walk = nil
	}
	s.tree = ld.tree
	// A listing's node ids are the replaced tree's: its views go with it.
	s.listViews = nil
	s.history = ld.history
	s.resetWatchHistory()
	if ld.damaged {
		// Only a refill (Server.refilled) ends it: a SNAP's tree installed here is not one
		// until the sync is through.
		s.damaged = true
	}
	// A tree loaded from disk is exact once the log is replayed over its (fuzzy) snapshot.
	s.digest.armed = true
	s.prep = prep.New(s.tree)
	s.prep.NoDigest = s.cfg.NoDigest
	s.prep.ExtendedTypes = s.cfg.ExtendedTypes
	s.prep.SkipACL = s.cfg.SkipACL
	s.prep.Providers = s.cfg.AuthProviders
	s.prep.EnforceQuota = s.cfg.EnforceQuota
	s.prep.Wide = s.cfg.Extensions.Has(ext.Wide)
	// A txn's header, digest and framing take a few dozen bytes besides its body.
	s.prep.MaxTxnBytes = max(s.cfg.JuteMaxBuffer-1024, 1)
	s.prep.OnQuotaExceeded = s.quotaExceeded
	if s.cfg.ReconfigEnabled {
		s.prep.Reconfig = s.prepReconfig
	}
	s.sessions = map[int64]*clientSession{}
	s.tracker = session.NewTracker(int64(s.cfg.TickTime))
	now := s.nowMs()
	for id, to := range ld.sessions {
		s.addRecoveredSession(id, to, now)
	}
	s.lastProposed = s.tree.LastZxid()
	s.lastQueued = s.tree.LastZxid()
	s.fillConfigNode()
}

// newestSnapshotSize is the size of the newest snapshot file (as uncompressed, roughly),
// 0 if there is none.
func (s *Server) newestSnapshotSize() int64 {
	files, err := storage.FindSnapshots(s.cfg.FS, s.snapDir())
	if err != nil || len(files) == 0 {
		return 0
	}
	size, err := s.cfg.FS.Stat(filepath.Join(s.snapDir(), files[0].Name))
	if err != nil {
		return 0
	}
	// A tree's snapshot compresses well; the guard below should not bind.
	switch {
	case strings.HasSuffix(files[0].Name, ".gz"):
		size *= 10
	case strings.HasSuffix(files[0].Name, ".snappy"):
		size *= 5
	}
	return size
}

func (s *Server) addRecoveredSession(id int64, timeout int32, now int64) {
	s.sessions[id] = &clientSession{id: id, timeout: timeout, valid: true}
	s.tracker.Add(id, timeout, s.sessionMs(now))
	s.ids.Observe(id)
}

func (s *Server) loadSnapshot() (*datatree.Tree, int64, map[int64]int32, *storage.SnapDigest, error) {
	if err := storage.CleanTemp(s.cfg.FS, s.snapDir()); err != nil {
		return nil, 0, nil, nil, fmt.Errorf("server: %w", err)
	}
	var loader *datatree.Loader
	var sessions map[int64]int32
	var digest *storage.SnapDigest
	var prog *progress
	nodes := 0
	sf, err := storage.LoadNewest(s.cfg.FS, s.snapDir(), s.log, func(f storage.SnapshotFile) storage.SnapshotHandler {
		loader = datatree.NewLoader()
		sessions = map[int64]int32{}
		digest = nil
		prog = newProgress(s.log, "loading snapshot", "file", f.Name)
		nodes = 0
		return storage.SnapshotHandler{
			Session: func(ss storage.SnapSession) error { sessions[ss.ID] = ss.Timeout; return nil },
			Digest:  func(d storage.SnapDigest) error { digest = &d; return nil },
			ACL:     func(key int64, acls []jute.ACL) error { loader.ACL(key, acls); return nil },
			Node: func(n storage.SnapNode) error {
				nodes++
				prog.tick(nodes, func() []any { return []any{"nodes", nodes} })
				return loader.Node(datatree.SnapNode(n))
			},
		}
	})
	switch {
	case errors.Is(err, storage.ErrNoSnapshot) && s.hasSnapshotFiles():
		// Snapshots are there, but none passes the quick check: starting empty and replaying
		// what the log still holds would build a tree without everything before it
		// (ZooKeeper refuses this too: "No snapshot found, but there are log entries").
		return nil, 0, nil, nil, fmt.Errorf("server: %w: no snapshot in %s passes the validity check: refusing to start from an empty tree; %s",
			errDamaged, s.snapDir(), repairHint(s.cfg.DataDir))
	case errors.Is(err, storage.ErrNoSnapshot) && s.hasLoggedTxns():
		// FileTxnSnapLog.restore: no snapshot at all, yet the log has txns. The log may
		// not start at the beginning (purged, or the snapshots lost), so the tree it
		// would build can lack data: refused unless zookeeper.snapshot.trust.empty, the
		// escape hatch for data directories of ZooKeeper before 3.5.3.
		if !s.cfg.SnapshotTrustEmpty {
			return nil, 0, nil, nil, fmt.Errorf("server: %w: no snapshot found in %s, but there are log entries in %s: something is broken "+
				"(set zookeeper.snapshot.trust.empty=true to start from the log alone, as for a data directory of ZooKeeper before 3.5.3)",
				errDamaged, s.snapDir(), s.logDir())
		}
		s.log.Warn("no snapshot found, but there are log entries: starting from the log alone (snapshot.trust.empty); this should only be allowed during upgrading",
			"dir", s.logDir())
		t := datatree.New()
		t.ExtendedTypes = s.cfg.ExtendedTypes
		return t, 0, map[int64]int32{}, nil, nil
	case errors.Is(err, storage.ErrNoSnapshot):
		t := datatree.New()
		t.ExtendedTypes = s.cfg.ExtendedTypes
		return t, 0, map[int64]int32{}, nil, nil
	case err != nil:
		// Starting empty would silently drop the data the snapshots held.
		return nil, 0, nil, nil, fmt.Errorf("server: load snapshot: %w", err)
	}
	tree, err := loader.Finish(s.cfg.ExtendedTypes, sf.Zxid)
	if err != nil {
		return nil, 0, nil, nil, fmt.Errorf("server: load snapshot %s: %w", sf.Name, err)
	}
	if loader.MissingACLs > 0 {
		s.log.Warn("snapshot nodes reference unknown ACLs; the log replay restores them", "file", sf.Name, "nodes", loader.MissingACLs)
	}
	return tree, sf.Zxid, sessions, digest, nil
}

func (s *Server) startPersist() {
	s.logCh = make(chan logItem, 4096)
	s.durableSignal = make(chan struct{}, 1)
	s.doneSignal = make(chan struct{}, 1)
	s.logDone = make(chan struct{})
	go s.logLoop()
	if s.cfg.PurgeInterval > 0 {
		s.wg.Add(1)
		go s.purgeLoop()
	}
}

// storageOp queues op for the storage goroutine, after everything queued so far; the
// function op returns runs on the core when it is done.
func (s *Server) storageOp(op func() func()) {
	s.logCh <- logItem{op: op}
}

// postDone hands a completion to the core without ever blocking the storage goroutine
// (the core may itself be waiting for room in logCh).
func (s *Server) postDone(f func()) {
	s.doneMu.Lock()
	s.doneQueue = append(s.doneQueue, f)
	s.doneMu.Unlock()
	select {
	case s.doneSignal <- struct{}{}:
	default:
	}
}

// runDone runs the storage completions that arrived, in order, on the core.
func (s *Server) runDone() {
	s.doneMu.Lock()
	fs := s.doneQueue
	s.doneQueue = nil
	s.doneMu.Unlock()
	for _, f := range fs {
		f()
	}
}

// txnBufs recycles the encodings of a standalone server's txns: the log copies a txn into
// its own buffer as it appends it, so the encoding is free again as soon as Append returns.
var txnBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledTxn bounds the encodings kept for reuse: a rare large txn's is not held.
const maxPooledTxn = 64 << 10

func (s *Server) appendLog(t *jute.LoggedTxn) {
	bp := txnBufs.Get().(*[]byte)
	*bp = jute.EncodeTxn((*bp)[:0], t)
	s.lastQueued = t.Header.Zxid
	s.logCh <- logItem{zxid: t.Header.Zxid, data: *bp, buf: bp}
}

func (s *Server) queueAppend(zxid int64, data []byte) {
	s.lastQueued = zxid
	s.logCh <- logItem{zxid: zxid, data: data}
}

// logLoop is the storage goroutine. It appends txns and fsyncs once per batch: every txn
// that arrived while the last fsync ran shares the next one (group commit). Only then are
// they durable and applied.
func (s *Server) logLoop() {
	defer close(s.logDone)
	batch := make([]logItem, 0, 256)
	for {
		it, ok := <-s.logCh
		if !ok {
			return
		}
		if s.failed.Load() {
			s.drainLog()
			return
		}
		batch = append(batch[:0], it)
	drain:
		for len(batch) < 4096 {
			select {
			case it, ok := <-s.logCh:
				if !ok {
					break drain
				}
				batch = append(batch, it)
			default:
				break drain
			}
		}
		last := int64(-1)
		appended := 0 // txns since the last sync, for the group-commit metrics
		var err error
		for _, it := range batch {
			switch {
			case it.op != nil:
				// An operation sees the log as the core queued it: written and synced.
				if last >= 0 {
					if err = s.syncLog(appended); err != nil {
						break
					}
					s.markDurable(last)
					last, appended = -1, 0
				}
				if done := it.op(); done != nil {
					s.postDone(done)
				}
				if s.failed.Load() {
					// The operation failed: what was queued after it relies on it (the
					// currentEpoch after a SNAP's snapshot) and must not reach the disk.
					s.drainLog()
					return
				}
			case it.roll:
				err = s.txlog.Roll()
			default:
				err = s.txlog.Append(it.zxid, it.data)
				if it.buf != nil && cap(*it.buf) <= maxPooledTxn {
					txnBufs.Put(it.buf)
				}
				last = it.zxid
				appended++
			}
			if err != nil {
				break
			}
		}
		if err == nil && last >= 0 {
			err = s.syncLog(appended)
		}
		if err != nil {
			s.failStop(fmt.Errorf("server: write txn log: %w", err))
			s.drainLog()
			return
		}
		if last >= 0 {
			s.markDurable(last)
		}
	}
}

// syncLog syncs the txn log, which makes the txns appended since the last sync durable,
// and records the fsync's time and batch size.
func (s *Server) syncLog(txns int) error {
	start := time.Now()
	if err := s.txlog.Sync(); err != nil {
		return err
	}
	took := time.Since(start)
	s.cfg.Metrics.Fsync(took, txns)
	// FileTxnLog.commit: whole milliseconds against fsync.warningthresholdms.
	if ms := took.Milliseconds(); ms > max(s.cfg.FsyncWarningThreshold, 0).Milliseconds() {
		s.fsyncSlow.Add(1)
		s.log.Warn("fsync of the txn log took longer than fsync.warningthresholdms, which adversely affects operation latency; see ZooKeeper's troubleshooting guide",
			"took_ms", ms, "threshold_ms", max(s.cfg.FsyncWarningThreshold, 0).Milliseconds(), "dir", s.logDir(), "txns", txns)
	}
	return nil
}

// drainLog discards what is queued for the storage goroutine until the log channel closes,
// so the core never blocks on it; nothing more becomes durable.
func (s *Server) drainLog() {
	for range s.logCh {
	}
}

func (s *Server) markDurable(zxid int64) {
	s.durable.Store(zxid)
	select {
	case s.durableSignal <- struct{}{}:
	default:
	}
}

// failStop stops the server after a storage failure: acknowledging writes that are not
// durable would break the promise every client relies on.
func (s *Server) failStop(err error) {
	if !s.failed.Swap(true) {
		s.counters.add(cntUnrecoverableError, 1)
	}
	s.log.Error("stopping: storage failure", "err", err)
	select {
	case s.fatal <- err:
	default:
	}
	s.beginStop()
}

func (s *Server) closePersist(deadline time.Time) error {
	var errs []error
	if s.logCh != nil {
		close(s.logCh)
		<-s.logDone
	}
	// A clean stop writes a snapshot when the next start would otherwise replay a long log
	// (ZooKeeper does not): restarts after a clean stop then load it and replay nothing.
	// Only a serving server does, whose tree is a committed state; the core has stopped, so
	// the tree is ours to read.
	if s.txlog != nil && s.tree != nil && s.serving() && s.worthSnapshot(s.snappedZxid.Load()) && s.snapshotFits(deadline) {
		start := time.Now()
		if err := s.snapshotNow(); err != nil {
			s.log.Warn("snapshot at shutdown failed", "err", err)
		} else {
			s.log.Info("snapshot written at shutdown", "zxid", hex(s.tree.LastZxid()), "nodes", s.tree.NodeCount(),
				"took", time.Since(start).Round(time.Millisecond))
		}
	}
	if s.txlog != nil {
		if err := s.txlog.Sync(); err != nil {
			errs = append(errs, err)
		}
		if err := s.txlog.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	s.unlockDirs()
	return errors.Join(errs...)
}

// snapshotFits says whether a snapshot is likely to end well before deadline (none set:
// always): the last one's time, or at first a microsecond a node, twice over.
func (s *Server) snapshotFits(deadline time.Time) bool {
	if deadline.IsZero() {
		return true
	}
	est := time.Duration(s.lastSnapNanos.Load())
	if est == 0 {
		est = time.Duration(s.tree.NodeCount()) * time.Microsecond
	}
	if left := time.Until(deadline); left < 2*est {
		s.log.Warn("skipping the snapshot at shutdown: the deadline is too near (the next start replays the log)",
			"left", left.Round(time.Millisecond), "estimate", est.Round(time.Millisecond))
		return false
	}
	return true
}

// lockDirs makes this process the only user of dataDir and dataLogDir.
func (s *Server) lockDirs() error {
	for i, dir := range []string{s.cfg.DataDir, s.cfg.DataLogDir} {
		if i == 1 && filepath.Clean(dir) == filepath.Clean(s.cfg.DataDir) {
			break
		}
		l, err := storage.LockDir(s.cfg.FS, dir)
		if err != nil {
			s.unlockDirs()
			return fmt.Errorf("server: %w", err)
		}
		s.dirLocks = append(s.dirLocks, l)
	}
	return nil
}

func (s *Server) unlockDirs() {
	for _, l := range s.dirLocks {
		l.Close()
	}
	s.dirLocks = nil
}

func (s *Server) purgeLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.PurgeInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if err := storage.Purge(s.cfg.FS, s.snapDir(), s.logDir(), s.cfg.SnapRetainCount); err != nil {
				s.log.Warn("autopurge failed", "err", err)
			}
		case <-s.stopping:
			return
		}
	}
}

func (s *Server) resetSnapThreshold() {
	half := s.cfg.SnapCount / 2
	s.snapThreshold = half + s.rng.IntN(half+1)
	s.txnsSinceSnap = 0
}

func (s *Server) sessionList() []storage.SnapSession {
	out := make([]storage.SnapSession, 0, len(s.sessions))
	for id, sess := range s.sessions {
		if sess.valid && !sess.local { // a local session is not the quorum's
			out = append(out, storage.SnapSession{ID: id, Timeout: sess.timeout})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// snapshotNow writes a complete snapshot synchronously (at start-up, before serving).
func (s *Server) snapshotNow() error {
	start := time.Now()
	v := s.tree.Capture()
	if err := storage.WriteSnapshot(s.cfg.FS, s.snapDir(), v, s.sessionList(), s.cfg.SnapshotCompression, nil); err != nil {
		return fmt.Errorf("server: snapshot: %w", err)
	}
	s.snappedZxid.Store(v.LastZxid())
	s.lastSnapNanos.Store(int64(time.Since(start)))
	return s.txlog.Roll()
}

// snapshotWalk is a background snapshot in progress: a goroutine writes a view of the tree
// captured on the core, which goes on serving. stop abandons it; done is closed when the
// goroutine is finished.
type snapshotWalk struct {
	stop    chan struct{}
	done    chan struct{}
	stopped bool
}

func (w *snapshotWalk) abort() {
	if !w.stopped {
		w.stopped = true
		close(w.stop)
	}
}

// maybeSnapshot starts a background snapshot once enough txns were applied.
func (s *Server) maybeSnapshot() {
	if s.walk != nil {
		select {
		case <-s.walk.done:
			s.walk = nil
		default:
			return
		}
	}
	if s.txnsSinceSnap < s.snapThreshold {
		return
	}
	s.startBackgroundSnapshot()
}

// startBackgroundSnapshot rolls the log and starts writing a snapshot of the tree as it is
// now. The capture costs the core one pointer per page of nodes; the walk, encoding,
// compression and fsync run on the writer's goroutine.
func (s *Server) startBackgroundSnapshot() {
	s.resetSnapThreshold()
	s.logCh <- logItem{roll: true}
	w := &snapshotWalk{stop: make(chan struct{}), done: make(chan struct{})}
	s.walk = w
	v, sessions := s.tree.Capture(), s.sessionList()
	s.wg.Add(1)
	go s.writeSnapshot(w, v, sessions)
}

func (s *Server) writeSnapshot(w *snapshotWalk, v *datatree.View, sessions []storage.SnapSession) {
	defer s.wg.Done()
	defer close(w.done)
	start := time.Now()
	err := storage.WriteSnapshot(s.cfg.FS, s.snapDir(), v, sessions, s.cfg.SnapshotCompression, w.stop)
	if errors.Is(err, storage.ErrSnapshotStopped) {
		return // at shutdown, or the tree was replaced
	}
	if err != nil {
		s.log.Error("snapshot failed", "zxid", hex(v.LastZxid()), "err", err)
		return
	}
	s.snappedZxid.Store(v.LastZxid())
	s.lastSnapNanos.Store(int64(time.Since(start)))
	s.cfg.Metrics.Snapshot(time.Since(start))
	s.log.Info("snapshot written", "zxid", hex(v.LastZxid()), "nodes", v.NodeCount(), "took", time.Since(start).Round(time.Millisecond))
}

// worthSnapshot reports whether replaying the log from zxid from to the tree's last zxid
// would cost enough to be worth writing a snapshot now: at least 1,000 txns, and at least
// 1% of the nodes a snapshot writes.
func (s *Server) worthSnapshot(from int64) bool {
	last := s.tree.LastZxid()
	if from == 0 || last>>32 != from>>32 {
		return last != from
	}
	return last-from >= max(1000, int64(s.tree.NodeCount()/100))
}

// historyLen is how many committed txns every server keeps in memory for DIFF syncs, as
// ZooKeeper's ZKDatabase keeps its committedLog (500).
const historyLen = 500

// historyRing is the last historyLen committed txns, oldest first once listed.
type historyRing struct {
	buf  []zab.Committed
	next int
}

func (h *historyRing) add(zxid int64, data []byte) {
	if len(h.buf) < historyLen {
		h.buf = append(h.buf, zab.Committed{Zxid: zxid, Data: data})
		return
	}
	h.buf[h.next] = zab.Committed{Zxid: zxid, Data: data}
	h.next = (h.next + 1) % historyLen
}

func (h *historyRing) list() []zab.Committed {
	out := make([]zab.Committed, 0, len(h.buf))
	out = append(out, h.buf[h.next:]...)
	return append(out, h.buf[:h.next]...)
}

// truncateOnStorage cuts the log back to zxid (TRUNC) and reloads the data directory, on
// the storage goroutine.
func (s *Server) truncateOnStorage(zxid int64) (*loaded, error) {
	if err := s.txlog.TruncateAfter(zxid); err != nil {
		return nil, err
	}
	// Snapshots newer than the truncation point hold txns that no longer exist.
	snaps, _ := storage.FindSnapshots(s.cfg.FS, s.snapDir())
	for _, sf := range snaps {
		if sf.Zxid > zxid {
			s.cfg.FS.Remove(filepath.Join(s.snapDir(), sf.Name))
		}
	}
	return s.reloadOnStorage()
}

// queueSnapshot captures the tree as it is now and writes it as a snapshot on the storage
// goroutine, ahead of anything queued after it: the snapshot of a SNAP sync. The capture
// costs the core one pointer per page of nodes.
func (s *Server) queueSnapshot() {
	v, sessions := s.tree.Capture(), s.sessionList()
	s.storageOp(func() func() {
		if err := s.writeSnapshotFile(v, sessions); err != nil {
			s.failStop(err)
			return nil
		}
		s.snappedZxid.Store(v.LastZxid())
		return nil
	})
}

// writeSnapshotFile writes a complete snapshot and rolls the log, so what follows is
// logged in a file of its own.
func (s *Server) writeSnapshotFile(v *datatree.View, sessions []storage.SnapSession) error {
	if err := storage.WriteSnapshot(s.cfg.FS, s.snapDir(), v, sessions, s.cfg.SnapshotCompression, nil); err != nil {
		return fmt.Errorf("server: snapshot: %w", err)
	}
	return s.txlog.Roll()
}

// progress logs how far a long recovery step has got, at most every progressEvery, so an
// operator watching a large tree load sees it move.
type progress struct {
	log         *slog.Logger
	what        string
	attrs       []any
	start, last time.Time
	every       time.Duration
}

// progressEvery is how often recovery reports progress.
const progressEvery = 5 * time.Second

func newProgress(log *slog.Logger, what string, attrs ...any) *progress {
	now := time.Now()
	return &progress{log: log, what: what, attrs: attrs, start: now, last: now, every: progressEvery}
}

// tick reports n items done, with attrs' attributes, when progressEvery has passed since the
// last report; it reads the clock only every 4096 items, and makes the attributes only when
// it reports (a call per node or txn must not allocate).
func (p *progress) tick(n int, attrs func() []any) {
	if n%4096 != 0 {
		return
	}
	now := time.Now()
	if now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	all := append(append(append([]any(nil), p.attrs...), attrs()...), "elapsed", now.Sub(p.start).Round(time.Second))
	p.log.Info(p.what, all...)
}
