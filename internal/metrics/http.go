package metrics

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves the metrics in Prometheus's text format (or protobuf, when the scraper
// asks for it). Like ZooKeeper's servlet it answers GET (and HEAD) only; ZooKeeper refuses
// TRACE explicitly, zkd every other method.
func (r *Registry) Handler() http.Handler {
	h := promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{
		// A collector that fails must not hide the others.
		ErrorHandling: promhttp.ContinueOnError,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, req)
	})
}

// Endpoint is the HTTP server of /metrics.
type Endpoint struct {
	srv *http.Server
	ln  net.Listener
}

// Serve starts serving r on addr (host:port) at /metrics, as ZooKeeper's provider does.
func (r *Registry) Serve(addr string, log *slog.Logger) (*Endpoint, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", r.Handler())
	e := &Endpoint{
		ln: ln,
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 10 * time.Second,
			WriteTimeout:      30 * time.Second,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
	}
	go func() {
		if err := e.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics endpoint stopped", "err", err)
		}
	}()
	log.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return e, nil
}

// Addr is the address the endpoint listens on.
func (e *Endpoint) Addr() string { return e.ln.Addr().String() }

// Close stops the endpoint and the scrapes it is answering.
func (e *Endpoint) Close() error { return e.srv.Close() }
