package config

import (
	"path/filepath"
	"strconv"
	"strings"
)

// KV is one key=value line.
type KV struct{ Key, Value string }

// ConfInfo is the run-time state that the `conf` four-letter word prints among the settings.
type ConfInfo struct {
	// SnapDir and LogDir are the directories the server really uses. When empty they are
	// derived like ZooKeeper does: the absolute DataDir (DataLogDir) plus "version-2".
	SnapDir, LogDir          string
	DataDirSize, DataLogSize int64 // bytes of the files in SnapDir and LogDir
	ServerID                 int64 // 0 for a standalone server
	// Quorum is the ensemble's committed configuration when the server is an ensemble
	// member (nil when standalone): `conf` then adds QuorumZooKeeperServer's lines, this
	// server's ports and role, and the membership as /zookeeper/config holds it.
	Quorum *Dynamic
}

// confKeys are the lines of a standalone server's `conf`, in ZooKeeper 3.8's order: keys of
// the table, rendered by their rows, and the run-time values of ConfInfo.
var confKeys = []string{
	"clientPort", "secureClientPort", "dataDir", "dataDirSize", "dataLogDir", "dataLogSize",
	"tickTime", "maxClientCnxns", "minSessionTimeout", "maxSessionTimeout",
	"clientPortListenBacklog", "serverId",
}

// Pairs returns the lines of a standalone ZooKeeper 3.8 `conf` answer, in its order.
func (c *Config) Pairs(info ConfInfo) []KV {
	if info.SnapDir == "" {
		info.SnapDir = versionDir(c.DataDir)
	}
	if info.LogDir == "" {
		info.LogDir = versionDir(c.DataLogDir)
	}
	runtime := map[string]string{
		"secureClientPort": "-1", // zkd has no TLS port
		"dataDir":          info.SnapDir,
		"dataDirSize":      strconv.FormatInt(info.DataDirSize, 10),
		"dataLogDir":       info.LogDir,
		"dataLogSize":      strconv.FormatInt(info.DataLogSize, 10),
		"serverId":         strconv.FormatInt(info.ServerID, 10),
	}
	line := func(name string) KV {
		if v, ok := runtime[name]; ok {
			return KV{name, v}
		}
		// A key's effective value, rendered by its row of the key table.
		return KV{name, keyIndex[name].value(c)}
	}
	var pairs []KV
	for _, name := range confKeys {
		pairs = append(pairs, line(name))
	}
	if info.Quorum == nil {
		return pairs
	}
	me := info.Quorum.Servers[int(info.ServerID)]
	var election, quorum []string
	for _, a := range me.sortedAddrs() {
		election = append(election, itoa(a.ElectionPort))
		quorum = append(quorum, itoa(a.QuorumPort))
	}
	peerType := "0" // LearnerType.PARTICIPANT's ordinal
	if me.Observer {
		peerType = "1"
	}
	return append(pairs,
		line("initLimit"),
		line("syncLimit"),
		KV{"electionAlg", "3"},
		KV{"electionPort", strings.Join(election, "|")},
		KV{"quorumPort", strings.Join(quorum, "|")},
		KV{"peerType", peerType},
	)
}

// Conf is the text of the `conf` four-letter word: Pairs as "key=value\n" lines.
func (c *Config) Conf(info ConfInfo) string {
	var b strings.Builder
	for _, kv := range c.Pairs(info) {
		b.WriteString(kv.Key)
		b.WriteByte('=')
		b.WriteString(kv.Value)
		b.WriteByte('\n')
	}
	if info.Quorum != nil {
		// QuorumZooKeeperServer.dumpConf: a header line, then the text without a final
		// newline.
		b.WriteString("membership: \n")
		b.WriteString(info.Quorum.Text())
	}
	return b.String()
}

// versionDir is where ZooKeeper keeps its files under a data directory.
func versionDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return filepath.Join(dir, "version-2")
}
