package config

import (
	"strings"
	"testing"
)

func TestZooEnvConfig(t *testing.T) {
	env := map[string]string{
		"ZOO_SERVERS":                "server.1=zk1:2888:3888;2181 server.2=zk2:2888:3888;2181 server.3=zk3:2888:3888;2181",
		"ZOO_TICK_TIME":              "3000",
		"ZOO_4LW_COMMANDS_WHITELIST": "srvr,mntr,ruok",
		"ZOO_CFG_EXTRA":              "snapCount=5000 preAllocSize=1024",
	}
	got := ZooEnvConfig(func(k string) string { return env[k] })
	want := `dataDir=/data
dataLogDir=/datalog
tickTime=3000
initLimit=5
syncLimit=2
autopurge.snapRetainCount=3
autopurge.purgeInterval=0
maxClientCnxns=60
standaloneEnabled=true
admin.enableServer=true
admin.serverAddress=0.0.0.0
zkd.admin.allowedHosts=localhost
server.1=zk1:2888:3888;2181
server.2=zk2:2888:3888;2181
server.3=zk3:2888:3888;2181
4lw.commands.whitelist=srvr,mntr,ruok
snapCount=5000
preAllocSize=1024
`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	c, err := Parse(strings.NewReader(got))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Servers) != 3 || c.TickTime != 3000 || c.SnapCount != 5000 || c.Servers[2].ClientPort != 2181 {
		t.Fatalf("parsed %+v", c)
	}
	// The AdminServer where the official image has it, all interfaces, with the Host check on.
	if c.AdminServerAddress != "0.0.0.0" || strings.Join(c.AdminGuards.AllowedHosts, ",") != "localhost" {
		t.Fatalf("admin binding %q, allowed hosts %q", c.AdminServerAddress, c.AdminGuards.AllowedHosts)
	}
	// ZOO_CFG_EXTRA comes last, so it may bind elsewhere and list the names the port is reached by.
	env["ZOO_CFG_EXTRA"] = "admin.serverAddress=127.0.0.1 zkd.admin.allowedHosts=localhost,zk.example.com"
	c, err = Parse(strings.NewReader(ZooEnvConfig(func(k string) string { return env[k] })))
	if err != nil {
		t.Fatal(err)
	}
	if c.AdminServerAddress != "127.0.0.1" || strings.Join(c.AdminGuards.AllowedHosts, ",") != "localhost,zk.example.com" {
		t.Fatalf("ZOO_CFG_EXTRA did not override: admin binding %q, allowed hosts %q", c.AdminServerAddress, c.AdminGuards.AllowedHosts)
	}
	// No environment: the image's defaults, one server, which is standalone.
	c, err = Parse(strings.NewReader(ZooEnvConfig(func(string) string { return "" })))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Servers) != 1 || c.Servers[1].ClientPort != 2181 || c.DataDir != "/data" {
		t.Fatalf("defaults parsed %+v", c)
	}
}
