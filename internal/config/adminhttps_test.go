package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// AdminServer HTTPS part: admin.portUnification and admin.forceHttps, with or without the
// zookeeper. prefix, "true" or "false" in any case (ZooKeeper's Boolean.getBoolean reads
// anything else as false; zkd refuses it), and the start-up errors for HTTPS without the
// quorum stores and for needClientAuth without HTTPS.
func TestAdminTLSKeys(t *testing.T) {
	const base = "dataDir=/d\nclientPort=2181\n"
	const stores = "ssl.quorum.keyStore.location=/k.p12\nssl.quorum.trustStore.location=/t.p12\n"
	c := mustParse(t, base)
	if c.AdminTLS.Enabled() || c.AdminTLS != (AdminTLSKeys{}) {
		t.Errorf("defaults: %+v", c.AdminTLS)
	}
	c = mustParse(t, base+"admin.portUnification=TRUE\nzookeeper.admin.forceHttps=true\n")
	if !c.AdminTLS.PortUnification || !c.AdminTLS.ForceHTTPS || !c.AdminTLS.Enabled() {
		t.Errorf("set: %+v", c.AdminTLS)
	}
	if back := mustParse(t, c.String()); !reflect.DeepEqual(back, c) {
		t.Errorf("String does not round-trip:\n%s", c.String())
	}
	for _, bad := range []string{"admin.forceHttps=yes", "zookeeper.admin.portUnification=1"} {
		_, err := Parse(strings.NewReader(base + bad + "\n"))
		key, _, _ := strings.Cut(bad, "=")
		if !errors.Is(err, ErrNotBoolean) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: err = %v, want ErrNotBoolean naming %s", bad, err, key)
		}
	}
	// Served over HTTPS with both stores.
	for _, in := range []string{
		"admin.enableServer=true\nadmin.forceHttps=true\n" + stores,
		"admin.enableServer=true\nadmin.portUnification=true\nadmin.needClientAuth=true\n" + stores,
		// Not served: the keys are not looked at.
		"admin.forceHttps=true\n",
		"admin.needClientAuth=true\n",
	} {
		if _, err := Parse(strings.NewReader(base + in)); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
	for _, tc := range []struct{ in, key string }{
		{"admin.enableServer=true\nadmin.forceHttps=true\n", "admin.forceHttps"},
		{"admin.enableServer=true\nadmin.portUnification=true\nssl.quorum.keyStore.location=/k.p12\n", "ssl.quorum.trustStore.location"},
		{"admin.enableServer=true\nadmin.forceHttps=true\nssl.quorum.trustStore.location=/t.p12\n", "ssl.quorum.keyStore.location"},
		{"admin.enableServer=true\nadmin.needClientAuth=true\n" + stores, "admin.needClientAuth"},
	} {
		_, err := Parse(strings.NewReader(base + tc.in))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%q: err = %v, want ErrInvalid naming %s", tc.in, err, tc.key)
		}
	}
}
