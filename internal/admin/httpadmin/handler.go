package httpadmin

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/internal/admin/dispatch"
	"github.com/zkd-io/zkd/jute"
)

// The AdminServer is ZooKeeper's HTTP interface to the four-letter words: GET
// <commandURL> lists the commands, GET <commandURL>/<name> answers one as JSON. Each
// command reads what its four-letter word reads, through the same Backend queries (small
// core steps, formatting on the request's own goroutine, large answers rationed), so no
// HTTP request holds the server's core for longer than a four-letter word does.

// Backend is what the AdminServer asks the server beyond the commands' queries: the root
// ACL for the identity rule, and the snapshot and restore commands' work.
type Backend interface {
	admin.Backend
	// RootACL is the ACL of "/"; false when the server is not serving.
	RootACL() ([]jute.ACL, bool)
	// Snapshot captures the tree now, writes it as a snapshot file in the data directory
	// and opens that file: its zxid and size.
	Snapshot() (f io.ReadCloser, zxid, size int64, err error)
	// ReadRestore reads a snapshot stream into a tree, off the server's core; nothing is
	// installed yet.
	ReadRestore(r io.Reader) (Restored, error)
	// InstallRestore makes a tree ReadRestore read the server's, in one core step, and
	// returns the zxid the tree was given; false when the server is not serving.
	InstallRestore(t Restored) (zxid int64, ok bool)
}

// Restored is a tree ReadRestore read, waiting to be installed; only the Backend that read
// it knows what it holds.
type Restored any

// Options configure the AdminServer's handler.
type Options struct {
	// CommandURL is where the commands are served; "" = /commands.
	CommandURL string
	// Bind is the address the AdminServer listens on ("" when the handler is served
	// without a listener of its own), and AllowedHosts the names zkd.admin.allowedHosts
	// lists: together they set the Host check.
	Bind         string
	AllowedHosts []string
	// Console is served under ConsoleURL when set.
	Console    http.Handler
	ConsoleURL string
	Snap       SnapConfig
	// Guard decides who may run snapshot and restore.
	Guard *Guard
	Log   *slog.Logger
}

// readTimeout bounds how long a client may take to send its request headers, and
// writeTimeout a whole request from its headers to the end of its answer (waiting for
// a builder slot included).
const (
	readTimeout  = 10 * time.Second
	writeTimeout = 60 * time.Second
	idleTimeout  = 30 * time.Second // Jetty's idle timeout in ZooKeeper's AdminServer
)

// MaxHeaderBytes is Jetty's requestHeaderSize, the request line and headers a
// ZooKeeper AdminServer accepts before it answers 431. net/http reads up to MaxHeaderBytes
// plus 4096 bytes of buffer slop before it gives up (with a 431 of its own), so
// maxHeaderBytes leaves room for the slop; on a kept-alive connection it reads up to
// 4096 more before the limit applies (the wait for the next request peeks with no limit),
// so the handler measures each request too (tooLargeHeader) to hold the 8 KiB exactly.
const (
	MaxHeaderBytes = 8 << 10
	maxHeaderBytes = MaxHeaderBytes - 4096
)

// headerSize is the size of r's request line and headers as they came on the wire (give
// or take whitespace: net/http keeps no copy).
func headerSize(r *http.Request) int {
	n := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + 2
	n += len("Host: ") + len(r.Host) + 2
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + 2 + len(v) + 2
		}
	}
	return n + 2
}

// tooLargeHeader answers 431 (Jetty's answer) and returns true when r's header is over
// MaxHeaderBytes.
func tooLargeHeader(w http.ResponseWriter, r *http.Request) bool {
	if headerSize(r) <= MaxHeaderBytes {
		return false
	}
	w.Header().Set("Connection", "close")
	http.Error(w, "431 Request Header Fields Too Large", http.StatusRequestHeaderFieldsTooLarge)
	return true
}

// NewServer is the http.Server that serves h as ZooKeeper's Jetty does: its timeouts and
// header limit, and each request's connection recorded for ConnState. net/http's own
// complaints (a failed TLS handshake on an HTTPS-only port) go to log, naming the client.
func NewServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ConnContext:       ConnContext,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

type handler struct {
	b          Backend
	guard      *Guard
	log        *slog.Logger
	snapCfg    SnapConfig
	snaps      *snapState
	commandURL string
	hosts      hostCheck
	console    http.Handler
	consoleURL string
}

// Handler serves the AdminServer's commands, answered by b, and the console.
func Handler(b Backend, o Options) http.Handler {
	commandURL := o.CommandURL
	if commandURL == "" {
		commandURL = "/commands"
	}
	h := &handler{
		b: b, guard: o.Guard, log: o.Log, snapCfg: o.Snap, snaps: newSnapState(o.Snap),
		commandURL: strings.TrimSuffix(commandURL, "/"), hosts: newHostCheck(o.Bind, o.AllowedHosts),
		console: o.Console, consoleURL: o.ConsoleURL,
	}
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	commandURL := h.commandURL
	if tooLargeHeader(w, r) {
		return
	}
	// Before anything else: a page of a rebinding name must not even read.
	if h.hosts.refuse(w, r) {
		h.log.Warn("admin request refused: host not allowed", "remote", r.RemoteAddr, "host", r.Host,
			"origin", r.Header.Get("Origin"), "path", r.URL.Path)
		return
	}
	if h.console != nil && (r.URL.Path == h.consoleURL || strings.HasPrefix(r.URL.Path, h.consoleURL+"/")) {
		if ConnState(r) != nil {
			w.Header().Set("Strict-Transport-Security", stsHeader)
		}
		h.console.ServeHTTP(w, r)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, commandURL)
	if !ok || (rest != "" && rest[0] != '/') {
		http.NotFound(w, r)
		return
	}
	if ConnState(r) != nil {
		w.Header().Set("Strict-Transport-Security", stsHeader)
	}
	name := strings.TrimPrefix(rest, "/")
	cmd, known := admin.LookupHTTP(name)
	// ZooKeeper's servlet serves GET, and POST for restore. (It answers a POST of a GET
	// command, or a GET of restore, with a server error; zkd says which method fits.)
	post := known && cmd.Primary() == "restore"
	switch {
	case r.Method == http.MethodPost && (post || name == ""):
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && !post:
	default:
		allow := "GET, HEAD"
		if post {
			allow = "POST"
		}
		w.Header().Set("Allow", allow)
		http.Error(w, "HTTP method "+r.Method+" is not supported by this URL", http.StatusMethodNotAllowed)
		return
	}
	if name == "" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, admin.CommandLinks(commandURL))
		return
	}
	kwargs := make(map[string]string)
	for k, v := range r.URL.Query() {
		if len(v) > 0 {
			kwargs[k] = v[0]
		}
	}
	if known && cmd.NeedsAuth {
		h.serveAuthCommand(w, r, cmd, kwargs)
		return
	}
	resp := dispatch.Command(h.b, name, kwargs)
	body, err := json.MarshalIndent(resp, "", "  ")
	if err != nil {
		h.log.Error("admin command answer does not encode", "command", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(body, '\n'))
}
