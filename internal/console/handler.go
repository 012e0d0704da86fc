package console

import (
	"bytes"
	"context"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zkd-io/zkd/jute"
)

//go:embed static
var staticFS embed.FS

// Limits of the API.
const (
	// PageSize is the children per page when the request does not say, and MaxPageSize
	// the most it may ask for.
	PageSize    = 500
	MaxPageSize = 5000
	// Search bounds when the request does not say, and the most it may ask for.
	DefaultMaxMatches = 200
	DefaultMaxVisited = 100_000
	LimitMaxMatches   = 5000
	LimitMaxVisited   = 2_000_000
	// HexLimit bounds the bytes of data shown as hex (a node holds up to jute.maxbuffer).
	HexLimit = 64 << 10
	// maxWriteBody bounds a write's request body: the data (hex doubles it) and its JSON.
	maxWriteBody = 8 << 20
	// requestTimeout bounds one API request's gathering or write.
	requestTimeout = 30 * time.Second
)

// CSRFHeader must be on every POST: a cross-site form cannot set it, and a cross-site
// script cannot send it without the browser's CORS preflight, which the console never
// answers.
const CSRFHeader = "X-Zkd-Console"

// Handler serves the console under prefix (e.g. "/console"): the page at prefix+"/", its
// assets under prefix+"/static/" and prefix+"/display.js" (display.go), the JSON API under
// prefix+"/api/".
func Handler(prefix string, b Backend, log *slog.Logger) http.Handler {
	prefix = strings.TrimSuffix(prefix, "/")
	h := &handler{b: b, log: log, prefix: prefix}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(fmt.Sprintf("console: embedded assets: %v", err)) // the embed is part of the binary
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+prefix+"/static/", http.StripPrefix(prefix+"/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET "+prefix+"/{$}", h.index)
	mux.HandleFunc("GET "+prefix+"/display.js", h.displayScript)
	mux.HandleFunc("GET "+prefix+"/api/children", h.children)
	mux.HandleFunc("GET "+prefix+"/api/node", h.node)
	mux.HandleFunc("GET "+prefix+"/api/search", h.search)
	mux.HandleFunc("GET "+prefix+"/api/sessions", h.sessions)
	mux.HandleFunc("GET "+prefix+"/api/ephemerals", h.ephemerals)
	mux.HandleFunc("GET "+prefix+"/api/watches", h.watches)
	mux.HandleFunc("GET "+prefix+"/api/ensemble", h.ensemble)
	mux.HandleFunc("GET "+prefix+"/api/metrics", h.metrics)
	mux.HandleFunc("POST "+prefix+"/api/set", h.set)
	mux.HandleFunc("POST "+prefix+"/api/setacl", h.setACL)
	mux.HandleFunc(prefix, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, prefix+"/", http.StatusMovedPermanently)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The console is never framed (clickjacking) and loads nothing from elsewhere.
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		mux.ServeHTTP(w, r)
	})
}

type handler struct {
	b      Backend
	log    *slog.Logger
	prefix string
}

func (h *handler) index(w http.ResponseWriter, r *http.Request) {
	page, err := staticFS.ReadFile("static/index.html")
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(page)
}

// apiError is the body of every refused or failed API request.
type apiError struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(append(body, '\n'))
}

// fail answers a backend error with its status.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrNoNode):
		code = http.StatusNotFound
	case errors.Is(err, ErrNoAuth):
		code = http.StatusForbidden
	case errors.Is(err, ErrBadVersion):
		code = http.StatusConflict
	case errors.Is(err, ErrBadRequest):
		code = http.StatusBadRequest
	case errors.Is(err, ErrNotServing), errors.Is(err, context.DeadlineExceeded):
		code = http.StatusServiceUnavailable
	}
	if code == http.StatusInternalServerError {
		h.log.Warn("console request failed", "path", r.URL.Path, "err", err)
	}
	writeJSON(w, code, apiError{err.Error()})
}

