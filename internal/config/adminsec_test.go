package config

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestAdminGuardKeys: zkd.admin.allowedHosts, zkd.admin.restoreMaxBytes and
// zkd.admin.restoreReadTimeoutMs are read (not logged as unknown), round-trip, and refuse
// values that would leave a guard at something the operator did not mean.
func TestAdminGuardKeys(t *testing.T) {
	c := mustParse(t, "dataDir=/d\nclientPort=2181\n")
	if !reflect.DeepEqual(c.AdminGuards, AdminGuards{}) {
		t.Errorf("defaults: %+v", c.AdminGuards)
	}
	c = mustParse(t, "dataDir=/d\nclientPort=2181\n"+
		"zkd.admin.allowedHosts=zk1.example.com, ZK2.example.com,10.0.0.5\n"+
		"zkd.admin.restoreMaxBytes=1048576\nzkd.admin.restoreReadTimeoutMs=2500\n")
	want := AdminGuards{AllowedHosts: []string{"zk1.example.com", "zk2.example.com", "10.0.0.5"}, RestoreMaxBytes: 1 << 20, RestoreReadTimeoutMs: 2500}
	if !reflect.DeepEqual(c.AdminGuards, want) {
		t.Errorf("set: %+v, want %+v", c.AdminGuards, want)
	}
	for _, k := range []string{AdminAllowedHostsKey, AdminRestoreMaxBytesKey, AdminRestoreReadTimeoutKey} {
		if slices.Contains(c.Unknown, k) {
			t.Errorf("%s logged as unknown", k)
		}
	}
	if back := mustParse(t, c.String()); !reflect.DeepEqual(back, c) {
		t.Errorf("String does not round-trip:\n%s", c.String())
	}
	for _, bad := range []string{
		"zkd.admin.allowedHosts=",
		"zkd.admin.allowedHosts=a.example,,b.example",
		"zkd.admin.allowedHosts=zk1.example.com:8080",
		"zkd.admin.allowedHosts=http://zk1.example.com",
		"zkd.admin.restoreMaxBytes=0",
		"zkd.admin.restoreMaxBytes=-1",
		"zkd.admin.restoreMaxBytes=1GB",
		"zkd.admin.restoreReadTimeoutMs=0",
		"zkd.admin.restoreReadTimeoutMs=30s",
	} {
		_, err := Parse(strings.NewReader("dataDir=/d\nclientPort=2181\n" + bad + "\n"))
		var ke *KeyError
		if !errors.Is(err, ErrInvalid) || !errors.As(err, &ke) || !strings.HasPrefix(bad, ke.Key+"=") {
			t.Errorf("%s: err = %v, want ErrInvalid naming the key", bad, err)
		}
	}
}
