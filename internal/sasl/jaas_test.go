package sasl

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// zkTestJAAS is ZooKeeper's zookeeper-server/src/test/resources/embedded/test_jaas_server_auth.conf.
const zkTestJAAS = `Server {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       user_foo="bar";
};
Client {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       username="foo"
       password="bar";
};
QuorumServer {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       user_test="test";
};
QuorumLearner {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       username="test"
       password="test";
};`

// kerberosJAAS is the Kerberos server and client setup of ZooKeeper's SASL guide, with
// comments and a second module.
const kerberosJAAS = `/* ZooKeeper server, Kerberos and DIGEST-MD5 users */
Server {
  com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true
  keyTab="/path/to/server/keytab"
  storeKey=true
  useTicketCache=false
  principal="zookeeper/yourzkhostname";   // the host's principal
  org.apache.zookeeper.server.auth.DigestLoginModule optional
  user_super="adminsecret" user_bob="bob's \"secret\"";
};
// a client
Client {
  com.sun.security.auth.module.Krb5LoginModule REQUIRED
  useKeyTab=TRUE keyTab="/path/to/client/keytab" storeKey=true
  useTicketCache=false principal="yourzookeeperclient";
};
`

func TestParseJAASZooKeeperFiles(t *testing.T) {
	j, err := ParseJAAS([]byte(zkTestJAAS))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(j.Order, []string{"Server", "Client", "QuorumServer", "QuorumLearner"}) {
		t.Errorf("sections %v", j.Order)
	}
	if u, err := j.ServerUsers("Server"); err != nil || !maps.Equal(u, map[string]string{"foo": "bar"}) {
		t.Errorf("server users %v, %v", u, err)
	}
	if u, err := j.QuorumUsers("QuorumServer"); err != nil || !maps.Equal(u, map[string]string{"test": "test"}) {
		t.Errorf("quorum users %v, %v", u, err)
	}
	if u, p, err := j.DigestClient("Client"); err != nil || u != "foo" || p != "bar" {
		t.Errorf("client %q %q %v", u, p, err)
	}
	if u, p, err := j.DigestClient("QuorumLearner"); err != nil || u != "test" || p != "test" {
		t.Errorf("learner %q %q %v", u, p, err)
	}
	if _, err := j.ServerUsers("Nope"); !errors.Is(err, ErrJAAS) {
		t.Errorf("missing section: %v", err)
	}
	if _, _, err := j.DigestClient("Server"); !errors.Is(err, ErrJAAS) {
		t.Errorf("client credentials from a server section: %v", err)
	}

	k, err := ParseJAAS([]byte(kerberosJAAS))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := k.Krb5("Server")
	if err != nil || srv.Principal != "zookeeper/yourzkhostname" || srv.KeyTab != "/path/to/server/keytab" ||
		!srv.UseKeyTab || !srv.StoreKey || srv.UseTicketCache {
		t.Errorf("server krb5 %+v, %v", srv, err)
	}
	cli, err := k.Krb5("Client")
	if err != nil || !cli.UseKeyTab || cli.Principal != "yourzookeeperclient" {
		t.Errorf("client krb5 %+v, %v", cli, err)
	}
	if k.Sections["Client"][0].Flag != "REQUIRED" || k.Sections["Server"][1].Flag != "OPTIONAL" {
		t.Errorf("flags %+v", k.Sections)
	}
	// The client port's server takes user_ options from every module; the quorum only
	// from DigestLoginModule entries.
	want := map[string]string{"super": "adminsecret", "bob": `bob's "secret"`}
	if u, err := k.ServerUsers("Server"); err != nil || !maps.Equal(u, want) {
		t.Errorf("server users %v, %v", u, err)
	}
	if !k.HasModule("Server", DigestLoginModule) || k.HasModule("Client", DigestLoginModule) {
		t.Error("HasModule")
	}
}

