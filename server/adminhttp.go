package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zkd-io/zkd/internal/admin"
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
		resp := s.runAdmin(name, kwargs)
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

// runAdmin runs one command. As in ZooKeeper every outcome, errors included, is an
// answer with status 200 carrying "command" and "error".
func (s *Server) runAdmin(name string, kwargs map[string]string) admin.Object {
	cmd, ok := admin.LookupHTTP(name)
	if !ok {
		return admin.ErrorResponse(name, admin.UnknownCommandPrefix+name)
	}
	if cmd.ServerRequired && !s.coreQuery(func() {}) {
		return admin.ErrorResponse(name, admin.NotServingMsg)
	}
	primary := cmd.Primary()
	fields, errMsg, ok := s.adminFields(primary, kwargs)
	if !ok {
		return admin.ErrorResponse(name, admin.NotServingMsg)
	}
	if errMsg != "" {
		return admin.ErrorResponse(primary, errMsg)
	}
	return admin.Response(primary, nil, fields)
}

// adminFields gathers and builds one command's fields. errMsg is a command's own error
// (a bad argument, a standalone server asked for its leader); ok is false when the server
// stopped serving while gathering.
func (s *Server) adminFields(cmd string, kwargs map[string]string) (fields admin.Object, errMsg string, ok bool) {
	switch cmd {
	case "ruok":
		return admin.Object{}, "", true
	case "observer_connection_stat_reset":
		s.resetObserverStats()
		return admin.Object{}, "", true
	case "observers":
		obs, ok := s.observersView()
		if !ok {
			return nil, "", false
		}
		return admin.ObserversJSON(obs), "", true
	case "connection_stat_reset":
		s.resetConnStats()
		return admin.Object{}, "", true
	case "stat_reset":
		s.resetServerStats()
		return admin.Object{}, "", true
	case "get_trace_mask":
		return admin.Object{{Key: "tracemask", Value: s.traceMask.Load()}}, "", true
	case "set_trace_mask":
		arg, present := kwargs["traceMask"]
		if !present {
			return nil, admin.TraceMaskMissingMsg, true
		}
		mask, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			return nil, admin.TraceMaskBad(arg), true
		}
		s.traceMask.Store(mask)
		return admin.Object{{Key: "tracemask", Value: mask}}, "", true
	case "environment":
		return admin.EnvironmentJSON(admin.Env(envInfo())), "", true
	case "system_properties":
		return systemProperties(), "", true
	case "dirs":
		d, l := s.dirSizes()
		return admin.Object{{Key: "datadir_size", Value: d}, {Key: "logdir_size", Value: l}}, "", true
	case "configuration":
		return s.configurationJSON(), "", true
	case "initial_configuration":
		return admin.Object{{Key: "initial_configuration", Value: s.cfg.InitialConfig}}, "", true
	case "is_read_only":
		serving, ro := s.readOnlyAnswer()
		return admin.Object{{Key: "read_only", Value: ro}}, "", serving
	case "hash":
		// As the four-letter word: zkd keeps no digest history yet.
		return admin.DigestsJSON(nil), "", true
	case "last_snapshot":
		zxid, ts := s.lastSnapshot()
		return admin.LastSnapshotJSON(zxid, ts), "", true
	case "server_stats", "stats", "monitor":
		var st admin.ServerStats
		var conns []admin.ConnInfo
		if cmd == "stats" {
			if !s.acquireBuilder() {
				return nil, "", false
			}
			defer releaseBuilder()
			st, conns, ok = s.gatherStat(nil)
		} else {
			st, ok = s.gatherStats()
		}
		if !ok {
			return nil, "", false
		}
		switch cmd {
		case "monitor":
			s.cfg.Metrics.Mntr(&st)
			return admin.MonitorJSON(st), "", true
		case "stats":
			d, l := s.dirSizes()
			return admin.StatsJSON(st, d, l, conns), "", true
		}
		d, l := s.dirSizes()
		return admin.ServerStatsJSON(st, d, l), "", true
	case "leader", "zabstate", "voting_view":
		return s.quorumJSON(cmd)
	}
	// The large answers: rationed like their four-letter words.
	if !s.acquireBuilder() {
		return nil, "", false
	}
	defer releaseBuilder()
	switch cmd {
	case "connections":
		conns, ok := s.gatherConns(nil)
		if !ok {
			return nil, "", false
		}
		return admin.ConnectionsJSON(conns), "", true
	case "dump":
		d, ok := s.gatherDump()
		if !ok {
			return nil, "", false
		}
		return admin.DumpJSON(d), "", true
	case "watches", "watches_by_path", "watch_summary":
		v, ok := s.gatherWatches()
		if !ok {
			return nil, "", false
		}
		switch cmd {
		case "watches":
			return admin.WatchesJSON(v.bySession()), "", true
		case "watches_by_path":
			return admin.WatchesByPathJSON(v.byPath()), "", true
		}
		return admin.WatchSummaryJSON(v.summary()), "", true
	}
	return nil, admin.UnknownCommandPrefix + cmd, true
}

