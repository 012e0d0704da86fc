package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// fileDefaults, now built from the table, is still ZooKeeper's set of defaults.
func TestFileDefaults(t *testing.T) {
	want := &Config{
		TickTime:                 3000,
		MaxClientCnxns:           60,
		MinSessionTimeout:        -1,
		MaxSessionTimeout:        -1,
		ClientPortListenBacklog:  -1,
		SnapRetainCount:          minSnapRetainCount,
		SnapCount:                100000,
		PreAllocSize:             65536 * 1024,
		ForceSync:                true,
		DigestEnabled:            true,
		JuteMaxBuffer:            0xfffff,
		FourLetterWhitelist:      []string{"srvr"},
		GlobalOutstandingLimit:   1000,
		ContainerCheckIntervalMs: 60000,
	}
	if got := fileDefaults(); !reflect.DeepEqual(got, want) {
		t.Errorf("fileDefaults() =\n%+v\nwant\n%+v", got, want)
	}
}

// Every row is documented, parses its own default and is found by its name; names are
// unique.
func TestKeyTable(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k.displayName()] {
			t.Errorf("%s: two rows", k.displayName())
		}
		seen[k.displayName()] = true
		if k.Unimplemented != "" {
			if k.Doc != "" || k.value != nil || k.check != nil || k.Section != secUnimpl {
				t.Errorf("%s: an unimplemented row has a reason, at most a checking parser, and its section", k.Name)
			}
		} else if k.Doc == "" || k.Section == "" || k.parse == nil {
			t.Errorf("%s: row without doc, section or parser", k.Name)
		}
		if k.ZeroIsDefault && k.Default == "" {
			t.Errorf("%s: ZeroIsDefault without a default", k.Name)
		}
		name := k.Name
		if k.Prefix {
			name = strings.ReplaceAll(strings.ReplaceAll(k.displayName(), "N", "1"), "*", "x")
			name = strings.ReplaceAll(name, ".X", ".x")
		}
		if got, _ := lookup(name); got == nil || got.displayName() != k.displayName() {
			t.Errorf("lookup(%q) does not find its row", name)
		}
		if got, _ := lookup("zookeeper." + name); (got != nil) != k.SysProp {
			t.Errorf("lookup(zookeeper.%s) found %v, want a row only for a system property", name, got != nil)
		}
		if k.parse == nil {
			continue
		}
		var scratch Config
		if err := k.parse(&scratch, strings.TrimPrefix(name, "zookeeper."), "x"); errors.Is(err, errUnknownKey) {
			t.Errorf("%s: the row's parser does not know the key", k.Name)
		}
		for _, v := range []string{k.Default, k.ZkdDefault} {
			if v == "" || k.Prefix {
				continue
			}
			var c Config
			if err := k.parse(&c, k.Name, v); err != nil {
				t.Errorf("%s: default %q does not parse: %v", k.Name, v, err)
			}
		}
	}
	if DefaultInt("admin.serverPort") != 8080 || DefaultInt(ElectionPortBindRetryKey) != DefaultElectionPortBindRetry {
		t.Error("DefaultInt disagrees with the table")
	}
}