// readIDs are the ids a read is made with: those the Authorization header proves, if it is
// there, and the client's address. ok is false when the header is there and wrong (the
// request has been answered).
func (h *handler) readIDs(w http.ResponseWriter, r *http.Request) (ids []jute.ID, ok bool) {
	ids = h.b.AnonymousIDs(r)
	if hdr := r.Header.Get("Authorization"); hdr != "" {
		more, err := h.b.Authenticate(hdr, r)
		if err != nil {
			writeJSON(w, http.StatusUnauthorized, apiError{"authentication failed: " + err.Error()})
			return nil, false
		}
		ids = append(ids, more...)
	}
	return ids, true
}

// writeIDs checks a write as the AdminServer checks its authenticated commands, after the
// CSRF checks: credentials are required (401), must authenticate (401) and be authorized
// (403). ok is false when the request has been answered.
func (h *handler) writeIDs(w http.ResponseWriter, r *http.Request) (ids []jute.ID, ok bool) {
	if r.Header.Get(CSRFHeader) == "" {
		writeJSON(w, http.StatusForbidden, apiError{"missing " + CSRFHeader + " header"})
		return nil, false
	}
	// An Origin equal to Host proves nothing against DNS rebinding (the page's own name is
	// in both); the AdminServer's Host check (internal/admin/httpadmin) refuses such names before
	// this handler runs, and writes need an identity the server vouches for anyway.
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			writeJSON(w, http.StatusForbidden, apiError{"cross-origin request refused"})
			return nil, false
		}
	}
	hdr := r.Header.Get("Authorization")
	if hdr == "" {
		writeJSON(w, http.StatusUnauthorized, apiError{"writes need credentials (Authorization: digest user:password)"})
		return nil, false
	}
	ids, err := h.b.Authenticate(hdr, r)
	if err != nil {
		h.log.Warn("console write not authenticated", "remote", r.RemoteAddr, "err", err)
		writeJSON(w, http.StatusUnauthorized, apiError{"authentication failed: " + err.Error()})
		return nil, false
	}
	allowed, err := h.b.Authorized(ids)
	if err != nil {
		h.fail(w, r, err)
		return nil, false
	}
	if !allowed {
		writeJSON(w, http.StatusForbidden, apiError{"not authorized: writes need every permission on /"})
		return nil, false
	}
	return ids, true
}

func intParam(r *http.Request, name string, def, lo, hi int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%w: %s must be a number from %d to %d", ErrBadRequest, name, lo, hi)
	}
	return n, nil
}

func pathParam(r *http.Request) string {
	if p := r.URL.Query().Get("path"); p != "" {
		return p
	}
	return "/"
}

