package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zk"
	"github.com/zkd-io/zkd/zktest"
)

// The AdminServer's differential test: Apache ZooKeeper 3.8 (Debian's, with Jetty) and zkd
// hold the same data, a session with an ephemeral and watches; every command 3.8 lists is
// asked of both and the answers' shapes (every key path with its JSON type) must match,
// except for the differences listed in adminDiffs, and the values that do not depend on
// time, ports or session ids must be equal.

// adminDiff is one deliberate difference in a command's answer: key paths (as shapes
// prints them; an entry may be a regular expression matching the whole path) that only one
// server has, and why.
type adminDiff struct {
	onlyRef, onlyZkd []string
	why              string
}

// monitorDiff is the difference of monitor (mntr), which its four-letter word has too.
var monitorDiff = adminDiff{
	onlyZkd: []string{"/trunc_count:number", "/digest_resync_count:number"},
	why:     "trunc_count (ZooKeeper counts DIFF and SNAP syncs, not TRUNC ones) and digest_resync_count (ZooKeeper only counts a digest mismatch) are zkd's own",
}

// adminDiffs lists every deliberate difference by command. A command with anyKeys true has
// keys that differ by nature (the JVM's properties); only command and error are compared.
var adminDiffs = map[string]struct {
	adminDiff
	anyKeys bool
}{
	"configuration": {adminDiff: adminDiff{
		onlyZkd: []string{"/max_client_cnxns:number", "/max_session_timeout:number", "/min_session_timeout:number"},
		why: "ZooKeeperServerConf.toMap in the 3.8 and 3.9 sources has these keys; Debian's 3.8.0 " +
			"build answers without them. zkd answers 3.9's nine keys",
	}},
	"monitor": {adminDiff: monitorDiff},
	"environment": {anyKeys: true, adminDiff: adminDiff{
		why: "java.* describe a JVM zkd does not have: zkd answers go.version and go.compiler, " +
			"and io.tmpdir for java.io.tmpdir (as envi does)",
	}},
	"system_properties": {anyKeys: true, adminDiff: adminDiff{
		why: "the JVM's system properties; zkd answers the process facts it has under Java's names",
	}},
}

// adminDataMaps are the objects whose keys are data (session ids, paths, times): their keys
// print as "*" in shapes.
var adminDataMaps = []string{
	"/expiry_time_to_session_ids", "/session_id_to_ephemeral_paths",
	"/session_id_to_watched_paths", "/path_to_session_ids",
}

// adminValues are the key paths whose values are compared, by command ("*" for all): they
// depend on the data and the settings only.
var adminValues = map[string][]string{
	"*":                     {"/command", "/error"},
	"is_read_only":          {"/read_only"},
	"get_trace_mask":        {"/tracemask"},
	"set_trace_mask":        {"/tracemask"},
	"server_stats":          {"/read_only", "/node_count", "/server_stats/server_state", "/server_stats/last_processed_zxid", "/server_stats/num_alive_client_connections"},
	"stats":                 {"/read_only", "/node_count", "/server_stats/server_state", "/server_stats/last_processed_zxid", "/server_stats/num_alive_client_connections"},
	"monitor":               {"/server_state", "/znode_count", "/ephemerals_count", "/global_sessions", "/watch_count", "/num_alive_connections", "/outstanding_requests", "/connection_drop_probability"},
	"watch_summary":         {"/num_connections", "/num_paths", "/num_total_watches"},
	"watches":               {"/session_id_to_watched_paths/*"},
	"watches_by_path":       {"/path_to_session_ids/*"},
	"dump":                  {"/session_id_to_ephemeral_paths/*"},
	"leader":                {"/is_leader"},
	"zabstate":              {"/voting", "/zabstate"},
	"voting_view":           {"/current_config"},
	"observers":             {"/synced_observers", "/observers"},
	"hash":                  {"/digests"},
	"last_snapshot":         {"/zxid"},
	"configuration":         {"/tick_time", "/server_id", "/client_port_listen_backlog"},
	"connections":           {"/secure_connections"},
	"initial_configuration": {},
}

func TestAdminServerMatchesZooKeeper(t *testing.T) {
	refzk.Require(t)
	ref := refzk.StartStandalone(t, refzk.Options{TickTime: tickTime, AdminServer: true})
	z := zktest.Start(t, zkdConfig("", func(c *server.Config) { c.AdminAddr = "127.0.0.1:0" }))
	sessions := map[string]int64{}
	for _, tg := range []struct{ name, addr string }{{"zookeeper", ref.Addr()}, {"zkd", z.Addr()}} {
		sessions[tg.name] = adminWorkload(t, tg.name, tg.addr)
	}
	client := &http.Client{Timeout: 60 * time.Second}
	base := map[string]string{
		"zookeeper": "http://" + ref.AdminAddr() + "/commands",
		"zkd":       "http://" + z.AdminAddr() + "/commands",
	}
	refList := adminList(t, client, base["zookeeper"])
	// snapshot and restore are 3.9's (they need authentication; server/adminsnap_test.go
	// covers them): 3.8 does not list them.
	zkdList := slices.DeleteFunc(adminList(t, client, base["zkd"]), func(c string) bool { return c == "snapshot" || c == "restore" })
	if !slices.Equal(refList, zkdList) {
		t.Errorf("command lists differ:\nzookeeper %v\nzkd       %v", refList, zkdList)
	}
	// Aliases, arguments and an unknown name beside the listed commands. The resets come
	// last: they change what the others report.
	probes := slices.DeleteFunc(slices.Clone(refList), func(c string) bool { return strings.HasSuffix(c, "reset") })
	probes = append(probes, "mntr", "srvr", "stat", "cons", "wchs", "wchc", "wchp", "envi", "conf", "isro",
		"gtmk", "stmk", "set_trace_mask?traceMask=306", "set_trace_mask?traceMask=x", "no_such_command",
		"connection_stat_reset", "stat_reset", "observer_connection_stat_reset")
	for _, probe := range probes {
		cmd, _, _ := strings.Cut(probe, "?")
		answers := map[string]any{}
		for name, b := range base {
			answers[name] = adminGet(t, client, b+"/"+probe)
		}
		// Names answer as the primary name; the listed primary tells which rows apply.
		primary := cmd
		if c, ok := answers["zookeeper"].(map[string]any)["command"].(string); ok {
			primary = c
		}
		compareAdmin(t, probe, primary, answers["zookeeper"], answers["zkd"], sessions)
	}
}

