package config

import (
	"fmt"
	"strings"
)

// Flag is one of zkd's command-line flags as the documentation lists it: cmd/zkd takes each
// flag's usage from here, so --help and docs/configuration.md say the same.
type Flag struct {
	Name string // without the dashes
	Arg  string // the argument's placeholder; "" for a switch
	// Keys are the zoo.cfg keys the flag overrides; "" when it has none.
	Keys string
	Doc  string
}

// Flags are zkd's flags, in documentation order.
var Flags = []Flag{
	{Name: "config", Arg: "FILE", Doc: "zoo.cfg to read (Apache ZooKeeper format); zkd FILE.cfg does the same. Flags override the file."},
	{Name: "addr", Arg: "HOST:PORT", Keys: "clientPortAddress, clientPort", Doc: "the client address"},
	{Name: "port", Arg: "N", Keys: "clientPort", Doc: "the client port"},
	{Name: "data-dir", Arg: "DIR", Keys: "dataDir", Doc: "the data directory (and the log's, when dataLogDir was not set apart)"},
	{Name: "data-log-dir", Arg: "DIR", Keys: "dataLogDir", Doc: "the transaction log's directory"},
	{Name: "tick-time", Arg: "MS", Keys: "tickTime", Doc: "tickTime in ms (session timeout bounds derived from it follow)"},
	{Name: "extended-types", Keys: "extendedTypesEnabled", Doc: "enable TTL nodes"},
	{Name: "container-check-interval", Arg: "DURATION", Keys: "znode.container.checkIntervalMs", Doc: "how often to remove empty containers and expired TTL nodes"},
	{Name: "log-level", Arg: "LEVEL", Doc: "debug, info, warn or error"},
	{Name: "pprof", Arg: "HOST:PORT", Doc: "serve Go's /debug/pprof there, for profiling (loopback only)"},
	{Name: "zoo-env", Doc: "configure as the official zookeeper container image does: $ZOO_CONF_DIR/zoo.cfg (default /conf), written from the ZOO_* variables when missing, and $ZOO_DATA_DIR/myid from ZOO_MY_ID"},
	{Name: "version", Doc: "print zkd's version, commit and Go version and exit (srvr, mntr and envi report the same build)"},
	{Name: "config-keys", Doc: "print the zoo.cfg keys, their defaults and descriptions (docs/configuration.md) and exit"},
}

// FlagUsage is the --help line of the named flag: its description and the keys it overrides.
func FlagUsage(name string) string {
	for _, f := range Flags {
		if f.Name == name {
			if f.Keys != "" {
				return fmt.Sprintf("%s (overrides %s)", f.Doc, f.Keys)
			}
			return f.Doc
		}
	}
	panic("config: no flag " + name + " in Flags")
}

// DocsPath is where the page Markdown renders is kept in the repository.
const DocsPath = "docs/configuration.md"

// Markdown renders the configuration reference, docs/configuration.md: the flags and every
// row of the key table by section.
func Markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	var guarded []string
	for _, g := range guardedPrefixes {
		guarded = append(guarded, "`"+g+"`")
	}
	p("# Configuration\n\n")
	p("<!-- Generated from internal/config (keys.go, docs.go) by\n")
	p("     go test ./internal/config -run TestConfigDocs -update\n")
	p("     Do not edit: change the table and regenerate. -->\n\n")
	p("`zkd` with no arguments serves clients on `127.0.0.1:2181` and keeps its data in `./zkd-data`.\n")
	p("`zkd --config zoo.cfg` reads an Apache ZooKeeper configuration file the way ZooKeeper 3.8 does:\n")
	p("the same keys, defaults and checks. `zkd --config-keys` prints this page.\n\n")
	p("Keys ZooKeeper reads that zkd does not implement are listed at the end of this page; start-up logs\n")
	p("each one set (\"ignoring ZooKeeper key zkd does not implement\", with what zkd does instead).\n")
	p("Unknown keys are logged apart (\"ignoring unknown config key\": most likely a typo) and ignored, as ZooKeeper does, except under prefixes where a typo\n")
	p("would quietly weaken security (%s):\n", strings.Join(guarded, ", "))
	p("there they stop start-up. Invalid values stop start-up with an error naming the key.\n")
	p("Keys marked † are system properties in ZooKeeper and may also be written with the\n")
	p("`zookeeper.` prefix. The last column of the key tables is zkd's value when it runs without\n")
	p("a config file, where that differs from ZooKeeper's default.\n\n")

	p("## Flags\n\n")
	p("| flag | overrides | description |\n| --- | --- | --- |\n")
	for _, f := range Flags {
		name := "--" + f.Name
		if f.Arg != "" {
			name += " " + f.Arg
		}
		keys := "(no zoo.cfg key)"
		if f.Keys != "" {
			var ks []string
			for k := range strings.SplitSeq(f.Keys, ", ") {
				ks = append(ks, "`"+k+"`")
			}
			keys = strings.Join(ks, ", ")
		}
		p("| `%s` | %s | %s |\n", name, keys, cell(f.Doc))
	}

	section := ""
	for _, k := range keys {
		if k.Section != section {
			section = k.Section
			p("\n## %s\n\n", section)
			if k.Unimplemented != "" {
				p("ZooKeeper 3.8/3.9 reads these keys; zkd recognises them and does not implement them.\n")
				p("Start-up logs each one set, with what zkd does instead, apart from unknown keys (typos).\n\n")
				p("| key | ZooKeeper's default | what zkd does instead |\n| --- | --- | --- |\n")
			} else {
				p("| key | default | without a config file | description |\n| --- | --- | --- | --- |\n")
			}
		}
		name := "`" + k.displayName() + "`"
		if k.SysProp {
			name += " †"
		}
		if k.Unimplemented != "" {
			p("| %s | %s | %s |\n", name, code(k.Default), cell(k.Unimplemented))
			continue
		}
		p("| %s | %s | %s | %s |\n", name, code(k.Default), code(k.ZkdDefault), cell(k.Doc))
	}
	return b.String()
}

func code(v string) string {
	if v == "" {
		return ""
	}
	return "`" + v + "`"
}

// cell escapes what would break a Markdown table cell or read as an HTML tag.
var cell = strings.NewReplacer("|", `\|`, "<", `\<`, ">", `\>`).Replace
