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
// ("digest user:password", "ip", or "x509" over HTTPS, adminhttps.go) holding every permission on "/", and both are rate
// limited. snapshot captures the tree on the core (references only, as for a learner's
// SNAP), writes snapshot.<zxid> into the data directory off the core, and streams it with
// 3.9's lastProcessedZxid section appended. restore reads a snapshot stream off the core
// and then, in one core step, drops every client connection and the writes in flight and
// installs the tree and sessions the stream holds; the new tree is snapshotted at once, so
// a restart keeps it.

// AdminSnapConfig is the admin.* settings of the snapshot and restore commands. The zero
// value is ZooKeeper's defaults.
type AdminSnapConfig struct {
	SnapshotDisabled bool  // admin.snapshot.enabled=false
	RestoreDisabled  bool  // admin.restore.enabled=false
	RateLimitMs      int64 // admin.rateLimiterIntervalInMS: 0 = 300000, negative = none
	// NeedClientAuth is admin.needClientAuth, kept for the record: AdminTLS applies it.
	NeedClientAuth bool
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
	allowed, ok := s.adminAuthorized(ids)
	switch {
	case !ok:
		writeAdminJSON(w, http.StatusOK, admin.ErrorResponse(name, admin.NotServingMsg))
		return
	case !allowed:
		writeAdminJSON(w, http.StatusForbidden, admin.ErrorResponse(name, admin.NotAuthorized))
		return
	}
	// A snapshot or restore of a large tree takes longer than the other commands' write
	// timeout allows; the client's own patience bounds it instead.
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Time{})
	rc.SetReadDeadline(time.Time{})
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

// adminAuthorized is Commands.handleAuthorization: ids must hold each permission bit of
// ALL on "/" (checked bit by bit, as ZooKeeper does). ok is false when the server stopped.
func (s *Server) adminAuthorized(ids []jute.ID) (allowed, ok bool) {
	var acls []jute.ACL
	ok = s.coreQuery(func() {
		if root := s.tree.Get("/"); root != nil {
			acls = s.tree.ACL(root.ACL)
		}
	})
	if !ok {
		return false, false
	}
	if s.cfg.SkipACL {
		return true, true
	}
	for bit := int32(1); bit <= jute.PermAll; bit <<= 1 {
		if jute.PermAll&bit != 0 && !s.cfg.AuthProviders.Check(acls, bit, ids) {
			return false, true
		}
	}
	return true, true
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
	if s.cfg.AdminSnap.RestoreDisabled {
		s.log.Warn("restore command is disabled")
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
	ld, err := s.readRestore(r.Body)
	if err != nil {
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