// jaasCases are inputs for TestParseJAASErrors and the comparison with the JDK.
var jaasCases = []struct {
	name, text string
	ok         bool
}{
	{"empty", ``, true},
	{"empty section", `A { };`, true},
	{"quoted section name", `"A" { m required; };`, true},
	{"escapes", `A { m required k="a\tb\101\n\\\"" j="\q\7z"; };`, true},
	{"single quotes", `A { m required j='x"y'; };`, false},
	{"lone slash comment", "A { m required / not a comment?\n; };", true},
	{"number value", `A { m required k=5; };`, false},
	{"dotted value", `A { m required k=a.b-c; };`, true},
	{"unquoted path", `A { m required k=/etc/x; };`, false},
	{"no flag", `A { m; };`, false},
	{"bad flag", `A { m mandatory; };`, false},
	{"no semicolon after module", `A { m required };`, false},
	{"no semicolon after section", `A { m required; }`, false},
	{"no value", `A { m required k=; };`, false},
	{"no equals", `A { m required k "v"; };`, false},
	{"duplicate section", `A { }; A { };`, false},
	{"duplicate option", `A { m required k="1" k="2"; };`, true},
	{"unterminated comment", `A { /* m required; };`, false},
	{"unterminated string", "A { m required k=\"abc\n; };", true},
	{"brace in name", `{ };`, false},
	{"hash", `# comment` + "\n" + `A { };`, false},
	{"stray equals", `A = { };`, false},
	{"truncated", `A { m required k="v"`, false},
}

func TestParseJAASErrors(t *testing.T) {
	for _, tc := range jaasCases {
		_, err := ParseJAAS([]byte(tc.text))
		if (err == nil) != tc.ok {
			t.Errorf("%s: %q: err %v, want ok %v", tc.name, tc.text, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrJAAS) {
			t.Errorf("%s: %v is not ErrJAAS", tc.name, err)
		}
	}
	if _, err := ParseJAAS(make([]byte, MaxJAASSize+1)); err == nil {
		t.Error("oversized file parsed")
	}
}

// TestParseJAASMatchesJava parses each case, and the examples, with the JDK's own
// ConfigFile and compares sections, modules and options.
func TestParseJAASMatchesJava(t *testing.T) {
	dir := t.TempDir()
	type input struct{ name, text string }
	inputs := []input{{"zookeeper test file", zkTestJAAS}, {"kerberos", kerberosJAAS}}
	for _, tc := range jaasCases {
		inputs = append(inputs, input{tc.name, tc.text})
	}
	args := []string{"jaas"}
	for i, in := range inputs {
		// SaslPeer learns which sections to look up from the first line.
		names := []string{"A", "Server", "Client", "QuorumServer", "QuorumLearner"}
		path := filepath.Join(dir, fmt.Sprintf("%d.conf", i))
		if err := os.WriteFile(path, []byte("// "+strings.Join(names, " ")+"\n"+in.text), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, path)
	}
	p := startJavaPeer(t, args...)
	for i, in := range inputs {
		if l := p.read(); l != fmt.Sprintf("FILE %d", i+1) {
			t.Fatalf("java: %s", l)
		}
		var javaLines []string
		javaErr := ""
		for {
			l := p.read()
			if strings.HasPrefix(l, "ERR ") {
				javaErr = l
				continue
			}
			if strings.HasPrefix(l, "FILE ") || l == "END" {
				p.unread(l)
				break
			}
			javaLines = append(javaLines, l)
		}
		j, err := ParseJAAS([]byte("// x\n" + in.text))
		if (err == nil) != (javaErr == "") {
			t.Errorf("%s: java %q, zkd %v", in.name, javaErr, err)
			continue
		}
		if err != nil {
			continue
		}
		var ours []string
		for _, name := range []string{"A", "Server", "Client", "QuorumServer", "QuorumLearner"} {
			mods := j.Sections[name]
			if len(mods) == 0 {
				continue // Java returns no entries for an empty section
			}
			ours = append(ours, "SECTION "+name)
			for _, m := range mods {
				ours = append(ours, "MODULE "+m.Class+" "+m.Flag)
				for _, k := range slices.Sorted(maps.Keys(m.Options)) {
					ours = append(ours, "OPTION "+k+"="+hexTok([]byte(m.Options[k])))
				}
			}
		}
		if !slices.Equal(ours, javaLines) {
			t.Errorf("%s:\njava: %q\nzkd:  %q", in.name, javaLines, ours)
		}
	}
}
