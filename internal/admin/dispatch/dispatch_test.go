package dispatch

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/internal/watch"
)

// fake is a Backend made of values: the commands need no server.
type fake struct {
	serving  bool
	info     admin.Info
	quorum   admin.QuorumView
	watches  admin.WatchTable
	mask     int64
	builders int // slots taken and not given back
	resets   []string
}

func (f *fake) Info() admin.Info       { return f.info }
func (f *fake) Serving() bool          { return f.serving }
func (f *fake) ReadOnly() (bool, bool) { return f.serving, false }
func (f *fake) Stats() (admin.ServerStats, bool) {
	return admin.ServerStats{Mode: "standalone"}, f.serving
}
func (f *fake) Monitor() (admin.ServerStats, bool) {
	return admin.ServerStats{Mode: "standalone"}, f.serving
}
func (f *fake) StatConns() (admin.ServerStats, []admin.ConnInfo, bool) {
	return admin.ServerStats{Mode: "standalone"}, nil, f.serving
}
func (f *fake) Conns() ([]admin.ConnInfo, bool)        { return nil, f.serving }
func (f *fake) Dump() (admin.DumpInfo, bool)           { return admin.DumpInfo{}, f.serving }
func (f *fake) Watches() (admin.WatchTable, bool)      { return f.watches, f.serving }
func (f *fake) Quorum() (admin.QuorumView, bool)       { return f.quorum, f.serving }
func (f *fake) Observers() ([]admin.LearnerInfo, bool) { return nil, f.serving }
func (f *fake) ConfText(int64, int64) (string, bool)   { return "", f.serving }
func (f *fake) ConnQueueDepths(func(int))              {}
func (f *fake) TraceMask() int64                       { return f.mask }
func (f *fake) SetTraceMask(m int64)                   { f.mask = m }
func (f *fake) ResetConnStats()                        { f.resets = append(f.resets, "conns") }
func (f *fake) ResetServerStats()                      { f.resets = append(f.resets, "server") }
func (f *fake) ResetObserverStats()                    { f.resets = append(f.resets, "observers") }
func (f *fake) Builder() (func(), bool)                { f.builders++; return func() { f.builders-- }, true }

// TestFourLetterNotServing: every command that reads the server answers ZooKeeper's "not
// serving" text when the backend says so, and every rationed one gives its slot back.
func TestFourLetterNotServing(t *testing.T) {
	f := &fake{info: admin.Info{SnapDir: t.TempDir(), LogDir: t.TempDir()}}
	for _, cmd := range []string{"isro", "conf", "srvr", "mntr", "stat", "cons", "dump", "wchs", "wchc", "wchp"} {
		want, _ := admin.NotServing(cmd)
		if got := FourLetter(f, cmd); got != want {
			t.Errorf("%s while not serving: %q, want %q", cmd, got, want)
		}
	}
	if f.builders != 0 {
		t.Errorf("%d builder slots not given back", f.builders)
	}
	if got := FourLetter(f, "ruok"); got != admin.Ruok {
		t.Errorf("ruok: %q", got)
	}
}

// TestWatchCommands: the watch lists group the backend's table, leaving out connections
// without a session.
func TestWatchCommands(t *testing.T) {
	f := &fake{serving: true, watches: admin.WatchTable{
		Entries:  []watch.Entry{{Path: "/a", Watcher: 1}, {Path: "/a", Watcher: 2}, {Path: "/b", Watcher: 1}, {Path: "/c", Watcher: 3}},
		Sessions: map[watch.WatcherID]int64{1: 0x10, 2: 0x20},
	}}
	if got, want := FourLetter(f, "wchs"), admin.Wchs(3, 3, 4); got != want {
		t.Errorf("wchs: %q, want %q", got, want)
	}
	want := admin.WchpSorted([]admin.PathSessions{{Path: "/a", Sessions: []int64{0x10, 0x20}}, {Path: "/b", Sessions: []int64{0x10}}})
	if got := FourLetter(f, "wchp"); got != want {
		t.Errorf("wchp: %q, want %q", got, want)
	}
	want = admin.WchcSorted([]admin.SessionPaths{{SessionID: 0x10, Paths: []string{"/a", "/b"}}, {SessionID: 0x20, Paths: []string{"/a"}}})
	if got := FourLetter(f, "wchc"); got != want {
		t.Errorf("wchc: %q, want %q", got, want)
	}
}

func commandJSON(t *testing.T, b admin.Backend, name string, kwargs map[string]string) map[string]any {
	t.Helper()
	body, err := json.Marshal(Command(b, name, kwargs))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCommands: the JSON commands read the backend's values, and change what they set.
func TestCommands(t *testing.T) {
	f := &fake{serving: true, info: admin.Info{Ensemble: true, ServerID: 2, ClientAddr: "127.0.0.1:2181", SnapDir: t.TempDir(), LogDir: t.TempDir()},
		quorum: admin.QuorumView{Ensemble: true, Mode: "follower", Serving: true, Leader: 1, Zxid: 0x100000005, Members: []admin.Member{
			{ID: 3, Host: "h3", QuorumAddr: "h3:2888", ElectionAddr: "h3:3888", Observer: true},
			{ID: 1, Host: "h1", QuorumAddr: "h1:2888", ElectionAddr: "h1:3888"},
			{ID: 2, Host: "h2", QuorumAddr: "h2:2888", ElectionAddr: "h2:3888"},
		}}}
	if m := commandJSON(t, f, "leader", nil); m["leader_id"] != 1.0 || m["leader_ip"] != "h1" || m["is_leader"] != false {
		t.Errorf("leader: %v", m)
	}
	m := commandJSON(t, f, "zabstate", nil)
	if m["myid"] != 2.0 || m["quorum_address"] != "h2:2888" || m["zab_epoch"] != 1.0 || m["zabstate"] != "broadcast" {
		t.Errorf("zabstate: %v", m)
	}
	view := commandJSON(t, f, "voting_view", nil)["current_config"].(map[string]any)
	if len(view) != 2 || view["1"] == nil || view["2"] == nil {
		t.Errorf("voting_view lists the voters: %v", view)
	}
	if m := commandJSON(t, f, "configuration", nil); m["client_port"] != 2181.0 || m["server_id"] != 2.0 {
		t.Errorf("configuration: %v", m)
	}
	if m := commandJSON(t, f, "set_trace_mask", map[string]string{"traceMask": "42"}); m["tracemask"] != 42.0 || f.mask != 42 {
		t.Errorf("set_trace_mask: %v, mask %d", m, f.mask)
	}
	commandJSON(t, f, "stat_reset", nil)
	commandJSON(t, f, "connection_stat_reset", nil)
	commandJSON(t, f, "observer_connection_stat_reset", nil)
	if got := strings.Join(f.resets, ","); got != "server,conns,observers" {
		t.Errorf("resets: %s", got)
	}
	f.serving = false
	if m := commandJSON(t, f, "leader", nil); m["error"] != admin.NotServingMsg {
		t.Errorf("leader while not serving: %v", m)
	}
}