func (h *handler) children(w http.ResponseWriter, r *http.Request) {
	ids, ok := h.readIDs(w, r)
	if !ok {
		return
	}
	limit, err := intParam(r, "limit", PageSize, 1, MaxPageSize)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	page, err := h.b.Children(ctx, pathParam(r), r.URL.Query().Get("after"), limit, ids)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// StatJSON is a Stat as the console shows it: zxids in hex, times in epoch ms.
type StatJSON struct {
	Czxid          string `json:"czxid"`
	Mzxid          string `json:"mzxid"`
	Pzxid          string `json:"pzxid"`
	Ctime          int64  `json:"ctime"`
	Mtime          int64  `json:"mtime"`
	Version        int32  `json:"version"`
	Cversion       int32  `json:"cversion"`
	Aversion       int32  `json:"aversion"`
	EphemeralOwner string `json:"ephemeralOwner"`
	DataLength     int32  `json:"dataLength"`
	NumChildren    int32  `json:"numChildren"`
}

func hex64(v int64) string { return "0x" + strconv.FormatUint(uint64(v), 16) }

func statJSON(s jute.Stat) StatJSON {
	return StatJSON{
		Czxid: hex64(s.Czxid), Mzxid: hex64(s.Mzxid), Pzxid: hex64(s.Pzxid),
		Ctime: s.Ctime, Mtime: s.Mtime,
		Version: s.Version, Cversion: s.Cversion, Aversion: s.Aversion,
		EphemeralOwner: hex64(s.EphemeralOwner), DataLength: s.DataLength, NumChildren: s.NumChildren,
	}
}

// ACLJSON is one ACL entry: perms as zkCli prints them ("cdrwa").
type ACLJSON struct {
	Scheme string `json:"scheme"`
	ID     string `json:"id"`
	Perms  string `json:"perms"`
}

var permLetters = []struct {
	bit    int32
	letter byte
}{{jute.PermCreate, 'c'}, {jute.PermDelete, 'd'}, {jute.PermRead, 'r'}, {jute.PermWrite, 'w'}, {jute.PermAdmin, 'a'}}

// PermString is perms as letters, zkCli's order.
func PermString(perms int32) string {
	var b []byte
	for _, p := range permLetters {
		if perms&p.bit != 0 {
			b = append(b, p.letter)
		}
	}
	return string(b)
}

// ParsePerms reads letters of "cdrwa" in any order.
func ParsePerms(s string) (int32, error) {
	var perms int32
	for i := 0; i < len(s); i++ {
		found := false
		for _, p := range permLetters {
			if s[i] == p.letter {
				perms |= p.bit
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("%w: permission %q is not one of cdrwa", ErrBadRequest, s[i])
		}
	}
	return perms, nil
}

// DataJSON is a node's data in each form the node view offers.
type DataJSON struct {
	Size int `json:"size"`
	// Text is the data when it is UTF-8; JSON is it pretty-printed when it parses as a JSON
	// object or array.
	Text *string `json:"text,omitempty"`
	JSON *string `json:"json,omitempty"`
	// Hex is a dump of the first HexLimit bytes; HexTruncated says there were more.
	Hex          string `json:"hex"`
	HexTruncated bool   `json:"hexTruncated,omitempty"`
	Base64       string `json:"base64"`
}

// NodeJSON is the node view's answer.
type NodeJSON struct {
	Path       string    `json:"path"`
	Stat       StatJSON  `json:"stat"`
	ACL        []ACLJSON `json:"acl"`
	DataHidden bool      `json:"dataHidden,omitempty"`
	Data       *DataJSON `json:"data,omitempty"`
}

// FormatData renders data as text, pretty JSON, hex and base64.
func FormatData(data []byte) *DataJSON {
	d := &DataJSON{Size: len(data), Base64: base64.StdEncoding.EncodeToString(data)}
	if utf8.Valid(data) {
		s := string(data)
		d.Text = &s
		if t := bytes.TrimSpace(data); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
			var buf bytes.Buffer
			if json.Indent(&buf, t, "", "  ") == nil {
				js := buf.String()
				d.JSON = &js
			}
		}
	}
	shown := data
	if len(shown) > HexLimit {
		shown, d.HexTruncated = shown[:HexLimit], true
	}
	d.Hex = hex.Dump(shown)
	return d
}

func (h *handler) node(w http.ResponseWriter, r *http.Request) {
	ids, ok := h.readIDs(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	n, err := h.b.Get(ctx, pathParam(r), ids)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := NodeJSON{Path: n.Path, Stat: statJSON(n.Stat), ACL: []ACLJSON{}, DataHidden: n.DataHidden}
	for _, a := range n.ACL {
		out.ACL = append(out.ACL, ACLJSON{Scheme: a.ID.Scheme, ID: a.ID.ID, Perms: PermString(a.Perms)})
	}
	if !n.DataHidden {
		out.Data = FormatData(n.Data)
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *handler) search(w http.ResponseWriter, r *http.Request) {
	ids, ok := h.readIDs(w, r)
	if !ok {
		return
	}
	q := Query{Text: r.URL.Query().Get("q"), Prefix: r.URL.Query().Get("mode") != "substring", IDs: ids}
	var err error
	if q.MaxMatches, err = intParam(r, "max", DefaultMaxMatches, 1, LimitMaxMatches); err != nil {
		h.fail(w, r, err)
		return
	}
	if q.MaxVisited, err = intParam(r, "visit", DefaultMaxVisited, 1, LimitMaxVisited); err != nil {
		h.fail(w, r, err)
		return
	}
	if q.Text == "" || (q.Prefix && q.Text[0] != '/') {
		h.fail(w, r, fmt.Errorf("%w: a prefix search needs a path starting with /, a substring search some text", ErrBadRequest))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	res, err := h.b.Search(ctx, q)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if res.Matches == nil {
		res.Matches = []string{}
	}
	writeJSON(w, http.StatusOK, res)
}

func (h *handler) sessions(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	ss, err := h.b.Sessions(ctx)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	for i := range ss {
		ss[i].IDHex = hex64(ss[i].ID)
	}
	if ss == nil {
		ss = []Session{}
	}
	writeJSON(w, http.StatusOK, ss)
}

func (h *handler) ephemerals(w http.ResponseWriter, r *http.Request) {
	v := strings.TrimPrefix(r.URL.Query().Get("session"), "0x")
	id, err := strconv.ParseUint(v, 16, 64)
	if err != nil {
		h.fail(w, r, fmt.Errorf("%w: session must be a hex id", ErrBadRequest))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	paths, err := h.b.Ephemerals(ctx, int64(id))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if paths == nil {
		paths = []string{}
	}
	writeJSON(w, http.StatusOK, paths)
}

func (h *handler) watches(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	ws, err := h.b.Watches(ctx)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if ws == nil {
		ws = []PathWatches{}
	}
	writeJSON(w, http.StatusOK, ws)
}

func (h *handler) ensemble(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	e, err := h.b.Ensemble(ctx)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if e.Members == nil {
		e.Members = []Member{}
	}
	writeJSON(w, http.StatusOK, e)
}

func (h *handler) metrics(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	m, err := h.b.Metrics(ctx)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	m["time_ms"] = time.Now().UnixMilli()
	writeJSON(w, http.StatusOK, m)
}

// SetRequest is the body of POST api/set: Data in Encoding ("text", "hex" or "base64"),
// and the version it must have (-1: any).
type SetRequest struct {
	Path     string `json:"path"`
	Data     string `json:"data"`
	Encoding string `json:"encoding"`
	Version  int32  `json:"version"`
}

// SetACLRequest is the body of POST api/setacl.
type SetACLRequest struct {
	Path    string    `json:"path"`
	ACL     []ACLJSON `json:"acl"`
	Version int32     `json:"version"`
}

func decodeBody(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxWriteBody+1))
	if err != nil {
		return fmt.Errorf("%w: reading the body: %w", ErrBadRequest, err)
	}
	if len(body) > maxWriteBody {
		return fmt.Errorf("%w: body larger than %d bytes", ErrBadRequest, maxWriteBody)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return nil
}

func decodeData(s, encoding string) ([]byte, error) {
	switch encoding {
	case "", "text":
		return []byte(s), nil
	case "hex":
		b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
		if err != nil {
			return nil, fmt.Errorf("%w: data is not hex: %w", ErrBadRequest, err)
		}
		return b, nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("%w: data is not base64: %w", ErrBadRequest, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("%w: encoding %q is not text, hex or base64", ErrBadRequest, encoding)
}

func (h *handler) set(w http.ResponseWriter, r *http.Request) {
	ids, ok := h.writeIDs(w, r)
	if !ok {
		return
	}
	var req SetRequest
	if err := decodeBody(r, &req); err != nil {
		h.fail(w, r, err)
		return
	}
	data, err := decodeData(req.Data, req.Encoding)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	st, err := h.b.Set(ctx, r.RemoteAddr, req.Path, data, req.Version, ids)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.log.Info("console set data", "path", req.Path, "remote", r.RemoteAddr, "version", st.Version)
	writeJSON(w, http.StatusOK, statJSON(st))
}

func (h *handler) setACL(w http.ResponseWriter, r *http.Request) {
	ids, ok := h.writeIDs(w, r)
	if !ok {
		return
	}
	var req SetACLRequest
	if err := decodeBody(r, &req); err != nil {
		h.fail(w, r, err)
		return
	}
	acl := make([]jute.ACL, 0, len(req.ACL))
	for _, a := range req.ACL {
		perms, err := ParsePerms(a.Perms)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		acl = append(acl, jute.ACL{Perms: perms, ID: jute.ID{Scheme: a.Scheme, ID: a.ID}})
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	st, err := h.b.SetACL(ctx, r.RemoteAddr, req.Path, acl, req.Version, ids)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.log.Info("console set ACL", "path", req.Path, "remote", r.RemoteAddr, "aversion", st.Aversion)
	writeJSON(w, http.StatusOK, statJSON(st))
}
