package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkd-io/zkd/internal/admin/httpadmin"
)

// The server's side of the AdminServer (internal/admin/httpadmin serves it): its listener's
// lifetime, and the handler built from the server's settings.

// AdminTLS, AdminTLSOptions and AdminSnapConfig are the AdminServer's settings in Config.
// httpadmin owns them; the aliases keep the names Config and cmd/zkd use.
type (
	AdminTLS        = httpadmin.TLS
	AdminTLSOptions = httpadmin.TLSOptions
	AdminSnapConfig = httpadmin.SnapConfig
)

// NewAdminTLS is httpadmin.NewTLS.
func NewAdminTLS(o AdminTLSOptions) (*AdminTLS, error) { return httpadmin.NewTLS(o) }

// AdminMaxHeaderBytes is the most request line and headers the AdminServer accepts.
const AdminMaxHeaderBytes = httpadmin.MaxHeaderBytes

// adminState is the AdminServer's listener and server (nil when it is off; set by Start)
// and the trace mask.
type adminState struct {
	ln   net.Listener
	srv  *http.Server
	once sync.Once // stops srv
	// traceMask is what stmk set and gtmk reports. ZooKeeper keeps it in ZooTrace, a
	// JVM-wide static; zkd keeps it per server so servers sharing a process (tests) do not
	// see each other's. It affects no logging: zkd has no trace levels.
	traceMask atomic.Int64
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
	s.admin.ln = ln
	s.admin.srv = httpadmin.NewServer(s.AdminHandler(s.cfg.AdminCommandURL), s.log.With("component", "admin"))
	ln = httpadmin.WrapListener(ln, s.cfg.AdminTLS, func() { s.counters.add(cntInsecureAdmin, 1) }, s.log)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.admin.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
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
	if s.admin.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.admin.srv.Shutdown(ctx); err != nil {
		s.admin.srv.Close()
	}
}

// AdminAddr is the address the AdminServer listens on, "" when it is off.
func (s *Server) AdminAddr() string {
	if s.admin.ln == nil {
		return ""
	}
	return s.admin.ln.Addr().String()
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
	bind := s.cfg.AdminAddr
	if s.admin.ln != nil {
		bind = s.admin.ln.Addr().String() // "localhost:8080" resolved to the address bound
	}
	return httpadmin.Handler(adminBackend{s: s}, httpadmin.Options{
		CommandURL: commandURL, Bind: bind, AllowedHosts: s.cfg.AdminAllowedHosts,
		Console: s.consoleHandler(), ConsoleURL: ConsoleURL,
		Snap: s.cfg.AdminSnap, Guard: s.adminGuard(), Log: s.log,
	})
}

// adminGuard is the identity rule of snapshot, restore and the console's writes.
func (s *Server) adminGuard() *httpadmin.Guard {
	a := httpadmin.Auth{SuperDigest: s.cfg.SuperDigest, Providers: s.cfg.AuthProviders, SkipACL: s.cfg.SkipACL, X509ID: X509ID}
	if s.cfg.AdminTLS != nil {
		a.VerifyX509 = s.cfg.AdminTLS.VerifyX509
	}
	return httpadmin.NewGuard(a, adminBackend{s: s}, s.log)
}
