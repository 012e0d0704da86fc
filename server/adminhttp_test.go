package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zk"
	"github.com/zkd-io/zkd/zktest"
)

func TestAdminServerOffByDefault(t *testing.T) {
	srv := zktest.Start(t)
	if a := srv.AdminAddr(); a != "" {
		t.Errorf("AdminAddr = %q without Config.AdminAddr", a)
	}
}

// adminHTTP is a GET (or another method) of the AdminServer: status, content type, body.
func adminHTTP(t *testing.T, method, url string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 60 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), body
}

// adminJSON asks one command and decodes its answer.
func adminJSON(t *testing.T, base, cmd string) map[string]any {
	t.Helper()
	code, ctype, body := adminHTTP(t, http.MethodGet, base+"/"+cmd)
	if code != http.StatusOK || ctype != "application/json" {
		t.Fatalf("%s: %d %s: %s", cmd, code, ctype, body)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: %v in %s", cmd, err, body)
	}
	return m
}

func TestAdminServerCommands(t *testing.T) {
	const cfgText = "tickTime=2000\nadmin.enableServer=true\n"
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.AdminAddr = "127.0.0.1:0"
		c.AdminCommandURL = "/cmds"
		c.InitialConfig = cfgText
		c.FourLetterWhitelist = []string{"*"}
	}))
	base := "http://" + srv.AdminAddr() + "/cmds"

	code, _, body := adminHTTP(t, http.MethodGet, base)
	if code != http.StatusOK || !strings.Contains(string(body), `<a href="/cmds/watches">watches</a>`) ||
		strings.Count(string(body), "<br/>") != 28 {
		t.Errorf("GET %s: %d\n%s", base, code, body)
	}
	if code, _, _ := adminHTTP(t, http.MethodGet, "http://"+srv.AdminAddr()+"/commands/ruok"); code != http.StatusNotFound {
		t.Errorf("GET outside the command URL: %d, want 404", code)
	}
	if code, _, _ := adminHTTP(t, http.MethodPost, base+"/ruok"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", code)
	}

	for cmd, want := range map[string]map[string]any{
		"ruok":                  {"command": "ruok", "error": nil},
		"no_such":               {"command": "no_such", "error": "Unknown command: no_such"},
		"isro":                  {"command": "is_read_only", "error": nil, "read_only": false},
		"lead":                  {"command": "leader", "error": "server is not initialized"},
		"stmk":                  {"command": "set_trace_mask", "error": "setTraceMask requires long traceMask argument"},
		"stmk?traceMask=12":     {"command": "set_trace_mask", "error": nil, "tracemask": json.Number("12")},
		"icfg":                  {"command": "initial_configuration", "error": nil, "initial_configuration": cfgText},
		"stmk?traceMask=0x1":    {"command": "set_trace_mask", "error": "setTraceMask requires long traceMask argument, got 0x1"},
		"zabstate":              {"command": "zabstate", "error": nil, "voting": false, "zabstate": ""},
		"observers":             {"command": "observers", "error": nil, "synced_observers": json.Number("0"), "observers": []any{}},
		"voting_view":           {"command": "voting_view", "error": nil, "current_config": map[string]any{}},
		"hash":                  {"command": "hash", "error": nil, "digests": []any{}},
		"connection_stat_reset": {"command": "connection_stat_reset", "error": nil},
	} {
		got := adminJSON(t, base, cmd)
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if !bytes.Equal(gb, wb) {
			t.Errorf("%s = %s, want %s", cmd, gb, wb)
		}
	}
	// set_trace_mask sets what the four-letter word reads.
	if got := fourLetter(t, srv.Addr(), "gtmk"); got != "12" {
		t.Errorf("gtmk after set_trace_mask?traceMask=12 = %q", got)
	}

	// monitor lists what mntr prints, under the same names.
	mntr := fourLetter(t, srv.Addr(), "mntr")
	mon := adminJSON(t, base, "monitor")
	var textKeys []string
	for line := range strings.Lines(mntr) {
		k, _, _ := strings.Cut(line, "\t")
		textKeys = append(textKeys, strings.TrimPrefix(k, "zk_"))
	}
	var jsonKeys []string
	for k := range mon {
		if k != "command" && k != "error" {
			jsonKeys = append(jsonKeys, k)
		}
	}
	slices.Sort(textKeys)
	slices.Sort(jsonKeys)
	if !slices.Equal(textKeys, jsonKeys) {
		t.Errorf("monitor keys differ from mntr's: %d vs %d", len(jsonKeys), len(textKeys))
	}
	if mon["avg_latency"] != json.Number("0.0") && !strings.Contains(fmt.Sprint(mon["avg_latency"]), ".") {
		t.Errorf("avg_latency = %v, want a Java double", mon["avg_latency"])
	}
}

