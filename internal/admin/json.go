package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// This file owns the AdminServer's JSON answers (ZooKeeper's /commands/<name>): which
// commands exist under which names, and the keys each answer carries, built from the same
// structs the four-letter words print. Keys and value types follow ZooKeeper 3.9's
// Commands.java; where a value cannot mean the same thing in zkd (JVM properties, the JVM's
// elapsed-time clock) the key is kept and the value is zkd's nearest equivalent.

// Field is one key of a JSON object.
type Field struct {
	Key   string
	Value any
}

// Object is a JSON object that keeps its keys in order, as ZooKeeper's LinkedHashMaps do,
// so answers read like ZooKeeper's.
type Object []Field

// MarshalJSON writes the fields in order.
func (o Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.Key)
		if err != nil {
			return nil, fmt.Errorf("admin: key %q: %w", f.Key, err)
		}
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(f.Value)
		if err != nil {
			return nil, fmt.Errorf("admin: value of %q: %w", f.Key, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Double is a float64 written the way Jackson writes a Java double ("0.0", "2.7143",
// "1.0E7"), so that tools which tell integers from doubles by the text see the same type.
type Double float64

// MarshalJSON writes Java's Double.toString; NaN and the infinities, which JSON cannot
// hold, are written as strings.
func (d Double) MarshalJSON() ([]byte, error) {
	f := float64(d)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return json.Marshal(javaDouble(f))
	}
	return []byte(javaDouble(f)), nil
}

// HTTPCommand is one AdminServer command: its names (the first is the primary one, which
// the answer's "command" key carries and the command list shows), whether it needs a
// serving server (ZooKeeper's isServerRequired) and whether it needs an authenticated
// caller with every permission on "/" (ZooKeeper's AuthRequest(ALL, "/"); zkd also wants an
// identity the server vouches for, internal/admin/httpadmin).
type HTTPCommand struct {
	Names          []string
	ServerRequired bool
	NeedsAuth      bool
}

// Primary is the command's primary name.
func (c HTTPCommand) Primary() string { return c.Names[0] }

// httpCommands are ZooKeeper 3.9's registered commands (Commands.registerAllCommands).
// snapshot (GET) and restore (POST) are the two that need authentication.
var httpCommands = []HTTPCommand{
	{[]string{"connection_stat_reset", "crst"}, true, false},
	{[]string{"configuration", "conf", "config"}, true, false},
	{[]string{"connections", "cons"}, true, false},
	{[]string{"hash"}, true, false},
	{[]string{"dirs"}, true, false},
	{[]string{"dump"}, true, false},
	{[]string{"environment", "env", "envi"}, false, false},
	{[]string{"get_trace_mask", "gtmk"}, false, false},
	{[]string{"initial_configuration", "icfg"}, true, false},
	{[]string{"is_read_only", "isro"}, true, false},
	{[]string{"last_snapshot", "lsnp"}, true, false},
	{[]string{"leader", "lead"}, true, false},
	{[]string{"monitor", "mntr"}, false, false},
	{[]string{"observer_connection_stat_reset", "orst"}, true, false},
	{[]string{"restore", "rest"}, true, true},
	{[]string{"ruok"}, true, false},
	{[]string{"set_trace_mask", "stmk"}, false, false},
	{[]string{"snapshot", "snap"}, true, true},
	{[]string{"server_stats", "srvr"}, true, false},
	{[]string{"stats", "stat"}, true, false},
	{[]string{"stat_reset", "srst"}, true, false},
	{[]string{"observers", "obsr"}, true, false},
	{[]string{"system_properties", "sysp"}, false, false},
	{[]string{"voting_view"}, true, false},
	{[]string{"watches", "wchc"}, true, false},
	{[]string{"watches_by_path", "wchp"}, true, false},
	{[]string{"watch_summary", "wchs"}, true, false},
	{[]string{"zabstate"}, false, false},
}

// LookupHTTP finds the command registered under name (primary name or alias).
func LookupHTTP(name string) (HTTPCommand, bool) {
	for _, c := range httpCommands {
		if slices.Contains(c.Names, name) {
			return c, true
		}
	}
	return HTTPCommand{}, false
}

// HTTPPrimaryNames lists the primary names, sorted, as the command list shows them.
func HTTPPrimaryNames() []string {
	names := make([]string, 0, len(httpCommands))
	for _, c := range httpCommands {
		names = append(names, c.Primary())
	}
	slices.Sort(names)
	return names
}

// CommandLinks is the body of a GET of the command URL itself: a link to every command,
// each followed by "<br/>", one per line, as JettyAdminServer prints them.
func CommandLinks(commandURL string) string {
	var b bytes.Buffer
	for _, n := range HTTPPrimaryNames() {
		fmt.Fprintf(&b, "<a href=\"%s\">%s</a>\n<br/>\n", commandURL+"/"+n, n)
	}
	return b.String()
}

// Response is a command's answer: its fields, then "command" and "error" (null when none),
// where ZooKeeper's CommandResponse.toMap puts them.
func Response(command string, err *string, fields Object) Object {
	out := make(Object, 0, len(fields)+2)
	out = append(out, fields...)
	var e any
	if err != nil {
		e = *err
	}
	return append(out, Field{"command", command}, Field{"error", e})
}

// ErrorResponse is an answer carrying only an error, as ZooKeeper writes it for an unknown
// command, a server that is not serving, or a bad argument.
func ErrorResponse(command, msg string) Object {
	return Object{{"error", msg}, {"command", command}}
}

// Error texts of ZooKeeper's admin commands.
const (
	UnknownCommandPrefix = "Unknown command: "
	NotInitializedMsg    = "server is not initialized"
	// The snapshot and restore commands' authentication errors (Commands.runCommand).
	AuthMissingMsg      = "Auth info is missing for the command"
	NotAuthenticated    = "Not authenticated"
	NotAuthorized       = "Not authorized"
	AuthErrorMsg        = "Error occurred during auth"
	TraceMaskMissingMsg = "setTraceMask requires long traceMask argument"
)

// TraceMaskBad is set_trace_mask's error for an argument that is not a long.
func TraceMaskBad(arg string) string { return TraceMaskMissingMsg + ", got " + arg }

func bufferStatsJSON(b BufferStats) Object {
	return Object{{"last_buffer_size", b.Last}, {"min_buffer_size", b.Min}, {"max_buffer_size", b.Max}}
}

// ServerStatsJSON is the fields of server_stats (srvr): ZooKeeper's ServerStats bean as
// Jackson writes it, the client response sizes again, the node count, and a leader's
// proposal sizes.
func ServerStatsJSON(s ServerStats, dataDirSize, logDirSize int64) Object {
	stats := Object{
		{"packets_sent", s.PacketsSent},
		{"packets_received", s.PacketsReceived},
		{"fsync_threshold_exceed_count", s.FsyncThresholdExceeded},
		{"client_response_stats", bufferStatsJSON(s.ResponseSize)},
		{"data_dir_size", dataDirSize},
		{"log_dir_size", logDirSize},
		{"server_state", s.Mode},
		{"last_processed_zxid", s.Zxid},
		{"outstanding_requests", s.Outstanding},
		{"avg_latency", Double(s.Latency.Avg())},
		{"max_latency", s.Latency.max()},
		{"min_latency", s.Latency.min()},
		{"num_alive_client_connections", s.Connections},
		{"auth_failed_count", s.AuthFailed},
		{"non_mtlsremote_conn_count", s.NonMTLSRemoteConns},
		{"non_mtlslocal_conn_count", s.NonMTLSLocalConns},
		{"provider_null", false},
		{"uptime", s.Uptime},
	}
	out := Object{
		{"version", s.Version},
		{"read_only", s.Mode == "read-only"},
		{"server_stats", stats},
		{"client_response", bufferStatsJSON(s.ResponseSize)},
	}
	if s.Mode == "leader" {
		ps := NewBufferStats()
		if s.ProposalSizes != nil {
			ps = *s.ProposalSizes
		}
		out = append(out, Field{"proposal_stats", bufferStatsJSON(ps)})
	}
	return append(out, Field{"node_count", s.NodeCount})
}

// StatsJSON is the fields of stats (stat): server_stats plus the connections in brief form.
// zkd has no TLS listener, so secure_connections is always empty.
func StatsJSON(s ServerStats, dataDirSize, logDirSize int64, conns []ConnInfo) Object {
	out := ServerStatsJSON(s, dataDirSize, logDirSize)
	return append(out, Field{"connections", connsJSON(conns, true)}, Field{"secure_connections", []any{}})
}

// ConnectionsJSON is the fields of connections (cons): every connection in full form.
func ConnectionsJSON(conns []ConnInfo) Object {
	return Object{{"connections", connsJSON(conns, false)}, {"secure_connections", []any{}}}
}

func connsJSON(conns []ConnInfo, brief bool) []Object {
	out := make([]Object, 0, len(conns))
	for _, c := range conns {
		out = append(out, c.json(brief))
	}
	return out
}

// json is ServerCnxn.getConnectionInfo. The remote address is Java's
// InetSocketAddress.toString without its leading "/" (getRemoteSocketAddress trims it).
func (c ConnInfo) json(brief bool) Object {
	remote := c.Remote
	if len(remote) > 0 && remote[0] == '/' {
		remote = remote[1:]
	}
	o := Object{
		{"remote_socket_address", remote},
		{"interest_ops", c.Interest},
		{"outstanding_requests", c.Queued},
		{"packets_received", c.Received},
		{"packets_sent", c.Sent},
	}
	if brief {
		return o
	}
	return append(o,
		Field{"session_id", c.SessionID},
		Field{"last_operation", c.LastOp},
		Field{"established", c.Established.UnixMilli()},
		Field{"session_timeout", c.Timeout},
		Field{"last_cxid", c.LastCxid},
		Field{"last_zxid", c.LastZxid},
		Field{"last_response_time", c.LastResponse},
		Field{"last_latency", c.LastLatency},
		Field{"min_latency", c.MinLatency},
		Field{"avg_latency", c.AvgLatency},
		Field{"max_latency", c.MaxLatency},
	)
}

// MonitorJSON is the fields of monitor (mntr): the same metrics mntr prints, under the
// same names without "zk_", integers as numbers and averages as doubles.
func MonitorJSON(s ServerStats) Object {
	var o Object
	mntrFields(s, func(k string, v any) {
		if f, ok := v.(float64); ok {
			v = Double(f)
		}
		o = append(o, Field{k, v})
	})
	return o
}

// DumpJSON is the fields of dump: session expiry buckets by deadline (epoch ms; ZooKeeper's
// keys are its JVM's elapsed-time ms) and each session's ephemerals. JSON object keys are
// strings, as Jackson writes a Long-keyed map.
func DumpJSON(d DumpInfo) Object {
	sets := slices.Clone(d.SessionSets)
	slices.SortStableFunc(sets, func(x, y SessionSet) int { return x.Expire.Compare(y.Expire) })
	expiry := make(Object, 0, len(sets))
	for _, s := range sets {
		ids := s.Sessions
		if ids == nil {
			ids = []int64{}
		}
		expiry = append(expiry, Field{strconv.FormatInt(s.Expire.UnixMilli(), 10), ids})
	}
	eph := make(Object, 0, len(d.Ephemerals))
	for _, e := range d.Ephemerals {
		eph = append(eph, Field{strconv.FormatInt(e.SessionID, 10), nonNil(e.Paths)})
	}
	return Object{{"expiry_time_to_session_ids", expiry}, {"session_id_to_ephemeral_paths", eph}}
}

// WatchesJSON is the fields of watches (wchc): each session's data-watched paths.
func WatchesJSON(sessions []SessionPaths) Object {
	o := make(Object, 0, len(sessions))
	for _, s := range sessions {
		o = append(o, Field{strconv.FormatInt(s.SessionID, 10), nonNil(s.Paths)})
	}
	return Object{{"session_id_to_watched_paths", o}}
}

// WatchesByPathJSON is the fields of watches_by_path (wchp): each path's watching sessions.
func WatchesByPathJSON(paths []PathSessions) Object {
	o := make(Object, 0, len(paths))
	for _, p := range paths {
		ids := p.Sessions
		if ids == nil {
			ids = []int64{}
		}
		o = append(o, Field{p.Path, ids})
	}
	return Object{{"path_to_session_ids", o}}
}

// WatchSummaryJSON is the fields of watch_summary (wchs).
func WatchSummaryJSON(connections, paths, total int) Object {
	return Object{{"num_connections", connections}, {"num_paths", paths}, {"num_total_watches", total}}
}

// EnvironmentJSON is the fields of environment (envi): Env's pairs as strings.
func EnvironmentJSON(env []KV) Object {
	o := make(Object, 0, len(env))
	for _, kv := range env {
		o = append(o, Field{kv.Key, kv.Value})
	}
	return o
}

// DigestsJSON is the fields of hash: the digest history, oldest first.
func DigestsJSON(history []ZxidDigest) Object {
	out := make([]Object, 0, len(history))
	for _, d := range history {
		out = append(out, Object{{"zxid", d.Zxid}, {"digest", d.Digest}})
	}
	return Object{{"digests", out}}
}

// LastSnapshotJSON is the fields of last_snapshot: the newest snapshot's zxid in hex
// (Long.toHexString) and its time in epoch seconds; -1 for both when there is none.
func LastSnapshotJSON(zxid, unixSeconds int64) Object {
	return Object{{"zxid", hex(zxid)}, {"timestamp", unixSeconds}}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
