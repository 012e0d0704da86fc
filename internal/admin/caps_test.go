package admin

import (
	"bytes"
	"testing"

	"github.com/zkd-io/zkd/internal/ext"
)

// TestKeeperFlagEncoding checks ClickHouse Keeper's layout (KeeperFeatureFlags.cpp): flag n
// is bit 7-n%8 of byte n/8, so filtered_list alone is 0x80 and multi_read alone 0x40.
func TestKeeperFlagEncoding(t *testing.T) {
	saved := KeeperFlags
	t.Cleanup(func() { KeeperFlags = saved })
	KeeperFlags = []KeeperFlag{{Name: "filtered_list", By: ext.KeeperOps}, {Name: "multi_read"}}
	if got := FeatureFlagsData(ext.Of(ext.KeeperOps)); !bytes.Equal(got, []byte{0x80}) {
		t.Errorf("filtered_list alone = %x, want 80", got)
	}
	if got := APIVersion(ext.Of(ext.KeeperOps)); got != "1" {
		t.Errorf("api version with filtered_list alone = %s, want 1", got)
	}
	KeeperFlags = append(make([]KeeperFlag, 9), KeeperFlag{Name: "tenth", By: ext.Wide})
	if got := FeatureFlagsData(ext.Of(ext.Wide)); !bytes.Equal(got, []byte{0, 0x40}) {
		t.Errorf("flag 9 = %x, want 0040", got)
	}
	KeeperFlags = saved
	if got := FeatureFlagsData(ext.Of(ext.KeeperOps)); !bytes.Equal(got, []byte{0xf8}) {
		t.Errorf("keeper-ops = %x, want f8", got)
	}
	if got := APIVersion(ext.Of(ext.Capabilities)); got != "0" {
		t.Errorf("api version without keeper-ops = %s, want 0", got)
	}
	if got := CapabilitiesData(ext.Set{}); !bytes.HasSuffix(got, []byte(`"extensions":[]}`)) {
		t.Errorf("empty document = %s", got)
	}
	for _, w := range []string{"apiv", "ftfl"} {
		if cmd, ok := LookupCaps(Code(w)); !ok || cmd != w {
			t.Errorf("LookupCaps(%s) = %q %v", w, cmd, ok)
		}
		if _, ok := Lookup(Code(w)); ok {
			t.Errorf("%s is among ZooKeeper's own words", w)
		}
	}
	if !AllowedCaps("apiv", []string{" * "}) || AllowedCaps("apiv", []string{"srvr", "ftfl"}) {
		t.Error("AllowedCaps does not follow the whitelist")
	}
}
