package dispatch

import (
	"cmp"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/ext"
)

// Command runs one AdminServer command (all but snapshot and restore, which need the
// request itself). As in ZooKeeper every outcome, errors included, is an answer carrying
// "command" and "error".
func Command(b admin.Backend, name string, kwargs map[string]string) admin.Object {
	cmd, ok := admin.LookupHTTP(name)
	if !ok {
		if set := b.Info().Extensions; set.Has(ext.Capabilities) && slices.Contains(admin.CapabilitiesCommands, name) {
			return admin.Response(admin.CapabilitiesCommands[0], nil, admin.CapabilitiesJSON(set))
		}
		return admin.ErrorResponse(name, admin.UnknownCommandPrefix+name)
	}
	if cmd.ServerRequired && !b.Serving() {
		return admin.ErrorResponse(name, admin.NotServingMsg)
	}
	primary := cmd.Primary()
	fields, errMsg, ok := fields(b, primary, kwargs)
	if !ok {
		return admin.ErrorResponse(name, admin.NotServingMsg)
	}
	if errMsg != "" {
		return admin.ErrorResponse(primary, errMsg)
	}
	return admin.Response(primary, nil, fields)
}

// fields gathers and builds one command's fields. errMsg is a command's own error (a bad
// argument, a standalone server asked for its leader); ok is false when the server stopped
// serving while gathering.
func fields(b admin.Backend, cmd string, kwargs map[string]string) (fields admin.Object, errMsg string, ok bool) {
	switch cmd {
	case "ruok":
		return admin.Object{}, "", true
	case "observer_connection_stat_reset":
		b.ResetObserverStats()
		return admin.Object{}, "", true
	case "observers":
		obs, ok := b.Observers()
		if !ok {
			return nil, "", false
		}
		return admin.ObserversJSON(obs), "", true
	case "connection_stat_reset":
		b.ResetConnStats()
		return admin.Object{}, "", true
	case "stat_reset":
		b.ResetServerStats()
		return admin.Object{}, "", true
	case "get_trace_mask":
		return admin.Object{{Key: "tracemask", Value: b.TraceMask()}}, "", true
	case "set_trace_mask":
		arg, present := kwargs["traceMask"]
		if !present {
			return nil, admin.TraceMaskMissingMsg, true
		}
		mask, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			return nil, admin.TraceMaskBad(arg), true
		}
		b.SetTraceMask(mask)
		return admin.Object{{Key: "tracemask", Value: mask}}, "", true
	case "environment":
		return admin.EnvironmentJSON(admin.Env(envInfo())), "", true
	case "system_properties":
		return systemProperties(b.Info().InitialConfig), "", true
	case "dirs":
		d, l := dirSizes(b.Info())
		return admin.Object{{Key: "datadir_size", Value: d}, {Key: "logdir_size", Value: l}}, "", true
	case "configuration":
		return configurationJSON(b.Info()), "", true
	case "initial_configuration":
		return admin.Object{{Key: "initial_configuration", Value: b.Info().InitialConfig}}, "", true
	case "is_read_only":
		serving, ro := b.ReadOnly()
		return admin.Object{{Key: "read_only", Value: ro}}, "", serving
	case "hash":
		// As the four-letter word: zkd keeps no digest history yet.
		return admin.DigestsJSON(nil), "", true
	case "last_snapshot":
		zxid, ts := lastSnapshot(b.Info())
		return admin.LastSnapshotJSON(zxid, ts), "", true
	case "server_stats":
		st, ok := b.Stats()
		if !ok {
			return nil, "", false
		}
		d, l := dirSizes(b.Info())
		return admin.ServerStatsJSON(withFDs(st), d, l), "", true
	case "monitor":
		st, ok := b.Monitor()
		if !ok {
			return nil, "", false
		}
		return admin.MonitorJSON(withFDs(st)), "", true
	case "stats":
		release, ok := b.Builder()
		if !ok {
			return nil, "", false
		}
		defer release()
		st, conns, ok := b.StatConns()
		if !ok {
			return nil, "", false
		}
		d, l := dirSizes(b.Info())
		return admin.StatsJSON(withFDs(st), d, l, conns), "", true
	case "leader", "zabstate", "voting_view":
		v, ok := b.Quorum()
		if !ok {
			return nil, "", false
		}
		return quorumJSON(b.Info(), v, cmd)
	}
	// The large answers: rationed like their four-letter words.
	release, ok := b.Builder()
	if !ok {
		return nil, "", false
	}
	defer release()
	switch cmd {
	case "connections":
		conns, ok := b.Conns()
		if !ok {
			return nil, "", false
		}
		return admin.ConnectionsJSON(conns), "", true
	case "dump":
		d, ok := b.Dump()
		if !ok {
			return nil, "", false
		}
		return admin.DumpJSON(d), "", true
	case "watches", "watches_by_path", "watch_summary":
		v, ok := b.Watches()
		if !ok {
			return nil, "", false
		}
		switch cmd {
		case "watches":
			return admin.WatchesJSON(v.BySession()), "", true
		case "watches_by_path":
			return admin.WatchesByPathJSON(v.ByPath()), "", true
		}
		return admin.WatchSummaryJSON(v.Summary()), "", true
	}
	return nil, admin.UnknownCommandPrefix + cmd, true
}

