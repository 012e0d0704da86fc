package server

import (
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/internal/auth"
	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/jute"
)

// The AdminServer's snapshot and restore commands (ZooKeeper 3.9's SnapshotCommand and
// RestoreCommand). Both need a caller authenticated through the Authorization header
// ("digest user:password", or "x509" over HTTPS, adminhttps.go) holding every permission
// on "/" and an identity the server vouches for (adminsec.go), and both are rate limited.
// snapshot captures the tree on the core (references only, as for a learner's SNAP),
// writes snapshot.<zxid> into the data directory off the core, and streams it with 3.9's
// lastProcessedZxid section appended. restore (off unless admin.restore.enabled=true)
// reads a snapshot stream off the core, at most RestoreMaxBytes of it and never stalling
// longer than RestoreReadTimeout, and then, in one core step, drops every client
// connection and the writes in flight and installs the tree and sessions the stream
// holds; the new tree is snapshotted at once, so a restart keeps it.

// AdminSnapConfig is the settings of the snapshot and restore commands. The zero value is
// zkd's defaults: snapshot on, restore off, one call per 5 minutes, a 1 GiB restore body
// that may stall for 30 s at most.
type AdminSnapConfig struct {
	SnapshotDisabled bool  // admin.snapshot.enabled=false
	RestoreEnabled   bool  // admin.restore.enabled=true (ZooKeeper's default; not zkd's)
	RateLimitMs      int64 // admin.rateLimiterIntervalInMS: 0 = 300000, negative = none
	// NeedClientAuth is admin.needClientAuth, kept for the record: AdminTLS applies it.
	NeedClientAuth bool
	// RestoreMaxBytes caps a restore's body (zkd.admin.restoreMaxBytes); 0 = 1 GiB.
	RestoreMaxBytes int64
	// RestoreReadTimeout is the longest a restore's body may go without sending a byte
	// (zkd.admin.restoreReadTimeoutMs); 0 = 30 s, Jetty's idle timeout.
	RestoreReadTimeout time.Duration
}

// Defaults of AdminSnapConfig's zkd-only settings.
const (
	DefaultRestoreMaxBytes    = 1 << 30
	DefaultRestoreReadTimeout = 30 * time.Second
)

func (c AdminSnapConfig) restoreMaxBytes() int64 {
	if c.RestoreMaxBytes > 0 {
		return c.RestoreMaxBytes
	}
	return DefaultRestoreMaxBytes
}

func (c AdminSnapConfig) restoreReadTimeout() time.Duration {
	if c.RestoreReadTimeout > 0 {
		return c.RestoreReadTimeout
	}
	return DefaultRestoreReadTimeout
}

func (c AdminSnapConfig) rateInterval() time.Duration {
	switch {
	case c.RateLimitMs == 0:
		return 5 * time.Minute
	case c.RateLimitMs < 0:
		return 0
	}
	return time.Duration(c.RateLimitMs) * time.Millisecond
}

// rateLimiter is ZooKeeper's util.RateLimiter with a rate of one: a call is allowed when
// none was allowed since the interval last passed. The first call is allowed at once.
type rateLimiter struct {
	mu       sync.Mutex
	interval time.Duration
	last     time.Time
	remained int
}

func newRateLimiter(interval time.Duration) *rateLimiter {
	return &rateLimiter{interval: interval, last: time.Now(), remained: 1}
}

func (r *rateLimiter) allow() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := time.Now(); now.Sub(r.last) > r.interval {
		r.remained, r.last = 1, now
	}
	if r.remained > 0 {
		r.remained--
		return true
	}
	return false
}

// adminSnapState is what one AdminHandler keeps for snapshot and restore: ZooKeeper's
// per-command rate limiters, and a lock that keeps two snapshot writes (and a restore)
// from overlapping, as its snapshotAndRestoreLock does.
type adminSnapState struct {
	snapLimit, restoreLimit *rateLimiter
	mu                      sync.Mutex
}

