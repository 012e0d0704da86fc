package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkd-io/zkd/internal/testing/refzk"
)

// TestAdminSystemPropertiesAsZooKeeper: ZooKeeper's QuorumPeerConfig.parseProperties sets
// every zoo.cfg key it does not read itself as the system property "zookeeper." + key, and
// its AdminServer's system_properties shows them; zkd, started from a zoo.cfg with the
// same keys, answers the same zookeeper.* properties with the same values (each server's
// own admin.serverPort aside).
func TestAdminSystemPropertiesAsZooKeeper(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	common := []string{"4lw.commands.whitelist=srvr, mntr,ruok", "globalOutstandingLimit=500",
		"snapCount=2000", "autopurge.purgeInterval=0", "maxClientCnxns=0"}
	ref := refzk.StartStandalone(t, refzk.Options{AdminServer: true, Config: common})
	aport := freePort(t)
	startFromZooCfg(t, t.TempDir(), "admin.enableServer=true\nadmin.serverAddress=127.0.0.1\n"+
		fmt.Sprintf("admin.serverPort=%d\n", aport)+strings.Join(common, "\n")+"\n")
	zkProps := func(addr string) map[string]string {
		t.Helper()
		url := "http://" + addr + "/commands/system_properties"
		deadline := time.Now().Add(60 * time.Second)
		for {
			resp, err := http.Get(url)
			if err == nil {
				var v map[string]any
				derr := json.NewDecoder(resp.Body).Decode(&v)
				resp.Body.Close()
				if derr == nil && resp.StatusCode == http.StatusOK {
					m := map[string]string{}
					for k, x := range v {
						if strings.HasPrefix(k, "zookeeper.") {
							m[k] = fmt.Sprint(x)
						}
					}
					return m
				}
				err = fmt.Errorf("%s, %v", resp.Status, derr)
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET %s: %v", url, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	zk := zkProps(ref.AdminAddr())
	zkd := zkProps(fmt.Sprintf("127.0.0.1:%d", aport))
	_, refAdminPort, _ := strings.Cut(ref.AdminAddr(), ":")
	if zk["zookeeper.admin.serverPort"] != refAdminPort || zkd["zookeeper.admin.serverPort"] != strconv.Itoa(aport) {
		t.Errorf("zookeeper.admin.serverPort: ZooKeeper %q (its port %s), zkd %q (its port %d)",
			zk["zookeeper.admin.serverPort"], refAdminPort, zkd["zookeeper.admin.serverPort"], aport)
	}
	delete(zk, "zookeeper.admin.serverPort")
	delete(zkd, "zookeeper.admin.serverPort")
	keys := slices.Sorted(func(yield func(string) bool) {
		seen := map[string]bool{}
		for _, m := range []map[string]string{zk, zkd} {
			for k := range m {
				if !seen[k] {
					seen[k] = true
					if !yield(k) {
						return
					}
				}
			}
		}
	})
	for _, k := range keys {
		zv, zok := zk[k]
		dv, dok := zkd[k]
		if zok != dok || zv != dv {
			t.Errorf("%s: ZooKeeper %q (%v), zkd %q (%v)", k, zv, zok, dv, dok)
		}
	}
	if zk["zookeeper.4lw.commands.whitelist"] == "" {
		t.Errorf("ZooKeeper answers no zookeeper.4lw.commands.whitelist: %v", zk)
	}
	t.Logf("ZooKeeper's zookeeper.* properties: %v", zk)
}