// adminWorkload makes the data every command reports on: a node, an ephemeral, data watches
// on /a and /b and a child watch on /. It returns the session's id.
func adminWorkload(t *testing.T, name, addr string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := zk.Connect(ctx, addr, zk.WithSessionTimeout(30*time.Second))
	if err != nil {
		t.Fatalf("%s: connect: %v", name, err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Create(ctx, "/a", []byte("x"), zk.OpenACL(), zk.ModePersistent); err != nil {
		t.Fatalf("%s: create /a: %v", name, err)
	}
	if _, err := c.Create(ctx, "/e", nil, zk.OpenACL(), zk.ModeEphemeral); err != nil {
		t.Fatalf("%s: create /e: %v", name, err)
	}
	if _, _, _, err := c.GetW(ctx, "/a"); err != nil {
		t.Fatalf("%s: get /a: %v", name, err)
	}
	if _, _, _, err := c.ExistsW(ctx, "/b"); err != nil {
		t.Fatalf("%s: exists /b: %v", name, err)
	}
	if _, _, _, err := c.ChildrenW(ctx, "/"); err != nil {
		t.Fatalf("%s: children /: %v", name, err)
	}
	return c.SessionID()
}

var adminLink = regexp.MustCompile(`<a href="/commands/([a-z_]+)">([a-z_]+)</a>`)

// adminList reads the command list a GET of the command URL prints.
func adminList(t *testing.T, client *http.Client, url string) []string {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", url, resp.Status, err)
	}
	var names []string
	for _, m := range adminLink.FindAllStringSubmatch(string(body), -1) {
		if m[1] != m[2] {
			t.Errorf("GET %s: link %q", url, m[0])
		}
		names = append(names, m[1])
	}
	if len(names) == 0 {
		t.Fatalf("GET %s: no commands in %q", url, body)
	}
	return names
}

// adminGet asks one command and decodes its JSON answer (numbers kept as written).
func adminGet(t *testing.T, client *http.Client, url string) any {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET %s: %s, %s: %s", url, resp.Status, resp.Header.Get("Content-Type"), body)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, body)
	}
	if _, ok := v.(map[string]any); !ok {
		t.Fatalf("GET %s: not an object: %s", url, body)
	}
	return v
}

// compareAdmin checks one command's answers: shapes and deterministic values.
func compareAdmin(t *testing.T, probe, cmd string, ref, zkd any, sessions map[string]int64) {
	t.Helper()
	diff := adminDiffs[cmd]
	if !diff.anyKeys {
		rs, zs := adminShapes(ref, ""), adminShapes(zkd, "")
		onlyRef := setMinus(rs, zs, diff.onlyRef)
		onlyZkd := setMinus(zs, rs, diff.onlyZkd)
		if len(onlyRef) > 0 || len(onlyZkd) > 0 {
			t.Errorf("%s: keys only ZooKeeper answers: %v\nkeys only zkd answers: %v", probe, onlyRef, onlyZkd)
		}
	}
	for _, p := range append(slices.Clone(adminValues["*"]), adminValues[cmd]...) {
		rv := adminValue(ref, p, sessions["zookeeper"])
		zv := adminValue(zkd, p, sessions["zkd"])
		if rv != zv {
			t.Errorf("%s %s: ZooKeeper %s, zkd %s", probe, p, rv, zv)
		}
	}
}

// setMinus is the elements of a not in b nor matched by allowed, sorted.
func setMinus(a, b map[string]bool, allowed []string) []string {
	var out []string
	for k := range a {
		if !b[k] && !slices.ContainsFunc(allowed, func(re string) bool {
			return regexp.MustCompile("^(?:" + re + ")$").MatchString(k)
		}) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// adminShapes is every key path of v with its JSON type ("/server_stats/uptime:number").
// Array elements print as "[]", and the keys of adminDataMaps as "*".
func adminShapes(v any, path string) map[string]bool {
	out := map[string]bool{}
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch v := v.(type) {
		case map[string]any:
			out[path+":object"] = true
			for k, e := range v {
				if slices.Contains(adminDataMaps, path) {
					k = "*"
				}
				walk(e, path+"/"+k)
			}
		case []any:
			out[path+":array"] = true
			for _, e := range v {
				walk(e, path+"/[]")
			}
		case json.Number:
			out[path+":number"] = true
		case string:
			out[path+":string"] = true
		case bool:
			out[path+":bool"] = true
		case nil:
			out[path+":null"] = true
		}
	}
	walk(v, path)
	delete(out, ":object")
	return out
}

// adminValue renders the value at path as JSON, with the session's id written as "S". A
// path ending in "/*" takes the data map's entries, keys included, in key order.
func adminValue(v any, path string, session int64) string {
	cur := v
	for _, k := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		if k == "*" {
			break
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return "<missing>"
		}
		if cur, ok = m[k]; !ok {
			return "<missing>"
		}
	}
	b, err := json.Marshal(cur)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return strings.ReplaceAll(string(b), fmt.Sprint(session), "S")
}
