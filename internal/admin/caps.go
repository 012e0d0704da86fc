package admin

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/zkd-io/zkd/internal/buildinfo"
	"github.com/zkd-io/zkd/internal/ext"
)

// Capability discovery (the capabilities extension, docs/beyond.md): ClickHouse Keeper's
// surface, byte for byte, and zkd's own capability document.
//
// What ClickHouse Keeper does, read from its sources (ClickHouse/ClickHouse):
//   - src/Coordination/KeeperConstants.h: the paths /keeper, /keeper/api_version,
//     /keeper/feature_flags; KeeperApiVersion ZOOKEEPER_COMPATIBLE=0, WITH_FILTERED_LIST=1,
//     WITH_MULTI_READ=2, WITH_CHECK_NOT_EXISTS=3 (later ones added after).
//   - src/Coordination/KeeperFeatureFlags.h/.cpp: KeeperFeatureFlag FILTERED_LIST=0,
//     MULTI_READ, CHECK_NOT_EXISTS, CREATE_IF_NOT_EXISTS, REMOVE_RECURSIVE; the flags are a
//     byte string, flag n is bit 7-n%8 of byte n/8 (most significant bit first), as many
//     bytes as the highest flag needs (one here).
//   - src/Coordination/KeeperContext.cpp: /keeper/feature_flags holds that byte string;
//     /keeper/api_version holds toString(uint8 WITH_MULTI_READ), the text "2", whatever
//     the flags ("for older clients").
//   - src/Coordination/KeeperStorage.cpp (initializeSystemNodes): /keeper and its children
//     are nodes with an all-zero Stat (dataLength aside) and no ACL; /keeper counts as a
//     child of "/", the system children do not count in /keeper's numChildren. Create,
//     delete and setData of any path under /keeper answer ZBADARGUMENTS.
//   - src/Coordination/FourLetterCommand.cpp: apiv answers toString(WITH_MULTI_READ), "2",
//     no newline; ftfl answers one "<flag name in lower case>\t<0|1>\n" line per flag, in
//     the enum's order.
//   - src/Common/ZooKeeper/ZooKeeper.cpp (initFeatureFlags): a ClickHouse client reads
//     /keeper/feature_flags first and falls back to /keeper/api_version, then to
//     ZooKeeper-compatible when both are missing (NoNode).
//
// zkd differs on purpose in two places. api_version is derived from the flags zkd reports
// (at most 2, ClickHouse's value), so a client that reads only api_version never assumes
// FilteredList on a zkd without keeper-ops. And writes to the virtual paths are answered by
// the real tree, as ZooKeeper answers them (no node: NoNode), not with ZBADARGUMENTS: a
// stock client's writes must see ZooKeeper (docs/beyond.md).

// KeeperFlag is one of ClickHouse Keeper's feature flags, in its enum's order, and the zkd
// extension that implements its meaning.
type KeeperFlag struct {
	Name string   // as ftfl prints it
	By   ext.Name // "" when zkd never implements it
}

// KeeperFlags are ClickHouse Keeper's feature flags in enum order (KeeperFeatureFlags.h).
var KeeperFlags = []KeeperFlag{
	{Name: "filtered_list", By: ext.KeeperOps},
	{Name: "multi_read", By: ext.KeeperOps},
	{Name: "check_not_exists", By: ext.KeeperOps},
	{Name: "create_if_not_exists", By: ext.KeeperOps},
	{Name: "remove_recursive", By: ext.KeeperOps},
}

// The ClickHouse Keeper paths (KeeperConstants.h) and zkd's own capability node, which sits
// under /zookeeper because ZooKeeper reserves that subtree for the server.
const (
	KeeperPath             = "/keeper"
	KeeperAPIVersionPath   = KeeperPath + "/api_version"
	KeeperFeatureFlagsPath = KeeperPath + "/feature_flags"
	CapabilitiesPath       = ext.CapabilitiesNode
)

