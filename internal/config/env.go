package config

import (
	"strings"
)

// The official zookeeper container image's environment, with the defaults its Dockerfile
// sets. ZooEnvConfig writes the zoo.cfg its docker-entrypoint.sh writes from them.
var zooEnvDefaults = map[string]string{
	"ZOO_CONF_DIR":                  "/conf",
	"ZOO_DATA_DIR":                  "/data",
	"ZOO_DATA_LOG_DIR":              "/datalog",
	"ZOO_TICK_TIME":                 "2000",
	"ZOO_INIT_LIMIT":                "5",
	"ZOO_SYNC_LIMIT":                "2",
	"ZOO_AUTOPURGE_PURGEINTERVAL":   "0",
	"ZOO_AUTOPURGE_SNAPRETAINCOUNT": "3",
	"ZOO_MAX_CLIENT_CNXNS":          "60",
	"ZOO_STANDALONE_ENABLED":        "true",
	"ZOO_ADMINSERVER_ENABLED":       "true",
	"ZOO_SERVERS":                   "server.1=localhost:2888:3888;2181",
}

// ZooEnv returns the value of a ZOO_* variable, or the official image's default for it.
func ZooEnv(getenv func(string) string, name string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return zooEnvDefaults[name]
}

// ZooEnvConfig returns the zoo.cfg the official zookeeper image's entrypoint writes when
// its configuration directory holds none: dataDir, dataLogDir, the limits, autopurge,
// maxClientCnxns, standaloneEnabled, admin.enableServer, the ZOO_SERVERS lines (separated
// by spaces), the four-letter-word whitelist when set, and the ZOO_CFG_EXTRA entries. Where
// zkd's defaults differ from ZooKeeper's, it adds what the image's behaviour needs: the
// AdminServer on 0.0.0.0, with the Host check kept on.
func ZooEnvConfig(getenv func(string) string) string {
	env := func(n string) string { return ZooEnv(getenv, n) }
	var b strings.Builder
	line := func(k, v string) { b.WriteString(k + "=" + v + "\n") }
	line("dataDir", env("ZOO_DATA_DIR"))
	line("dataLogDir", env("ZOO_DATA_LOG_DIR"))
	line("tickTime", env("ZOO_TICK_TIME"))
	line("initLimit", env("ZOO_INIT_LIMIT"))
	line("syncLimit", env("ZOO_SYNC_LIMIT"))
	line("autopurge.snapRetainCount", env("ZOO_AUTOPURGE_SNAPRETAINCOUNT"))
	line("autopurge.purgeInterval", env("ZOO_AUTOPURGE_PURGEINTERVAL"))
	line("maxClientCnxns", env("ZOO_MAX_CLIENT_CNXNS"))
	line("standaloneEnabled", env("ZOO_STANDALONE_ENABLED"))
	line("admin.enableServer", env("ZOO_ADMINSERVER_ENABLED"))
	// The official image's AdminServer listens on all interfaces (ZooKeeper's default
	// admin.serverAddress), so that a published 8080 reaches it; zkd's default is
	// loopback. Listing a name in zkd.admin.allowedHosts keeps the DNS-rebinding Host
	// check on at that binding: loopback names and IP literals pass, other names must be
	// listed (ZOO_CFG_EXTRA, which comes later, may set either key again).
	line("admin.serverAddress", "0.0.0.0")
	line(AdminAllowedHostsKey, "localhost")
	for _, s := range strings.Fields(env("ZOO_SERVERS")) {
		b.WriteString(s + "\n")
	}
	if w := env("ZOO_4LW_COMMANDS_WHITELIST"); w != "" {
		line("4lw.commands.whitelist", w)
	}
	for _, e := range strings.Fields(env("ZOO_CFG_EXTRA")) {
		b.WriteString(e + "\n")
	}
	return b.String()
}
