package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/sasl"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

const jaasServer = `Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_super="adminsecret"
    user_bob="bobsecret";
};
`

// saslLogin runs a DIGEST-MD5 exchange on c and returns the last reply's error code.
func saslLogin(t *testing.T, c *rawzk.Client, user, pw string) jute.Code {
	t.Helper()
	cl, err := sasl.NewClient(sasl.DigestMD5, user, pw, sasl.ClientService, sasl.ClientHost)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cl.Step(nil)
	for i := 0; i < 5 && err == nil; i++ {
		var resp jute.SASLToken
		h, rerr := c.Reply(c.Send(jute.OpSASL, &jute.SASLToken{Token: tok}), &resp)
		if rerr != nil {
			t.Fatalf("sasl reply: %v", rerr)
		}
		if h.Err != jute.OK {
			return h.Err
		}
		// As ZooKeeper's client: the server's last token completes the exchange and
		// nothing more is sent.
		if tok, err = cl.Step(resp.Token); err == nil && cl.Complete() {
			return jute.OK
		}
	}
	if err != nil {
		t.Fatalf("client step: %v", err)
	}
	return jute.OK
}

// TestSASLFromJAASFile: the JAAS file named in SERVER_JVMFLAGS (as ZooKeeper's scripts pass
// it) configures DIGEST-MD5 on the client port: bob logs in and gets sasl:bob, a wrong
// password is AUTHFAILED, superUser names a super user.
func TestSASLFromJAASFile(t *testing.T) {
	dir := t.TempDir()
	jaas := filepath.Join(dir, "jaas.conf")
	if err := os.WriteFile(jaas, []byte(jaasServer), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(strings.NewReader("tickTime=2000\ndataDir=" + dir + "\nclientPort=2181\n" +
		"authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\nsuperUser=super\n"))
	if err != nil {
		t.Fatal(err)
	}
	var sc server.Config
	env := func(k string) string {
		if k == "SERVER_JVMFLAGS" {
			return "-Xmx1g -Djava.security.auth.login.config=" + jaas + " -Dfoo=bar"
		}
		return ""
	}
	if err := applySASL(&cfg.Security, &sc, slog.New(slog.NewTextHandler(io.Discard, nil)), env); err != nil {
		t.Fatal(err)
	}
	if err := applySecurity(cfg, &server.Config{}, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.NewSASLServer, c.SASLSuperUsers = sc.NewSASLServer, sc.SASLSuperUsers
		c.AuthProviders.SASL = true
	}))
	bob := rawzk.Connect(t, srv.Addr())
	if code := saslLogin(t, bob, "bob", "bobsecret"); code != jute.OK {
		t.Fatalf("bob: %v", code)
	}
	acl := []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "sasl", ID: "bob"}}}
	if h := bob.Call(jute.OpCreate, &jute.CreateRequest{Path: "/b", ACL: acl}, &jute.CreateResponse{}); h.Err != jute.OK {
		t.Fatalf("create with sasl:bob ACL: %v", h.Err)
	}
	if h := bob.Call(jute.OpGetData, &jute.GetDataRequest{Path: "/b"}, &jute.GetDataResponse{}); h.Err != jute.OK {
		t.Fatalf("bob reads: %v", h.Err)
	}
	admin := rawzk.Connect(t, srv.Addr())
	if code := saslLogin(t, admin, "super", "adminsecret"); code != jute.OK {
		t.Fatalf("super: %v", code)
	}
	if h := admin.Call(jute.OpGetData, &jute.GetDataRequest{Path: "/b"}, &jute.GetDataResponse{}); h.Err != jute.OK {
		t.Fatalf("super user reads: %v", h.Err)
	}
	eve := rawzk.Connect(t, srv.Addr())
	if code := saslLogin(t, eve, "bob", "guess"); code != jute.ErrAuthFailed {
		t.Fatalf("wrong password: %v, want AUTHFAILED", code)
	}
	if !eve.Closed() {
		t.Fatal("connection kept after a failed login")
	}
}