func (s *Server) newAdminSnapState() *adminSnapState {
	iv := s.cfg.AdminSnap.rateInterval()
	return &adminSnapState{snapLimit: newRateLimiter(iv), restoreLimit: newRateLimiter(iv)}
}

// adminSnapDir is where an admin snapshot is written before it is renamed into the data
// directory: a directory of its own, so its temporary files never meet those of a
// background snapshot of the same zxid.
const adminSnapDir = ".admin-snapshot"

// Response headers and query parameter of the snapshot command.
const (
	snapHeaderLastZxid = "last_zxid"
	snapHeaderSize     = "snapshot_size"
	snapParamStreaming = "streaming"
)

// writeAdminJSON answers with status code and a JSON body, as Jetty's JsonOutputter.
func writeAdminJSON(w http.ResponseWriter, code int, o admin.Object) {
	body, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(body, '\n'))
}

// serveAuthCommand runs snapshot or restore: the checks of Commands.runCommand (serving,
// then authentication, then authorization) before the command's own.
func (s *Server) serveAuthCommand(w http.ResponseWriter, r *http.Request, cmd admin.HTTPCommand, st *adminSnapState, kwargs map[string]string) {
	name := cmd.Primary()
	if !s.coreQuery(func() {}) {
		writeAdminJSON(w, http.StatusOK, admin.ErrorResponse(name, admin.NotServingMsg))
		return
	}
	authInfo, present := r.Header["Authorization"]
	if !present || len(authInfo) == 0 {
		writeAdminJSON(w, http.StatusUnauthorized, admin.ErrorResponse(name, admin.AuthMissingMsg))
		return
	}
	ids, err := s.adminAuthenticate(authInfo[0], r)
	if err != nil {
		s.log.Warn("admin command not authenticated", "command", name, "remote", r.RemoteAddr, "err", err)
		writeAdminJSON(w, http.StatusUnauthorized, admin.ErrorResponse(name, admin.NotAuthenticated))
		return
	}
	verdict, ok := s.adminAuthorize(ids)
	switch {
	case !ok:
		writeAdminJSON(w, http.StatusOK, admin.ErrorResponse(name, admin.NotServingMsg))
		return
	case verdict == adminNoPerms:
		s.log.Warn("admin command not authorized", "command", name, "remote", r.RemoteAddr, "ids", ids)
		writeAdminJSON(w, http.StatusForbidden, admin.ErrorResponse(name, admin.NotAuthorized))
		return
	case verdict == adminNoIdentity:
		s.log.Warn("admin command refused: no identity the server vouches for", "command", name, "remote", r.RemoteAddr, "ids", ids)
		writeAdminJSON(w, http.StatusForbidden, admin.ErrorResponse(name, adminNeedsIdentityMsg))
		return
	}
	// A snapshot or restore of a large tree takes longer than the other commands' write
	// timeout allows; the client's own patience bounds the snapshot's stream instead, and
	// the restore's body has a deadline of its own (adminRestore).
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Time{})
	if name == "snapshot" {
		s.adminSnapshot(w, r, st, kwargs)
		return
	}
	s.adminRestore(w, r, st)
}

// adminAuthenticate is Commands.handleAuthentication: the Authorization header holds a
// scheme and, for digest, "user:password", separated by one space. digest and ip are always
// there; x509 needs its provider (authProvider.N) and takes its id from the client
// certificate of an HTTPS request (admin.needClientAuth asks for one), checked against the
// client port's truststore first, as X509AuthenticationProvider does. Any other scheme
// fails as ZooKeeper fails a scheme without a provider.
func (s *Server) adminAuthenticate(header string, r *http.Request) ([]jute.ID, error) {
	parts := strings.Split(header, " ")
	for len(parts) > 0 && parts[len(parts)-1] == "" { // Java's split drops trailing empties
		parts = parts[:len(parts)-1]
	}
	if len(parts) != 1 && len(parts) != 2 {
		return nil, errors.New("auth info is not \"<scheme> [<auth>]\"")
	}
	var data []byte
	if len(parts) == 2 {
		data = []byte(parts[1])
	}
	switch parts[0] {
	case auth.SchemeIP:
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			return nil, fmt.Errorf("client address %q: %w", r.RemoteAddr, err)
		}
		return []jute.ID{{Scheme: auth.SchemeIP, ID: host}}, nil
	case auth.SchemeDigest:
		return auth.Authenticate(parts[0], data, s.cfg.SuperDigest)
	case auth.SchemeX509:
		if !s.cfg.AuthProviders.X509 {
			break
		}
		return s.adminX509(r)
	}
	return nil, fmt.Errorf("no authentication provider for scheme %q", parts[0])
}

