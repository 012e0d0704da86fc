package compat

import (
	"testing"

	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// TestEnforceAuthMatchesZooKeeper runs Apache ZooKeeper and zkd with enforce.auth.enabled and
// enforce.auth.schemes=digest and compares what unauthenticated and authenticated sessions
// see: a request before addauth (a ping, a read, a write, closeSession) is answered
// SESSIONCLOSEDREQUIRESASLAUTH and the connection closed; addauth itself is served; after a
// digest addauth everything is served; a failed addauth is AUTHFAILED and closed.
func TestEnforceAuthMatchesZooKeeper(t *testing.T) {
	refzk.Require(t)
	ref := refzk.StartStandalone(t, refOptions("", "zookeeper.enforce.auth.enabled=true", "zookeeper.enforce.auth.schemes=digest"))
	z := zktest.Start(t, zkdConfig("", func(c *server.Config) { c.EnforceAuthSchemes = []string{"digest"} }))
	// runGroup pings the first session to learn the zxid: "p" takes that (and is closed).
	targets := []target{{"zookeeper", ref.Addr()}, {"zkd", z.Addr()}}
	compareScript(t, targets, []group{
		{name: "unauthenticated-read", sessions: []string{"p", "a"}, steps: []step{getData("a", "/", false)}},
		{name: "unauthenticated-write", sessions: []string{"p", "a"}, steps: []step{create("a", "/ea", nil, 0)}},
		{name: "unauthenticated-ping", sessions: []string{"p", "a"}, steps: []step{withXid(jute.XidPing, req("a", jute.OpPing, nil, "ping"))}},
		{name: "unauthenticated-close", sessions: []string{"p", "a"}, steps: []step{closeSession("a")}},
		{name: "ip-is-not-enough", sessions: []string{"p", "a"}, steps: []step{
			auth("a", "ip", "127.0.0.1"),
			exists("a", "/", false),
		}},
		{name: "digest-then-served", sessions: []string{"p", "a"}, steps: []step{
			auth("a", "digest", "bob:secret"),
			create("a", "/eb", []byte("x"), 0),
			getData("a", "/eb", false),
			del("a", "/eb", -1),
			withXid(jute.XidPing, req("a", jute.OpPing, nil, "ping")),
		}},
		{name: "bad-auth", sessions: []string{"p", "a"}, steps: []step{auth("a", "nosuch", "x")}},
	})
}
