package metrics

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
)

// Handler serves the metrics in Prometheus's text format (or protobuf, when the scraper
// asks for it). Like ZooKeeper's servlet it answers GET (and HEAD) only; ZooKeeper refuses
// TRACE explicitly, zkd every other method.
//
// In the text format a labelled set with no series yet (ack_latency on a server that has
// not led, the quota sets with no quota...) is written as its HELP and TYPE lines, as
// ZooKeeper's provider writes it, so that a dashboard finds the family; client_golang's
// encoder writes nothing for a family without samples.
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
		format := expfmt.NegotiateAccept(req.Header, expfmt.DefaultAcceptedFormats()...)
		if format.FormatType() != expfmt.TypeTextPlain {
			h.ServeHTTP(w, req)
			return
		}
		r.serveText(w, req, format)
	})
}

// labelledSets are ZooKeeper's labelled sets by name, with their type.
var labelledSets = func() map[string]dto.MetricType {
	m := map[string]dto.MetricType{}
	for _, n := range append(append([]string{}, zkBasicSummarySets...), zkAdvancedSummarySets...) {
		m[n] = dto.MetricType_SUMMARY
	}
	for _, n := range zkCounterSets {
		m[n] = dto.MetricType_COUNTER
	}
	for _, n := range zkGaugeSets {
		m[n] = dto.MetricType_GAUGE
	}
	return m
}()

// serveText writes the text format, with the labelled sets that have no series as HELP and
// TYPE lines only (ZooKeeper's HELP is the name).
func (r *Registry) serveText(w http.ResponseWriter, req *http.Request, format expfmt.Format) {
	mfs, err := r.reg.Gather()
	if err != nil && len(mfs) == 0 {
		http.Error(w, "An error has occurred while serving metrics:\n\n"+err.Error(), http.StatusInternalServerError)
		return
	}
	have := make(map[string]bool, len(mfs))
	for _, mf := range mfs {
		have[mf.GetName()] = true
	}
	for name, typ := range labelledSets {
		if !have[name] {
			mfs = append(mfs, &dto.MetricFamily{Name: proto.String(name), Help: proto.String(name), Type: typ.Enum()})
		}
	}
	sort.Slice(mfs, func(i, j int) bool { return mfs[i].GetName() < mfs[j].GetName() })
	var filter map[string]bool
	if names := req.URL.Query()["name[]"]; len(names) > 0 {
		filter = make(map[string]bool, len(names))
		for _, n := range names {
			filter[n] = true
		}
	}

	w.Header().Set("Content-Type", string(format))
	w.Header().Add("Vary", "Accept")
	w.Header().Add("Vary", "Accept-Encoding")
	var out io.Writer = w
	if acceptsGzip(req.Header.Get("Accept-Encoding")) {
		w.Header().Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(w)
		defer gz.Close()
		out = gz
	}
	bw := bufio.NewWriter(out)
	defer bw.Flush()
	enc := expfmt.NewEncoder(bw, format)
	for _, mf := range mfs {
		if filter != nil && !filter[mf.GetName()] {
			continue
		}
		if len(mf.GetMetric()) == 0 {
			fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", mf.GetName(), mf.GetHelp(), mf.GetName(),
				strings.ToLower(mf.GetType().String()))
			continue
		}
		// As promhttp's ContinueOnError: a family that fails to encode is left out.
		_ = enc.Encode(mf)
	}
}

// acceptsGzip reports whether an Accept-Encoding header accepts gzip.
func acceptsGzip(h string) bool {
	for _, part := range strings.Split(h, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		if q, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q="); ok {
			if v, err := strconv.ParseFloat(q, 64); err == nil && v == 0 {
				return false
			}
		}
		return true
	}
	return false
}

// Endpoint is the HTTP server of /metrics.
type Endpoint struct {
	srv  *http.Server
	ln   net.Listener
	addr string // the host Serve was given, with the port listened on
}

// Serve starts serving r on addr (host:port) at /metrics, as ZooKeeper's provider does.
// A wildcard host, 0.0.0.0 (ZooKeeper's default) as well as ::, listens on every interface,
// IPv4 and IPv6, as Java binds ZooKeeper's provider: the JVM opens a dual-stack socket and
// binds 0.0.0.0 as the IPv6 wildcard (ss lists both as *:port), so that [::1] is served as
// 127.0.0.1 is.
func (r *Registry) Serve(addr string, log *slog.Logger) (*Endpoint, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	// Name the endpoint by the host it was given (Go names a wildcard listener [::]).
	shown := ln.Addr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		if _, port, err := net.SplitHostPort(shown); err == nil {
			shown = net.JoinHostPort(host, port)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", r.Handler())
	e := &Endpoint{
		ln:   ln,
		addr: shown,
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
	log.Info("serving metrics", "url", "http://"+shown+"/metrics")
	return e, nil
}

// Addr is the address the endpoint listens on: the host Serve was given (0.0.0.0 stays
// 0.0.0.0) and the port.
func (e *Endpoint) Addr() string { return e.addr }

// Close stops the endpoint and the scrapes it is answering.
func (e *Endpoint) Close() error { return e.srv.Close() }

// TypeLines reads the families of a text-format scrape from its TYPE lines, name to type,
// families without samples included (the text parser drops those).
func TypeLines(scrape string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(scrape, "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			if name, typ, ok := strings.Cut(rest, " "); ok {
				m[name] = strings.TrimSpace(typ)
			}
		}
	}
	return m
}