// adminX509 is X509AuthenticationProvider.handleAuthentication for an HTTPS request: the
// x509 id of the client certificate (and super, for X509AuthenticationProvider.superUser).
func (s *Server) adminX509(r *http.Request) ([]jute.ID, error) {
	st := adminConnState(r)
	if st == nil {
		return nil, errors.New("x509: the request did not come over HTTPS")
	}
	if len(st.PeerCertificates) == 0 {
		return nil, errors.New("x509: no client certificate (admin.needClientAuth=true asks for one)")
	}
	var verify func([]*x509.Certificate) error
	if s.cfg.AdminTLS != nil {
		verify = s.cfg.AdminTLS.VerifyX509
	}
	if verify == nil {
		return nil, errors.New("x509: no truststore to check the certificate against (ssl.trustStore.location)")
	}
	if err := verify(st.PeerCertificates); err != nil {
		return nil, fmt.Errorf("x509: %w", err)
	}
	id, err := X509ID(st.PeerCertificates[0])
	if err != nil {
		return nil, err
	}
	var ids []jute.ID
	if su := s.cfg.AuthProviders.X509SuperUser; su != "" && su == id {
		ids = append(ids, jute.ID{Scheme: auth.SchemeSuper, ID: id})
	}
	ids = append(ids, jute.ID{Scheme: auth.SchemeX509, ID: id})
	s.log.Info("admin x509 authentication", "remote", r.RemoteAddr, "id", id)
	return ids, nil
}