// CapabilitiesVersion is the version of the capability document's shape. A field is only
// ever added; a change that would break a reader bumps it.
const CapabilitiesVersion = 1

// flagOn reports whether set enables flag i.
func flagOn(set ext.Set, i int) bool {
	return KeeperFlags[i].By != "" && set.Has(KeeperFlags[i].By)
}

// FeatureFlagsData is /keeper/feature_flags' data for set.
func FeatureFlagsData(set ext.Set) []byte {
	out := make([]byte, (len(KeeperFlags)+7)/8)
	for i := range KeeperFlags {
		if flagOn(set, i) {
			out[i/8] |= 1 << (7 - i%8)
		}
	}
	return out
}

// APIVersion is /keeper/api_version's data and apiv's answer for set: the highest
// KeeperApiVersion whose flags set all enables, capped at ClickHouse's own 2.
func APIVersion(set ext.Set) string {
	v := 0
	for v < 2 && flagOn(set, v) { // versions 1 and 2 add flags 0 and 1
		v++
	}
	return strconv.Itoa(v)
}

// Ftfl is ftfl's answer for set.
func Ftfl(set ext.Set) string {
	var b strings.Builder
	for i, f := range KeeperFlags {
		on := "0"
		if flagOn(set, i) {
			on = "1"
		}
		b.WriteString(f.Name + "\t" + on + "\n")
	}
	return b.String()
}

// capsWords are the four-letter words the capabilities extension adds (ClickHouse Keeper's).
var capsWords = []string{"apiv", "ftfl"}

// LookupCaps is Lookup for the capabilities extension's words; the server asks it only when
// the extension is on, so that with it off "apiv" stays a frame length, as in ZooKeeper.
func LookupCaps(n int32) (cmd string, ok bool) {
	for _, c := range capsWords {
		if Code(c) == n {
			return c, true
		}
	}
	return "", false
}

// AllowedCaps is Allowed for the capabilities words: the whitelist must name them, or be
// "*", as for ZooKeeper's own words.
func AllowedCaps(cmd string, whitelist []string) bool {
	for _, w := range whitelist {
		if w = strings.TrimSpace(w); w == "*" || w == cmd {
			return true
		}
	}
	return false
}

// CapsFourLetter answers apiv or ftfl.
func CapsFourLetter(cmd string, set ext.Set) string {
	if cmd == "apiv" {
		return APIVersion(set)
	}
	return Ftfl(set)
}

// Capabilities is zkd's capability document, the data of CapabilitiesPath and the
// AdminServer's capabilities command.
type Capabilities struct {
	Version    int      `json:"version"`
	Server     string   `json:"server"`
	Extensions []string `json:"extensions"`
}

// CapabilitiesOf is the document for set.
func CapabilitiesOf(set ext.Set) Capabilities {
	c := Capabilities{Version: CapabilitiesVersion, Server: "zkd " + buildinfo.Get().Version, Extensions: []string{}}
	for _, n := range set.List() {
		c.Extensions = append(c.Extensions, string(n))
	}
	return c
}

// CapabilitiesData is CapabilitiesPath's data for set.
func CapabilitiesData(set ext.Set) []byte {
	b, _ := json.Marshal(CapabilitiesOf(set)) // a struct of strings and ints always encodes
	return b
}

// CapabilitiesJSON is the capability document as the AdminServer's fields.
func CapabilitiesJSON(set ext.Set) Object {
	c := CapabilitiesOf(set)
	return Object{
		{Key: "version", Value: c.Version},
		{Key: "server", Value: c.Server},
		{Key: "extensions", Value: slices.Clone(c.Extensions)},
	}
}

// CapabilitiesCommands are the AdminServer names of the capabilities command. It is not in
// the command list (LookupHTTP, CommandLinks): with the extension off the AdminServer is
// ZooKeeper's, and with it on only a client that knows the name asks for it.
var CapabilitiesCommands = []string{"capabilities", "caps"}
