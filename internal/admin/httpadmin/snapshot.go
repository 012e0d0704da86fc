package httpadmin

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/adler32"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/internal/config"
)

// The AdminServer's snapshot and restore commands (ZooKeeper 3.9's SnapshotCommand and
// RestoreCommand). Both need a caller authenticated through the Authorization header
// ("digest user:password", or "x509" over HTTPS, tls.go) holding every permission
// on "/" and an identity the server vouches for (guard.go), and both are rate limited.
// snapshot captures the tree on the core (references only, as for a learner's SNAP),
// writes snapshot.<zxid> into the data directory off the core, and streams it with 3.9's
// lastProcessedZxid section appended. restore (off unless admin.restore.enabled=true)
// reads a snapshot stream off the core, at most RestoreMaxBytes of it and never stalling
// longer than RestoreReadTimeout, and then, in one core step, drops every client
// connection and the writes in flight and installs the tree and sessions the stream
// holds; the new tree is snapshotted at once, so a restart keeps it.

// SnapConfig is the settings of the snapshot and restore commands. The zero value is
// zkd's defaults: snapshot on, restore off, one call per 5 minutes, a 1 GiB restore body
// that may stall for 30 s at most.
type SnapConfig struct {
	SnapshotDisabled bool  // admin.snapshot.enabled=false
	RestoreEnabled   bool  // admin.restore.enabled=true (ZooKeeper's default; not zkd's)
	RateLimitMs      int64 // admin.rateLimiterIntervalInMS: 0 = 300000, negative = none
	// NeedClientAuth is admin.needClientAuth, kept for the record: TLS applies it.
	NeedClientAuth bool
	// RestoreMaxBytes caps a restore's body (zkd.admin.restoreMaxBytes); 0 = 1 GiB.
	RestoreMaxBytes int64
	// RestoreReadTimeout is the longest a restore's body may go without sending a byte
	// (zkd.admin.restoreReadTimeoutMs); 0 = 30 s, Jetty's idle timeout.
	RestoreReadTimeout time.Duration
}

// Defaults of SnapConfig's settings: the key table's (internal/config), written there once.
var (
	DefaultRestoreMaxBytes    = int64(config.DefaultInt(config.AdminRestoreMaxBytesKey))
	DefaultRestoreReadTimeout = time.Duration(config.DefaultInt(config.AdminRestoreReadTimeoutKey)) * time.Millisecond
	defaultRateInterval       = time.Duration(config.DefaultInt("admin.rateLimiterIntervalInMS")) * time.Millisecond
)

func (c SnapConfig) restoreMaxBytes() int64 {
	if c.RestoreMaxBytes > 0 {
		return c.RestoreMaxBytes
	}
	return DefaultRestoreMaxBytes
}

func (c SnapConfig) restoreReadTimeout() time.Duration {
	if c.RestoreReadTimeout > 0 {
		return c.RestoreReadTimeout
	}
	return DefaultRestoreReadTimeout
}

