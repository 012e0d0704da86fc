package server_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/internal/tlsconf/tlstest"
	"github.com/zkd-io/zkd/server"
)

// Mixed zkd + Apache ZooKeeper ensembles over quorum TLS, with the same JKS stores. The
// loopback certificates (SANs 127.0.0.1, ::1, localhost) pass ZooKeeper's hostname
// verification both ways, so ssl.quorum.hostnameVerification stays on.

// refQuorumTLS gives a ZooKeeper member pki's server identity for the quorum, and the
// class path its quorum TLS needs.
func refQuorumTLS(t *testing.T, pki *tlstest.PKI, sslQuorum, portUnification bool) func(int64, *refzk.Options) {
	return func(_ int64, o *refzk.Options) {
		o.Config = append(o.Config,
			"ssl.quorum.keyStore.location="+pki.Server.JKS,
			"ssl.quorum.keyStore.password="+tlstest.Password,
			"ssl.quorum.trustStore.location="+pki.TrustJKS,
			"ssl.quorum.trustStore.password="+tlstest.Password,
			fmt.Sprintf("sslQuorum=%v", sslQuorum),
			fmt.Sprintf("portUnification=%v", portUnification))
		// ZooKeeper's quorum TLS listener (UnifiedServerSocket) tells TLS from plaintext with
		// Netty's SslHandler: it needs the Netty jars zookeeper.jar's manifest does not name.
		o.Netty = true
	}
}

// refLogHas reports whether ZooKeeper member m logged s.
func refLogHas(t *testing.T, m *mixedMember, s string) bool {
	t.Helper()
	b, err := os.ReadFile(m.ref.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(b), s)
}

func TestMixedQuorumTLSZkdLeads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	pki := tlstest.New(t, t.TempDir())
	// zkd (sid 3) and ZooKeeper 1 elect zkd; ZooKeeper 2 joins it.
	members := startMixedPer(t, map[int64]bool{3: true}, []int64{1, 3, 2},
		func(c *server.Config) { c.QuorumTLS = quorumTLS(t, pki.Server.JKS, pki.TrustJKS, true, false) },
		refQuorumTLS(t, pki, true, false))
	if m := members[2].mode(t); m != "leader" {
		t.Fatalf("zkd (sid 3) is %q", m)
	}
	checkMixed(t, members)
	if n := tlsHellos.get(members[2].quorumPort); n < 2 {
		t.Fatalf("zkd's quorum port saw %d TLS handshakes, want one per ZooKeeper follower", n)
	}
	for _, m := range members[:2] {
		if !refLogHas(t, m, "SSL handshake complete") {
			t.Errorf("ZooKeeper %d logged no TLS election handshake", m.id)
		}
	}
}

func TestMixedQuorumTLSZooKeeperLeads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	pki := tlstest.New(t, t.TempDir())
	// ZooKeeper (sid 3) and zkd 1 elect ZooKeeper; zkd 2 joins it.
	members := startMixedPer(t, map[int64]bool{1: true, 2: true}, []int64{3, 1, 2},
		func(c *server.Config) { c.QuorumTLS = quorumTLS(t, pki.Server.JKS, pki.TrustJKS, true, false) },
		refQuorumTLS(t, pki, true, false))
	if m := members[2].mode(t); m != "leader" {
		t.Fatalf("ZooKeeper (sid 3) is %q", m)
	}
	checkMixed(t, members)
	if !refLogHas(t, members[2], "SSL handshake complete") {
		t.Error("ZooKeeper logged no TLS election handshake")
	}
	// Kill the ZooKeeper leader: the two zkd members elect a new leader over TLS.
	members[2].ref.Kill()
	waitFor(t, "a zkd leader after the ZooKeeper leader died", func() bool {
		return members[0].mode(t) == "leader" || members[1].mode(t) == "leader"
	})
	c := connectTo(t, members[0].addr)
	if _, err := c.Create("/after-failover", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := c.Exists("/m3-4"); err != nil || !ok {
		t.Fatalf("write made through the dead ZooKeeper leader lost: %v %v", ok, err)
	}
}

// TestMixedQuorumPortUnification: the rolling upgrade's middle step across
// implementations. Every member has portUnification; ZooKeeper 1 also has sslQuorum and
// dials TLS, ZooKeeper 2 and zkd 3 dial plaintext. zkd leads and takes ZooKeeper 1's TLS
// learner connection and ZooKeeper 2's plaintext one.
func TestMixedQuorumPortUnification(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	pki := tlstest.New(t, t.TempDir())
	members := startMixedPer(t, map[int64]bool{3: true}, []int64{1, 3, 2},
		func(c *server.Config) { c.QuorumTLS = quorumTLS(t, pki.Server.JKS, pki.TrustJKS, false, true) },
		func(sid int64, o *refzk.Options) { refQuorumTLS(t, pki, sid == 1, true)(sid, o) })
	if m := members[2].mode(t); m != "leader" {
		t.Fatalf("zkd (sid 3) is %q", m)
	}
	checkMixed(t, members)
	if n := tlsHellos.get(members[2].quorumPort); n < 1 {
		t.Fatalf("zkd's quorum port saw %d TLS handshakes, want ZooKeeper 1's (ZooKeeper 2 follows over plaintext)", n)
	}
}
