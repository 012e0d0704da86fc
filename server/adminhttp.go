package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/internal/admin/dispatch"
)

// The AdminServer is ZooKeeper's HTTP interface to the four-letter words: GET
// <commandURL> lists the commands, GET <commandURL>/<name> answers one as JSON. Each
// command reads what its four-letter word reads, with the same gathering (small core steps,
// formatting on the request's own goroutine, large answers rationed by adminBuilders), so
// no HTTP request holds the core for longer than a four-letter word does.

// adminReadTimeout bounds how long a client may take to send its request headers, and
// adminWriteTimeout a whole request from its headers to the end of its answer (waiting for
// a builder slot included).
const (
	adminReadTimeout  = 10 * time.Second
	adminWriteTimeout = 60 * time.Second
	adminIdleTimeout  = 30 * time.Second // Jetty's idle timeout in ZooKeeper's AdminServer
)

// AdminMaxHeaderBytes is Jetty's requestHeaderSize, the request line and headers a
// ZooKeeper AdminServer accepts before it answers 431. net/http reads up to MaxHeaderBytes
// plus 4096 bytes of buffer slop before it gives up (with a 431 of its own), so
// adminMaxHeaderBytes leaves room for the slop; on a kept-alive connection it reads up to
// 4096 more before the limit applies (the wait for the next request peeks with no limit),
// so the handler measures each request too (tooLargeHeader) to hold the 8 KiB exactly.
const (
	AdminMaxHeaderBytes = 8 << 10
	adminMaxHeaderBytes = AdminMaxHeaderBytes - 4096
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
// AdminMaxHeaderBytes.
func tooLargeHeader(w http.ResponseWriter, r *http.Request) bool {
	if headerSize(r) <= AdminMaxHeaderBytes {
		return false
	}
	w.Header().Set("Connection", "close")
	http.Error(w, "431 Request Header Fields Too Large", http.StatusRequestHeaderFieldsTooLarge)
	return true
}

// startAdmin listens on Config.AdminAddr and serves the AdminServer there until Close.
func (s *Server) startAdmin() error {
	if s.cfg.AdminAddr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", s.cfg.AdminAddr)
	if err != nil {
		return fmt.Errorf("server: admin server: %w", err)
	}
	s.adminLn = ln
	s.adminSrv = &http.Server{
		Handler:           s.AdminHandler(s.cfg.AdminCommandURL),
		ReadHeaderTimeout: adminReadTimeout,
		WriteTimeout:      adminWriteTimeout,
		IdleTimeout:       adminIdleTimeout,
		MaxHeaderBytes:    adminMaxHeaderBytes,
		ConnContext:       adminConnContext,
		// net/http's own complaints (a failed TLS handshake on an HTTPS-only port) go to
		// the server's log, naming the client.
		ErrorLog: slog.NewLogLogger(s.log.With("component", "admin").Handler(), slog.LevelWarn),
	}
	ln = s.wrapAdminListener(ln)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.adminSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("admin server stopped", "err", err)
		}
	}()
	scheme := "http"
	switch a := s.cfg.AdminTLS; {
	case a != nil && a.ForceHTTPS:
		scheme = "https"
	case a != nil:
		scheme = "http+https"
	}
	s.log.Info("admin server serving", "addr", ln.Addr().String(), "commandURL", s.adminURL(), "scheme", scheme)
	return nil
}

// stopAdmin closes the AdminServer's listener and connections. Requests in flight end
// when their gathering sees the server stopping.
func (s *Server) stopAdmin() {
	if s.adminSrv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.adminSrv.Shutdown(ctx); err != nil {
		s.adminSrv.Close()
	}
}

// AdminAddr is the address the AdminServer listens on, "" when it is off.
func (s *Server) AdminAddr() string {
	if s.adminLn == nil {
		return ""
	}
	return s.adminLn.Addr().String()
}

func (s *Server) adminURL() string {
	if s.cfg.AdminCommandURL == "" {
		return "/commands"
	}
	return s.cfg.AdminCommandURL
}

// AdminHandler serves the AdminServer's commands under commandURL ("" = /commands), and
// the web console under ConsoleURL (console.go).
func (s *Server) AdminHandler(commandURL string) http.Handler {
	if commandURL == "" {
		commandURL = "/commands"
	}
	commandURL = strings.TrimSuffix(commandURL, "/")
	snaps := s.newAdminSnapState()
	consoleH := s.consoleHandler()
	bind := s.cfg.AdminAddr
	if s.adminLn != nil {
		bind = s.adminLn.Addr().String() // "localhost:8080" resolved to the address bound
	}
	hosts := newAdminHostCheck(bind, s.cfg.AdminAllowedHosts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tooLargeHeader(w, r) {
			return
		}
		// Before anything else: a page of a rebinding name must not even read.
		if hosts.refuse(w, r) {
			s.log.Warn("admin request refused: host not allowed", "remote", r.RemoteAddr, "host", r.Host,
				"origin", r.Header.Get("Origin"), "path", r.URL.Path)
			return
		}
		if r.URL.Path == ConsoleURL || strings.HasPrefix(r.URL.Path, ConsoleURL+"/") {
			if adminConnState(r) != nil {
				w.Header().Set("Strict-Transport-Security", stsHeader)
			}
			consoleH.ServeHTTP(w, r)
			return
		}
		rest, ok := strings.CutPrefix(r.URL.Path, commandURL)
		if !ok || (rest != "" && rest[0] != '/') {
			http.NotFound(w, r)
			return
		}
		if adminConnState(r) != nil {
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
			s.serveAuthCommand(w, r, cmd, snaps, kwargs)
			return
		}
		resp := dispatch.Command(adminBackend{s: s}, name, kwargs)
		body, err := json.MarshalIndent(resp, "", "  ")
		if err != nil {
			s.log.Error("admin command answer does not encode", "command", name, "err", err)
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(append(body, '\n'))
	})
}