// configurationJSON is ZooKeeperServerConf.toMap: the settings a client-facing server runs
// with. dataDir and dataLogDir are the version-2 directories, as ZooKeeper reports them.
func (s *Server) configurationJSON() admin.Object {
	port := 0
	if _, p, err := net.SplitHostPort(s.Addr()); err == nil {
		port, _ = strconv.Atoi(p)
	}
	abs := func(dir string) string {
		if a, err := filepath.Abs(dir); err == nil {
			return a
		}
		return dir
	}
	var sid int64
	if s.ensembleMode() {
		sid = s.cfg.ServerID
	}
	return admin.Object{
		{Key: "client_port", Value: port},
		{Key: "data_dir", Value: abs(s.snapDir())},
		{Key: "data_log_dir", Value: abs(s.logDir())},
		{Key: "tick_time", Value: s.cfg.TickTime},
		{Key: "max_client_cnxns", Value: s.cfg.MaxClientCnxns},
		{Key: "min_session_timeout", Value: s.cfg.MinSessionTimeout},
		{Key: "max_session_timeout", Value: s.cfg.MaxSessionTimeout},
		{Key: "server_id", Value: sid},
		{Key: "client_port_listen_backlog", Value: -1},
	}
}

// lastSnapshot is the newest complete snapshot's zxid and the time its file was written
// (epoch seconds), or -1 and -1 when there is none, as ZooKeeper's getLastSnapshotInfo.
// It reads the file's modification time off the core.
func (s *Server) lastSnapshot() (zxid, unixSeconds int64) {
	zxid = s.snappedZxid.Load()
	fi, err := os.Stat(filepath.Join(s.snapDir(), "snapshot."+strconv.FormatInt(zxid, 16)))
	if err != nil {
		return -1, -1
	}
	return zxid, fi.ModTime().Unix()
}

func (v quorumView) peer(id int64) (Peer, bool) {
	for _, p := range v.peers {
		if p.ID == id {
			return p, true
		}
	}
	return Peer{}, false
}

// quorumView is what leader, zabstate and voting_view read off the core.
type quorumView struct {
	peers    []Peer
	ensemble bool
	mode     string
	leader   int64 // -1 when not known
	zxid     int64
	serving  bool
}

func (s *Server) gatherQuorum() (quorumView, bool) {
	var v quorumView
	ok := s.query(func() {
		v.ensemble = s.ensembleMode()
		v.mode = s.role.mode()
		v.serving = s.serving()
		v.zxid = s.tree.LastZxid()
		v.peers = slices.Clone(s.ens.peers) // a reconfig changes them on the core
		v.leader = s.role.view().leader
	})
	return v, ok
}

func (s *Server) quorumJSON(cmd string) (admin.Object, string, bool) {
	v, ok := s.gatherQuorum()
	if !ok {
		return nil, "", false
	}
	switch cmd {
	case "leader":
		if !v.ensemble {
			return nil, admin.NotInitializedMsg, true
		}
		ip := ""
		if p, ok := v.peer(v.leader); ok {
			ip = p.Host
		}
		return admin.Object{
			{Key: "is_leader", Value: v.mode == "leader"},
			{Key: "leader_id", Value: v.leader},
			{Key: "leader_ip", Value: ip},
		}, "", true
	case "zabstate":
		if !v.ensemble {
			return admin.Object{{Key: "voting", Value: false}, {Key: "zabstate", Value: ""}}, "", true
		}
		me, _ := v.peer(s.cfg.ServerID)
		state := "election"
		if v.serving {
			state = "broadcast"
		}
		return admin.Object{
			{Key: "myid", Value: s.cfg.ServerID},
			{Key: "is_leader", Value: v.mode == "leader"},
			{Key: "quorum_address", Value: me.quorumAddr()},
			{Key: "election_address", Value: me.electionAddr()},
			{Key: "client_address", Value: s.Addr()},
			{Key: "voting", Value: !me.Observer},
			{Key: "last_zxid", Value: "0x" + strconv.FormatUint(uint64(v.zxid), 16)},
			{Key: "zab_epoch", Value: v.zxid >> 32},
			{Key: "zab_counter", Value: v.zxid & 0xffffffff},
			{Key: "zabstate", Value: state},
		}, "", true
	case "voting_view":
		view := admin.Object{}
		if v.ensemble {
			peers := v.peers
			slices.SortFunc(peers, func(a, b Peer) int { return int(a.ID - b.ID) })
			for _, p := range peers {
				if p.Observer {
					continue
				}
				view = append(view, admin.Field{Key: strconv.FormatInt(p.ID, 10), Value: admin.Object{
					{Key: "quorum_addr", Value: p.quorumAddr()},
					{Key: "election_addr", Value: p.electionAddr()},
					{Key: "learner_type", Value: "participant"},
				}})
			}
		}
		return admin.Object{{Key: "current_config", Value: view}}, "", true
	}
	return nil, admin.UnknownCommandPrefix + cmd, true
}

// systemProperties stands in for the JVM's system properties, which zkd does not have: the
// process facts envi reports under Java's property names, sorted by name as ZooKeeper sorts
// them.
func systemProperties() admin.Object {
	var o admin.Object
	for _, kv := range admin.Env(envInfo()) {
		if strings.HasPrefix(kv.Key, "os.memory.") || kv.Key == "zookeeper.version" || kv.Key == "host.name" {
			continue
		}
		o = append(o, admin.Field{Key: kv.Key, Value: kv.Value})
	}
	slices.SortFunc(o, func(a, b admin.Field) int { return strings.Compare(a.Key, b.Key) })
	return o
}