// TestSASLMissingSection: a JAAS file without the Server section means no client SASL, as in
// ZooKeeper, unless sasl.serverconfig named the section, which then stops start-up.
func TestSASLMissingSection(t *testing.T) {
	dir := t.TempDir()
	jaas := filepath.Join(dir, "jaas.conf")
	os.WriteFile(jaas, []byte("Client { org.apache.zookeeper.server.auth.DigestLoginModule required username=\"a\" password=\"b\"; };\n"), 0o600)
	noEnv := func(string) string { return "" }
	var sc server.Config
	if err := applySASL(&config.Security{JAASConfig: jaas}, &sc, discard, noEnv); err != nil || sc.NewSASLServer != nil {
		t.Fatalf("default section missing: err %v, SASL configured %v; want neither", err, sc.NewSASLServer != nil)
	}
	err := applySASL(&config.Security{JAASConfig: jaas, SASLServerSection: "ZkServer"}, &server.Config{}, discard, noEnv)
	if err == nil || !strings.Contains(err.Error(), `"ZkServer"`) {
		t.Fatalf("err %v, want one naming the missing ZkServer section", err)
	}
}

// TestKerberosDefaultRealm: the DEFAULT auth_to_local rule needs the default realm, which
// zkd finds where Java does (java.security.krb5.realm, the krb5.conf of
// java.security.krb5.conf), then in KRB5_CONFIG, else the service principal's realm.
// Without it no rule applied and every GSSAPI client was refused.
func TestKerberosDefaultRealm(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "krb5.conf")
	if err := os.WriteFile(conf, []byte("[libdefaults]\n\tdefault_realm = CONF.ORG\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"SERVER_JVMFLAGS": "-Djava.security.krb5.realm=PROP.ORG -Djava.security.krb5.conf=" + conf}, "PROP.ORG"},
		{map[string]string{"SERVER_JVMFLAGS": "-Djava.security.krb5.conf=" + conf}, "CONF.ORG"},
		{map[string]string{"KRB5_CONFIG": conf}, "CONF.ORG"},
		{map[string]string{"SERVER_JVMFLAGS": "-Djava.security.krb5.conf=" + filepath.Join(dir, "none")}, "SERVICE.ORG"},
	} {
		got := kerberosDefaultRealm(func(k string) string { return tc.env[k] }, "zookeeper/localhost@SERVICE.ORG", logger)
		if got != tc.want && !(tc.want == "SERVICE.ORG" && got != "") {
			t.Errorf("%v: %q, want %q", tc.env, got, tc.want)
		}
		names := sasl.KerberosNames{DefaultRealm: got, RemoveRealm: true}
		if id, err := names.AuthorizationID("client@" + got); err != nil || id != "client" {
			t.Errorf("%v: client@%s is %q, %v; want client", tc.env, got, id, err)
		}
	}
}

// TestSASLSuperPasswordAndRules: SASLAuthenticationProvider.superPassword replaces the
// user_super password (as SaslServerCallbackHandler); a bad security.auth_to_local rule
// stops start-up.
func TestSASLSuperPasswordAndRules(t *testing.T) {
	dir := t.TempDir()
	jaas := filepath.Join(dir, "jaas.conf")
	if err := os.WriteFile(jaas, []byte(jaasServer), 0o600); err != nil {
		t.Fatal(err)
	}
	noEnv := func(string) string { return "" }
	var sc server.Config
	sec := config.Security{JAASConfig: jaas, SASLSuperPassword: "override", AuthToLocal: "RULE:[1:$1@$0](.*@EXAMPLE.COM)s/@.*// DEFAULT"}
	if err := applySASL(&sec, &sc, discard, noEnv); err != nil {
		t.Fatal(err)
	}
	srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.NewSASLServer = sc.NewSASLServer }))
	if code := saslLogin(t, rawzk.Connect(t, srv.Addr()), "super", "override"); code != jute.OK {
		t.Fatalf("super with superPassword: %v", code)
	}
	if code := saslLogin(t, rawzk.Connect(t, srv.Addr()), "super", "adminsecret"); code != jute.ErrAuthFailed {
		t.Fatalf("super with the replaced JAAS password: %v, want AUTHFAILED", code)
	}
	bad := config.Security{JAASConfig: jaas, AuthToLocal: "RULE:[1:$1"}
	if err := applySASL(&bad, &server.Config{}, discard, noEnv); err == nil || !strings.Contains(err.Error(), "auth_to_local") {
		t.Fatalf("bad auth_to_local rule: err %v", err)
	}
}
