package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/zkd-io/zkd/internal/tlsconf/tlstest"
)

// TestProcessEnsembleQuorumTLS: three zkd processes started from zoo.cfg files with
// sslQuorum=true and ssl.quorum.* PKCS12 stores elect and replicate over TLS, and after the
// leader is killed the other two go on.
func TestProcessEnsembleQuorumTLS(t *testing.T) {
	pki := tlstest.New(t, filepath.Join(t.TempDir(), "pki"))
	e := startProcEnsembleCfg(t, 3, 200, false, []string{
		"sslQuorum=true",
		"ssl.quorum.keyStore.location=" + pki.Server.PKCS12,
		"ssl.quorum.keyStore.password=" + tlstest.Password,
		"ssl.quorum.trustStore.location=" + pki.TrustPKCS12,
		"ssl.quorum.trustStore.password=" + tlstest.Password,
	})
	for i, p := range e.procs {
		if !waitForLog(t, p.logText, fmt.Sprintf("server %d's quorum TLS", i+1), func(log string) bool {
			return strings.Contains(log, `msg="quorum TLS" sslQuorum=true`)
		}) {
			t.FailNow()
		}
	}
	for i, a := range e.addrs {
		c := connectAll(t, []string{a})
		if _, err := c.Create(fmt.Sprintf("/via-%d", i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create through server %d: %v", i+1, err)
		}
	}
	for i, a := range e.addrs {
		c := connectAll(t, []string{a})
		if _, err := c.Sync("/"); err != nil {
			t.Fatal(err)
		}
		for j := range e.addrs {
			if ok, _, err := c.Exists(fmt.Sprintf("/via-%d", j)); err != nil || !ok {
				t.Fatalf("server %d lacks /via-%d: %v %v", i+1, j, ok, err)
			}
		}
	}
	old := e.leader()
	e.procs[old].kill()
	e.procs[old] = nil
	e.waitQuorum(2)
	var survivors []string
	for i, a := range e.addrs {
		if i != old {
			survivors = append(survivors, a)
		}
	}
	c := connectAll(t, survivors)
	if _, err := c.Create("/after-failover", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}