func (c SnapConfig) rateInterval() time.Duration {
	switch {
	case c.RateLimitMs == 0:
		return defaultRateInterval
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

// snapState is what one Handler keeps for snapshot and restore: ZooKeeper's
// per-command rate limiters, and a lock that keeps two snapshot writes (and a restore)
// from overlapping, as its snapshotAndRestoreLock does.
type snapState struct {
	snapLimit, restoreLimit *rateLimiter
	mu                      sync.Mutex
}

func newSnapState(c SnapConfig) *snapState {
	iv := c.rateInterval()
	return &snapState{snapLimit: newRateLimiter(iv), restoreLimit: newRateLimiter(iv)}
}

// Response headers and query parameter of the snapshot command.
const (
	snapHeaderLastZxid = "last_zxid"
	snapHeaderSize     = "snapshot_size"
	snapParamStreaming = "streaming"
)

// writeJSON answers with status code and a JSON body, as Jetty's JsonOutputter.
func writeJSON(w http.ResponseWriter, code int, o admin.Object) {
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
func (h *handler) serveAuthCommand(w http.ResponseWriter, r *http.Request, cmd admin.HTTPCommand, kwargs map[string]string) {
	name := cmd.Primary()
	if !h.b.Serving() {
		writeJSON(w, http.StatusOK, admin.ErrorResponse(name, admin.NotServingMsg))
		return
	}
	authInfo, present := r.Header["Authorization"]
	if !present || len(authInfo) == 0 {
		writeJSON(w, http.StatusUnauthorized, admin.ErrorResponse(name, admin.AuthMissingMsg))
		return
	}
	ids, err := h.guard.Authenticate(authInfo[0], r)
	if err != nil {
		h.log.Warn("admin command not authenticated", "command", name, "remote", r.RemoteAddr, "err", err)
		writeJSON(w, http.StatusUnauthorized, admin.ErrorResponse(name, admin.NotAuthenticated))
		return
	}
	verdict, ok := h.guard.Authorize(ids)
	switch {
	case !ok:
		writeJSON(w, http.StatusOK, admin.ErrorResponse(name, admin.NotServingMsg))
		return
	case verdict == NoPerms:
		h.log.Warn("admin command not authorized", "command", name, "remote", r.RemoteAddr, "ids", ids)
		writeJSON(w, http.StatusForbidden, admin.ErrorResponse(name, admin.NotAuthorized))
		return
	case verdict == NoIdentity:
		h.log.Warn("admin command refused: no identity the server vouches for", "command", name, "remote", r.RemoteAddr, "ids", ids)
		writeJSON(w, http.StatusForbidden, admin.ErrorResponse(name, needsIdentityMsg))
		return
	}
	// A snapshot or restore of a large tree takes longer than the other commands' write
	// timeout allows; the client's own patience bounds the snapshot's stream instead, and
	// the restore's body has a deadline of its own (restore).
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Time{})
	if name == "snapshot" {
		h.snapshot(w, r, kwargs)
		return
	}
	h.restore(w, r)
}

// snapshot is SnapshotCommand.runGet.
func (h *handler) snapshot(w http.ResponseWriter, r *http.Request, kwargs map[string]string) {
	resp := admin.Response("snapshot", nil, nil)
	if h.snapCfg.SnapshotDisabled {
		h.log.Warn("snapshot command is disabled")
		writeJSON(w, http.StatusServiceUnavailable, resp)
		return
	}
	if !h.snaps.snapLimit.allow() {
		h.log.Warn("snapshot request was rate limited")
		writeJSON(w, http.StatusTooManyRequests, resp)
		return
	}
	streaming := true
	if v, ok := kwargs[snapParamStreaming]; ok {
		streaming = strings.EqualFold(v, "true") // Boolean.parseBoolean
	}
	h.snaps.mu.Lock()
	defer h.snaps.mu.Unlock()
	f, zxid, size, err := h.b.Snapshot()
	if err != nil {
		h.log.Warn("snapshot command failed", "err", err)
		writeJSON(w, http.StatusInternalServerError, resp)
		return
	}
	defer f.Close()
	w.Header().Set(snapHeaderLastZxid, "0x"+strconv.FormatUint(uint64(zxid), 16))
	w.Header().Set(snapHeaderSize, strconv.FormatInt(size+lastZxidSectionLen, 10))
	if !streaming || r.Method == http.MethodHead {
		writeJSON(w, http.StatusOK, resp)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	if err := streamWithLastZxid(w, f, zxid); err != nil {
		h.log.Warn("streaming the snapshot failed", "remote", r.RemoteAddr, "err", err)
	}
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

// restore is RestoreCommand.runPost.
func (h *handler) restore(w http.ResponseWriter, r *http.Request) {
	resp := admin.Response("restore", nil, nil)
	if !h.snapCfg.RestoreEnabled {
		h.log.Warn("restore command is disabled (admin.restore.enabled=true enables it)")
		writeJSON(w, http.StatusServiceUnavailable, resp)
		return
	}
	if !h.snaps.restoreLimit.allow() {
		h.log.Warn("restore request was rate limited")
		writeJSON(w, http.StatusTooManyRequests, resp)
		return
	}
	fail := func(err error) {
		h.log.Warn("restore command failed", "err", err)
		msg := err.Error()
		writeJSON(w, http.StatusInternalServerError, admin.Response("restore", &msg, nil))
	}
	if h.b.Info().Ensemble {
		// Restoring one member would leave it with a tree the others do not have, and
		// its zxids would no longer mean what theirs mean.
		fail(errors.New("restore is only supported on a standalone server"))
		return
	}
	limit := h.snapCfg.restoreMaxBytes()
	if r.ContentLength > limit {
		h.restoreTooLarge(w, r, limit)
		return
	}
	body := &deadlineReader{
		r:       http.MaxBytesReader(w, r.Body, limit),
		rc:      http.NewResponseController(w),
		timeout: h.snapCfg.restoreReadTimeout(),
	}
	ld, err := h.b.ReadRestore(body)
	if err == nil {
		// The snapshot ends at its seal; whatever follows still counts against the cap
		// (and is read off, so that the connection can serve another request).
		var extra int64
		if extra, err = io.Copy(io.Discard, body); err == nil && extra > 0 {
			h.log.Warn("restore body has bytes after the snapshot; ignored", "remote", r.RemoteAddr, "bytes", extra)
		}
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		h.restoreTooLarge(w, r, limit)
		return
	case errors.Is(err, os.ErrDeadlineExceeded):
		h.log.Warn("restore body stalled; closing the connection", "remote", r.RemoteAddr,
			"timeout", body.timeout, "read", body.n)
		// The answer is for the log of a client that is still there; the connection is
		// closed after it either way (net/http cannot reuse a half-read body).
		body.rc.SetWriteDeadline(time.Now().Add(body.timeout))
		msg := fmt.Sprintf("restore body stalled for %v (zkd.admin.restoreReadTimeoutMs)", body.timeout)
		writeJSON(w, http.StatusRequestTimeout, admin.Response("restore", &msg, nil))
		return
	case err != nil:
		fail(err)
		return
	}
	h.snaps.mu.Lock()
	defer h.snaps.mu.Unlock()
	zxid, ok := h.b.InstallRestore(ld)
	if !ok {
		writeJSON(w, http.StatusOK, admin.ErrorResponse("restore", admin.NotServingMsg))
		return
	}
	writeJSON(w, http.StatusOK, admin.Response("restore", nil, admin.Object{{Key: "last_zxid", Value: zxid}}))
}

// restoreTooLarge refuses a restore whose body is over the cap (413), naming the key.
func (h *handler) restoreTooLarge(w http.ResponseWriter, r *http.Request, limit int64) {
	h.log.Warn("restore body too large", "remote", r.RemoteAddr, "contentLength", r.ContentLength, "limit", limit)
	msg := fmt.Sprintf("restore body is larger than %d bytes (zkd.admin.restoreMaxBytes)", limit)
	// The rest of the body is never read: the connection ends with this answer, and the
	// header tells the client so rather than leaving it to find out on its next request.
	w.Header().Set("Connection", "close")
	writeJSON(w, http.StatusRequestEntityTooLarge, admin.Response("restore", &msg, nil))
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
		return 0, fmt.Errorf("restore: setting the read deadline: %w", err)
	}
	n, err := d.r.Read(p)
	d.n += int64(n)
	return n, err
}