// TestAdminServerWatchesInBatches: the JSON watch and dump commands copy off the core in
// batches, as their four-letter words do, and report the same numbers.
func TestAdminServerWatchesInBatches(t *testing.T) {
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.AdminAddr = "127.0.0.1:0"
		c.FourLetterWhitelist = []string{"*"}
	}))
	base := "http://" + srv.AdminAddr() + "/commands"
	ctx := context.Background()
	c := connectZK(t, srv.Addr())
	n := server.AdminBatch + 500 // more than one step's worth
	pipelined(t, n, func(ctx context.Context, i int) error {
		_, _, _, err := c.ExistsW(ctx, fmt.Sprintf("/w%05d", i))
		return err
	})
	if _, err := c.Create(ctx, "/e", nil, zk.OpenACL(), zk.ModeEphemeral); err != nil {
		t.Fatal(err)
	}
	sid := fmt.Sprint(c.SessionID())

	stepsBefore, _ := server.AdminSteps()
	w := adminJSON(t, base, "watches")
	if steps, _ := server.AdminSteps(); steps-stepsBefore < 2 {
		t.Errorf("watches took %d core steps; want the copy split in batches", steps-stepsBefore)
	}
	paths, _ := w["session_id_to_watched_paths"].(map[string]any)[sid].([]any)
	if len(paths) != n || paths[0] != "/w00000" {
		t.Errorf("watches: session %s has %d paths (first %v), want %d", sid, len(paths), paths[:min(1, len(paths))], n)
	}
	byPath := adminJSON(t, base, "wchp")["path_to_session_ids"].(map[string]any)
	if ids, _ := byPath["/w00007"].([]any); len(byPath) != n || len(ids) != 1 || fmt.Sprint(ids[0]) != sid {
		t.Errorf("watches_by_path: %d paths, /w00007 -> %v", len(byPath), byPath["/w00007"])
	}
	sum := adminJSON(t, base, "wchs")
	if got := fmt.Sprint(sum["num_connections"], " ", sum["num_paths"], " ", sum["num_total_watches"]); got != fmt.Sprint(1, " ", n, " ", n) {
		t.Errorf("watch_summary = %s", got)
	}
	dump := adminJSON(t, base, "dump")
	if eph := fmt.Sprint(dump["session_id_to_ephemeral_paths"]); eph != "map["+sid+":[/e]]" {
		t.Errorf("dump ephemerals = %s", eph)
	}
	if _, maxItems := server.AdminSteps(); maxItems > server.AdminBatch+64 {
		t.Errorf("one core step copied %d items; batches are %d", maxItems, server.AdminBatch)
	}
	cons := adminJSON(t, base, "cons")["connections"].([]any)
	if len(cons) != 1 || fmt.Sprint(cons[0].(map[string]any)["session_id"]) != sid {
		t.Errorf("connections = %v", cons)
	}
}

// TestAdminServerEnsemble: leader, zabstate and voting_view on a leader, followers and an
// observer.
func TestAdminServerEnsemble(t *testing.T) {
	e := startEnsembleFull(t, 3, 1, func(c *server.Config) { c.AdminAddr = "127.0.0.1:0" })
	e.waitServing()
	for i, m := range e.members {
		base := "http://" + m.srv.AdminAddr() + "/commands"
		// A member's view can trail an election by a moment: wait until it serves.
		var zab map[string]any
		waitFor(t, "zabstate broadcast", func() bool {
			zab = adminJSON(t, base, "zabstate")
			return zab["zabstate"] == "broadcast"
		})
		mode := m.srv.Mode()
		if got := fmt.Sprint(zab["myid"], " ", zab["voting"]); got != fmt.Sprint(m.cfg.ServerID, " ", mode != "observer") {
			t.Errorf("member %d (%s): zabstate = %v", i+1, mode, zab)
		}
		if view := adminJSON(t, base, "voting_view")["current_config"].(map[string]any); len(view) != 3 {
			t.Errorf("member %d: voting_view = %v, want the 3 voters", i+1, view)
		}
		if conf := adminJSON(t, base, "conf"); fmt.Sprint(conf["server_id"]) != fmt.Sprint(m.cfg.ServerID) {
			t.Errorf("member %d: configuration server_id = %v", i+1, conf["server_id"])
		}
	}
	// Exactly one member says it leads, and every member names it (re-asked until an
	// election in between, if any, has settled).
	var last string
	waitFor(t, "one leader named by all", func() bool {
		var leaders, named []string
		for _, m := range e.members {
			lead := adminJSON(t, "http://"+m.srv.AdminAddr()+"/commands", "leader")
			if lead["is_leader"] == true {
				leaders = append(leaders, fmt.Sprint(m.cfg.ServerID))
			}
			if lead["error"] != nil || lead["leader_ip"] != "127.0.0.1" {
				last = fmt.Sprint(lead)
				return false
			}
			named = append(named, fmt.Sprint(lead["leader_id"]))
		}
		last = fmt.Sprint(leaders, named)
		return len(leaders) == 1 && slices.Equal(named, slices.Repeat(leaders, len(named)))
	})
	t.Logf("leaders and named leaders: %s", last)
}