// configurationJSON is ZooKeeperServerConf.toMap: the settings a client-facing server runs
// with. dataDir and dataLogDir are the version-2 directories, as ZooKeeper reports them.
func configurationJSON(info admin.Info) admin.Object {
	port := 0
	if _, p, err := net.SplitHostPort(info.ClientAddr); err == nil {
		port, _ = strconv.Atoi(p)
	}
	abs := func(dir string) string {
		if a, err := filepath.Abs(dir); err == nil {
			return a
		}
		return dir
	}
	return admin.Object{
		{Key: "client_port", Value: port},
		{Key: "data_dir", Value: abs(info.SnapDir)},
		{Key: "data_log_dir", Value: abs(info.LogDir)},
		{Key: "tick_time", Value: info.TickTime},
		{Key: "max_client_cnxns", Value: info.MaxClientCnxns},
		{Key: "min_session_timeout", Value: info.MinSessionTimeout},
		{Key: "max_session_timeout", Value: info.MaxSessionTimeout},
		{Key: "server_id", Value: info.ServerID},
		{Key: "client_port_listen_backlog", Value: -1},
	}
}

func quorumJSON(info admin.Info, v admin.QuorumView, cmd string) (admin.Object, string, bool) {
	switch cmd {
	case "leader":
		if !v.Ensemble {
			return nil, admin.NotInitializedMsg, true
		}
		ip := ""
		if m, ok := v.Member(v.Leader); ok {
			ip = m.Host
		}
		return admin.Object{
			{Key: "is_leader", Value: v.Mode == "leader"},
			{Key: "leader_id", Value: v.Leader},
			{Key: "leader_ip", Value: ip},
		}, "", true
	case "zabstate":
		if !v.Ensemble {
			return admin.Object{{Key: "voting", Value: false}, {Key: "zabstate", Value: ""}}, "", true
		}
		me, _ := v.Member(info.ServerID)
		state := "election"
		if v.Serving {
			state = "broadcast"
		}
		return admin.Object{
			{Key: "myid", Value: info.ServerID},
			{Key: "is_leader", Value: v.Mode == "leader"},
			{Key: "quorum_address", Value: me.QuorumAddr},
			{Key: "election_address", Value: me.ElectionAddr},
			{Key: "client_address", Value: info.ClientAddr},
			{Key: "voting", Value: !me.Observer},
			{Key: "last_zxid", Value: "0x" + strconv.FormatUint(uint64(v.Zxid), 16)},
			{Key: "zab_epoch", Value: v.Zxid >> 32},
			{Key: "zab_counter", Value: v.Zxid & 0xffffffff},
			{Key: "zabstate", Value: state},
		}, "", true
	case "voting_view":
		view := admin.Object{}
		if v.Ensemble {
			members := slices.Clone(v.Members)
			slices.SortFunc(members, func(a, b admin.Member) int { return cmp.Compare(a.ID, b.ID) })
			for _, m := range members {
				if m.Observer {
					continue
				}
				view = append(view, admin.Field{Key: strconv.FormatInt(m.ID, 10), Value: admin.Object{
					{Key: "quorum_addr", Value: m.QuorumAddr},
					{Key: "election_addr", Value: m.ElectionAddr},
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
func systemProperties(zooCfg string) admin.Object {
	var o admin.Object
	for _, kv := range admin.Env(envInfo()) {
		if strings.HasPrefix(kv.Key, "os.memory.") || kv.Key == "zookeeper.version" || kv.Key == "host.name" {
			continue
		}
		o = append(o, admin.Field{Key: kv.Key, Value: kv.Value})
	}
	// The zookeeper.* properties ZooKeeper sets from its zoo.cfg's keys.
	for k, v := range config.SystemProperties([]byte(zooCfg)) {
		if !slices.ContainsFunc(o, func(f admin.Field) bool { return f.Key == k }) {
			o = append(o, admin.Field{Key: k, Value: v})
		}
	}
	slices.SortFunc(o, func(a, b admin.Field) int { return strings.Compare(a.Key, b.Key) })
	return o
}