// adminSnapshot is SnapshotCommand.runGet.
func (s *Server) adminSnapshot(w http.ResponseWriter, r *http.Request, st *adminSnapState, kwargs map[string]string) {
	resp := admin.Response("snapshot", nil, nil)
	if s.cfg.AdminSnap.SnapshotDisabled {
		s.log.Warn("snapshot command is disabled")
		writeAdminJSON(w, http.StatusServiceUnavailable, resp)
		return
	}
	if !st.snapLimit.allow() {
		s.log.Warn("snapshot request was rate limited")
		writeAdminJSON(w, http.StatusTooManyRequests, resp)
		return
	}
	streaming := true
	if v, ok := kwargs[snapParamStreaming]; ok {
		streaming = strings.EqualFold(v, "true") // Boolean.parseBoolean
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	path, zxid, err := s.writeAdminSnapshot()
	if err != nil {
		s.log.Warn("snapshot command failed", "err", err)
		writeAdminJSON(w, http.StatusInternalServerError, resp)
		return
	}
	f, err := s.cfg.FS.OpenFile(path, os.O_RDONLY, 0)
	var size int64
	if err == nil {
		size, err = s.cfg.FS.Stat(path)
	}
	if err != nil {
		s.log.Warn("snapshot command failed", "err", err)
		writeAdminJSON(w, http.StatusInternalServerError, resp)
		return
	}
	defer f.Close()
	w.Header().Set(snapHeaderLastZxid, "0x"+strconv.FormatUint(uint64(zxid), 16))
	w.Header().Set(snapHeaderSize, strconv.FormatInt(size+lastZxidSectionLen, 10))
	if !streaming || r.Method == http.MethodHead {
		writeAdminJSON(w, http.StatusOK, resp)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	if err := streamWithLastZxid(w, f, zxid); err != nil {
		s.log.Warn("streaming the snapshot failed", "remote", r.RemoteAddr, "err", err)
	}
}

// writeAdminSnapshot captures the tree on the core and writes it as snapshot.<zxid> in the
// data directory off the core (ZooKeeper's takeSnapshot), returning the file's path.
func (s *Server) writeAdminSnapshot() (string, int64, error) {
	var (
		nodes    []datatree.SnapNode
		acls     map[int64][]jute.ACL
		sessions []storage.SnapSession
		zxid     int64
		digest   int64
	)
	// The capture copies references only (node data is never changed in place), so the
	// core is held for a walk of the tree, not for encoding or writing it.
	if !s.coreQuery(func() {
		walker := s.tree.Walk()
		for done := false; !done; {
			nodes, done = walker.Next(4096, nodes)
		}
		acls = s.tree.ACLs()
		walker.Close()
		sessions, zxid, digest = s.sessionList(), s.tree.LastZxid(), s.tree.Digest()
	}) {
		return "", 0, errors.New("server: not serving")
	}
	fs := s.cfg.FS
	tmp := filepath.Join(s.snapDir(), adminSnapDir)
	if err := fs.MkdirAll(tmp, 0o755); err != nil {
		return "", 0, fmt.Errorf("server: admin snapshot: %w", err)
	}
	if names, err := fs.ReadDir(tmp); err == nil {
		for _, n := range names { // left by a crash in the middle of an earlier one
			fs.Remove(filepath.Join(tmp, n))
		}
	}
	sw, err := storage.NewSnapshotWriter(fs, tmp, zxid)
	if err != nil {
		return "", 0, fmt.Errorf("server: admin snapshot: %w", err)
	}
	if err := sw.WriteNodes(toStorage(nodes)); err != nil {
		sw.Abort()
		return "", 0, fmt.Errorf("server: admin snapshot: %w", err)
	}
	if err := sw.Finish(sessions, acls, zxid, digest); err != nil {
		return "", 0, fmt.Errorf("server: admin snapshot: %w", err)
	}
	final := filepath.Join(s.snapDir(), storage.SnapName(zxid))
	if err := fs.Rename(filepath.Join(tmp, storage.SnapName(zxid)), final); err != nil {
		return "", 0, fmt.Errorf("server: admin snapshot: %w", err)
	}
	if err := fs.SyncDir(s.snapDir()); err != nil {
		return "", 0, fmt.Errorf("server: admin snapshot: %w", err)
	}
	for { // last_snapshot reports the newest
		old := s.snappedZxid.Load()
		if old >= zxid || s.snappedZxid.CompareAndSwap(old, zxid) {
			break
		}
	}
	s.log.Info("admin snapshot written", "zxid", hex(zxid), "nodes", len(nodes))
	return final, zxid, nil
}

// lastZxidSectionLen is the length of ZooKeeper 3.9's lastProcessedZxid section: the zxid
// and a seal (checksum, then the string "/").
const lastZxidSectionLen = 8 + 8 + 4 + 1

// streamWithLastZxid copies a snapshot file to w and appends 3.9's lastProcessedZxid
// section, which 3.9 writes into every snapshot (serializeLastProcessedZxid.enabled) and
// its restore command reads the restored zxid from. The seal's checksum covers the whole
// stream before it, as SnapStream.sealStream's does.
func streamWithLastZxid(w io.Writer, f io.Reader, zxid int64) error {
	h := adler32.New()
	if _, err := io.Copy(io.MultiWriter(w, h), f); err != nil {
		return err
	}
	var b [lastZxidSectionLen]byte
	binary.BigEndian.PutUint64(b[:8], uint64(zxid))
	h.Write(b[:8])
	binary.BigEndian.PutUint64(b[8:16], uint64(h.Sum32()))
	binary.BigEndian.PutUint32(b[16:20], 1)
	b[20] = '/'
	_, err := w.Write(b[:])
	return err
}

// adminRestore is RestoreCommand.runPost.
func (s *Server) adminRestore(w http.ResponseWriter, r *http.Request, st *adminSnapState) {
	resp := admin.Response("restore", nil, nil)
	if !s.cfg.AdminSnap.RestoreEnabled {
		s.log.Warn("restore command is disabled (admin.restore.enabled=true enables it)")
		writeAdminJSON(w, http.StatusServiceUnavailable, resp)
		return
	}
	if !st.restoreLimit.allow() {
		s.log.Warn("restore request was rate limited")
		writeAdminJSON(w, http.StatusTooManyRequests, resp)
		return
	}
	fail := func(err error) {
		s.log.Warn("restore command failed", "err", err)
		msg := err.Error()
		writeAdminJSON(w, http.StatusInternalServerError, admin.Response("restore", &msg, nil))
	}
	if s.ensembleMode() {
		// Restoring one member would leave it with a tree the others do not have, and
		// its zxids would no longer mean what theirs mean.
		fail(errors.New("restore is only supported on a standalone server"))
		return
	}
	limit := s.cfg.AdminSnap.restoreMaxBytes()
	if r.ContentLength > limit {
		s.restoreTooLarge(w, r, limit)
		return
	}
	body := &deadlineReader{
		r:       http.MaxBytesReader(w, r.Body, limit),
		rc:      http.NewResponseController(w),
		timeout: s.cfg.AdminSnap.restoreReadTimeout(),
	}
	ld, err := s.readRestore(body)
	if err == nil {
		// The snapshot ends at its seal; whatever follows still counts against the cap
		// (and is read off, so that the connection can serve another request).
		var extra int64
		if extra, err = io.Copy(io.Discard, body); err == nil && extra > 0 {
			s.log.Warn("restore body has bytes after the snapshot; ignored", "remote", r.RemoteAddr, "bytes", extra)
		}
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		s.restoreTooLarge(w, r, limit)
		return
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.log.Warn("restore body stalled; closing the connection", "remote", r.RemoteAddr,
			"timeout", body.timeout, "read", body.n)
		// The answer is for the log of a client that is still there; the connection is
		// closed after it either way (net/http cannot reuse a half-read body).
		body.rc.SetWriteDeadline(time.Now().Add(body.timeout))
		msg := fmt.Sprintf("restore body stalled for %v (zkd.admin.restoreReadTimeoutMs)", body.timeout)
		writeAdminJSON(w, http.StatusRequestTimeout, admin.Response("restore", &msg, nil))
		return
	case err != nil:
		fail(err)
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var zxid int64
	if !s.coreQuery(func() { zxid = s.installRestore(ld) }) {
		writeAdminJSON(w, http.StatusOK, admin.ErrorResponse("restore", admin.NotServingMsg))
		return
	}
	writeAdminJSON(w, http.StatusOK, admin.Response("restore", nil, admin.Object{{Key: "last_zxid", Value: zxid}}))
}

// restoreTooLarge refuses a restore whose body is over the cap (413), naming the key.
func (s *Server) restoreTooLarge(w http.ResponseWriter, r *http.Request, limit int64) {
	s.log.Warn("restore body too large", "remote", r.RemoteAddr, "contentLength", r.ContentLength, "limit", limit)
	msg := fmt.Sprintf("restore body is larger than %d bytes (zkd.admin.restoreMaxBytes)", limit)
	// The rest of the body is never read: the connection ends with this answer, and the
	// header tells the client so rather than leaving it to find out on its next request.
	w.Header().Set("Connection", "close")
	writeAdminJSON(w, http.StatusRequestEntityTooLarge, admin.Response("restore", &msg, nil))
}

// deadlineReader reads a request body with an idle deadline: each Read must get a byte
// within timeout, so a stalled client frees its connection while a slow one that keeps
// sending may take as long as it needs (a whole-body deadline would cut off a large
// restore over a slow link).
type deadlineReader struct {
	r       io.Reader
	rc      *http.ResponseController
	timeout time.Duration
	n       int64
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	if err := d.rc.SetReadDeadline(time.Now().Add(d.timeout)); err != nil {
		return 0, fmt.Errorf("server: restore: setting the read deadline: %w", err)
	}
	n, err := d.r.Read(p)
	d.n += int64(n)
	return n, err
}

// readRestore builds a tree from a snapshot stream (ZKDatabase.deserializeSnapshot): its
// zxid is the lastProcessedZxid section's, or for a snapshot without one (zkd's own files,
// ZooKeeper before 3.9) the digest section's.
func (s *Server) readRestore(body io.Reader) (*loaded, error) {
	if body == nil {
		return nil, errors.New("server: restore: no snapshot in the request")
	}
	loader := datatree.NewLoader()
	sessions := map[int64]int32{}
	zxid := int64(-1)
	var digest *storage.SnapDigest
	err := storage.ReadSnapshot(body, storage.SnapshotHandler{
		Session: func(ss storage.SnapSession) error { sessions[ss.ID] = ss.Timeout; return nil },
		ACL:     func(key int64, acls []jute.ACL) error { loader.ACL(key, acls); return nil },
		Node:    func(n storage.SnapNode) error { return loader.Node(datatree.SnapNode(n)) },
		Digest: func(d storage.SnapDigest) error {
			digest = &d
			return nil
		},
		LastProcessedZxid: func(z int64) error { zxid = z; return nil },
	})
	if err != nil {
		return nil, fmt.Errorf("server: restore: %w", err)
	}
	if zxid < 0 && digest != nil {
		zxid = digest.Zxid
	}
	if zxid < 0 {
		return nil, errors.New("server: restore: the snapshot carries no zxid (no lastProcessedZxid or digest section)")
	}
	tree, err := loader.Finish(s.cfg.ExtendedTypes, zxid)
	if err != nil {
		return nil, fmt.Errorf("server: restore: %w", err)
	}
	if loader.MissingACLs > 0 {
		// A server's own snapshot may lack them (its log replay restores them); a
		// restored tree has no log behind it.
		return nil, fmt.Errorf("server: restore: %d nodes reference ACLs the snapshot lacks", loader.MissingACLs)
	}
	if digest != nil && digest.Zxid == zxid && digest.Version == jute.DigestVersion && digest.Digest != tree.Digest() {
		// ZooKeeper only logs this (compareSnapshotDigests): a fuzzy snapshot's digest
		// may be of a state the tree never exactly had.
		s.log.Warn("restored snapshot's digest does not match its tree", "zxid", hex(zxid))
	}
	return &loaded{tree: tree, sessions: sessions, snapZxid: zxid}, nil
}

// installRestore makes a restored tree the core's (ZooKeeperServer.restoreFromSnapshot):
// the tree and its sessions replace the current ones and session tracking starts afresh.
// Unlike ZooKeeper, which keeps its connections and lets the writes in flight land on the
// new tree, every client is disconnected and pending writes are dropped (their clients
// see the disconnect; sessions the snapshot holds reconnect). The tree is given a zxid
// past everything logged, and snapshotted at once: a restart loads it instead of
// replaying the old log over it, which ZooKeeper's restore leaves to the next snapshot.
// It returns that zxid.
func (s *Server) installRestore(ld *loaded) int64 {
	for c := range s.conns {
		s.detach(c)
		c.close()
	}
	for _, sess := range s.sessions {
		s.dropQueue(sess)
		sess.conn = nil
	}
	s.pending = nil
	restored := ld.snapZxid
	zxid := max(restored, s.lastProposed+1, s.lastQueued+1, s.tree.LastZxid()+1)
	ld.tree.SetLastZxid(zxid)
	ld.snapZxid = zxid
	s.install(ld)
	s.queueSnapshot()
	s.log.Info("database restored", "snapshotZxid", hex(restored), "zxid", hex(zxid),
		"nodes", s.tree.NodeCount(), "sessions", len(s.sessions))
	return zxid
}
