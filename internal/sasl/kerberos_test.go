package sasl

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/testing/needs"
)

func TestParseKerberosName(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want KerberosName
		bad  bool
	}{
		{in: "bob", want: KerberosName{Service: "bob"}},
		{in: "a/b/c", want: KerberosName{Service: "a/b/c"}},
		{in: "bob@EXAMPLE.COM", want: KerberosName{Service: "bob", Realm: "EXAMPLE.COM", HasRealm: true}},
		{in: "zookeeper/h1.example.com@EXAMPLE.COM", want: KerberosName{Service: "zookeeper", Host: "h1.example.com",
			Realm: "EXAMPLE.COM", HasHost: true, HasRealm: true}},
		{in: "@R", want: KerberosName{Realm: "R", HasRealm: true}},
		{in: "x/@", want: KerberosName{Service: "x", HasHost: true, HasRealm: true}},
		{in: "a@b@c", bad: true},
		{in: "a/b/c@R", bad: true},
	} {
		k, err := ParseKerberosName(tc.in)
		if tc.bad {
			if !errors.Is(err, ErrKerberosName) || ValidID(tc.in) {
				t.Errorf("%q: %+v, %v; want an error", tc.in, k, err)
			}
			continue
		}
		if err != nil || k != tc.want || k.String() != tc.in || !ValidID(tc.in) {
			t.Errorf("%q: %+v (%q), %v; want %+v", tc.in, k, k.String(), err, tc.want)
		}
	}
}

func TestAuthorizationID(t *testing.T) {
	rules, err := ParseRules(`RULE:[1:$1@$0](.*@EXAMPLE\.COM)s/@.*// RULE:[2:$1@$0](.*@EXAMPLE\.COM)s/@.*// DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		names KerberosNames
		in    string
		want  string // "" for an error
	}{
		{KerberosNames{}, "bob", "bob"},
		{KerberosNames{}, "bob@", "bob@"},        // DEFAULT, default realm ""
		{KerberosNames{}, "bob@EXAMPLE.COM", ""}, // no rule applies
		{KerberosNames{DefaultRealm: "EXAMPLE.COM"}, "bob@EXAMPLE.COM", "bob@EXAMPLE.COM"},
		{KerberosNames{DefaultRealm: "EXAMPLE.COM", RemoveRealm: true}, "bob@EXAMPLE.COM", "bob"},
		{KerberosNames{DefaultRealm: "EXAMPLE.COM"}, "zk/h1@EXAMPLE.COM", "zk/h1@EXAMPLE.COM"},
		{KerberosNames{DefaultRealm: "EXAMPLE.COM", RemoveHost: true}, "zk/h1@EXAMPLE.COM", "zk@EXAMPLE.COM"},
		{KerberosNames{DefaultRealm: "EXAMPLE.COM", RemoveHost: true, RemoveRealm: true}, "zk/h1@EXAMPLE.COM", "zk"},
		{KerberosNames{Rules: rules}, "zk/h1@EXAMPLE.COM", "zk/h1@EXAMPLE.COM"},
		{KerberosNames{Rules: rules}, "alice@OTHER", ""},
		{KerberosNames{Rules: rules, RemoveRealm: true}, "alice@", "alice"},
		{KerberosNames{}, "a@b@c", ""},
	} {
		got, err := tc.names.AuthorizationID(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%+v %q: %q, want an error", tc.names, tc.in, got)
			}
		} else if err != nil || got != tc.want {
			t.Errorf("%+v %q: %q, %v; want %q", tc.names, tc.in, got, err, tc.want)
		}
	}
}

func TestAuthorize(t *testing.T) {
	n := KerberosNames{}
	// The id comes from the authenticated name, whatever authzid the client asked for.
	if id, err := n.Authorize("bob", "super"); err != nil || id != "bob" {
		t.Errorf("bob as super: %q, %v", id, err)
	}
	// No rule applies: Java keeps the requested id; zkd only when it is the client's own.
	if id, err := n.Authorize("bob@EXAMPLE.COM", "bob@EXAMPLE.COM"); err != nil || id != "bob@EXAMPLE.COM" {
		t.Errorf("no rule, own name: %q, %v", id, err)
	}
	if id, err := n.Authorize("bob@EXAMPLE.COM", "super"); err == nil {
		t.Errorf("no rule, asked for super: got %q", id)
	}
	if _, err := n.Authorize("a@b@c", "a@b@c"); err == nil {
		t.Error("malformed name authorised")
	}
}

func TestParseRules(t *testing.T) {
	rules, err := ParseRules(" RULE:[2:$1;$2](z.*)s/;.*$//g\n DEFAULT RULE:[1:$1] ")
	if err != nil || len(rules) != 3 || rules[0].String() != "RULE:[2:$1;$2](z.*)s/;.*$//g" || rules[1].String() != "DEFAULT" {
		t.Fatalf("%v, %v", rules, err)
	}
	for _, bad := range []string{"DEFAULTS", "RULE:[x:$1]", "RULE:[:$1]", "RULE:[1:$1](", "RULE:[1:$1](a(b)", "junk"} {
		if r, err := ParseRules(bad); err == nil {
			t.Errorf("%q parsed: %v", bad, r)
		}
	}
	if got := javaReplacement(`a$1b$$\$c\\$12`); got != `a${1}b$$$$$$c\${12}` {
		t.Errorf("javaReplacement: %s", got)
	}
}

func TestMatches(t *testing.T) {
	for _, tc := range []struct {
		id, acl, any string
		want         bool
	}{
		{"bob", "bob", "", true},
		{"bob", "alice", "", false},
		{"super", "alice", "", true},
		{"bob", "anyone", "anyone", true},
		{"bob", "alice", "anyone", false},
		{"Bob", "bob", "", false},
	} {
		if got := Matches(tc.id, tc.acl, tc.any); got != tc.want {
			t.Errorf("Matches(%q, %q, %q) = %v", tc.id, tc.acl, tc.any, got)
		}
	}
	if !IsSuperUser("admin", "x", "admin") || IsSuperUser("", "") || IsSuperUser("bob", "admin") {
		t.Error("IsSuperUser")
	}
}

// TestKerberosNamesMatchZooKeeper compares short names with ZooKeeper 3.8's own
// KerberosName (Debian's zookeeper.jar), rules and all.
func TestKerberosNamesMatchZooKeeper(t *testing.T) {
	jar := "/usr/share/java/zookeeper.jar"
	if _, err := os.Stat(jar); err != nil {
		needs.Missing(t, "Apache ZooKeeper 3.8 (zookeeper.jar)", "zookeeper", err.Error())
	}
	names := []string{"bob", "bob@", "bob@EXAMPLE.COM", "bob@ATHENA.MIT.EDU", "zookeeper/h1@EXAMPLE.COM",
		"zookeeper/h1@ATHENA.MIT.EDU", "alice/admin@OTHER", "a/b/c", "@R", "/h@R", "a@b@c", "", "x/@",
		"boot@EXAMPLE.COM", "b;o/c@EXAMPLE.COM"}
	ruleSets := []string{
		"DEFAULT",
		`RULE:[1:$1@$0](.*@EXAMPLE\.COM)s/@.*// DEFAULT`,
		`RULE:[2:$1](zookeeper) RULE:[2:$1;$2](.*)s/;/_/g DEFAULT`,
		`RULE:[2:$1@$0]s/@.*//`,
		`RULE:[1:$1]`,
		`RULE:[2:$2/$1]`,
		`RULE:[1:$3]`,
		`RULE:[1:$1](b.*)s/(b)(o)/$2$1/ RULE:[1:$1](b.*)s/o/0/g`,
		`RULE:[1:x$]`,
		`RULE:[1:$1]s/(o)/<$1>/g`,
	}
	args := []string{"kerberos"}
	for _, rules := range ruleSets {
		args = append(args, "R", hex.EncodeToString([]byte(rules)))
		for _, n := range names {
			args = append(args, hexTok([]byte(n)))
		}
	}
	p := startJavaPeerCP(t, jar, args...)
	realmLine := p.read()
	realm, ok := strings.CutPrefix(realmLine, "REALM ")
	if !ok {
		t.Fatalf("java: %s", realmLine)
	}
	for _, rules := range ruleSets {
		if l := p.read(); l != "RULES" {
			t.Fatalf("%s: java: %s", rules, l)
		}
		parsed, err := ParseRules(rules)
		if err != nil {
			t.Fatalf("%s: %v", rules, err)
		}
		kn := KerberosNames{Rules: parsed, DefaultRealm: javaPart(t, realm)}
		for _, n := range names {
			line := p.read()
			k, perr := ParseKerberosName(n)
			var short string
			var serr error
			if perr == nil {
				short, serr = kn.ShortName(k)
			}
			switch f := strings.Fields(line); {
			case len(f) == 4 && f[0] == "OK":
				host, realm := "null", "null"
				if k.HasHost {
					host = k.Host
				}
				if k.HasRealm {
					realm = k.Realm
				}
				if perr != nil || serr != nil || short != javaPart(t, f[1]) || host != javaPart(t, f[2]) || realm != javaPart(t, f[3]) {
					t.Errorf("%s: %q: zookeeper says %s; zkd %q %+v %v %v", rules, n, line, short, k, perr, serr)
				}
			case line == "ERR IllegalArgumentException":
				if perr == nil {
					t.Errorf("%s: %q: zookeeper refuses the name, zkd parsed %+v", rules, n, k)
				}
			case strings.HasPrefix(line, "ERR "):
				if perr != nil || serr == nil {
					t.Errorf("%s: %q: zookeeper says %s; zkd %q, %v, %v", rules, n, line, short, perr, serr)
				}
			default:
				t.Fatalf("java: %s", line)
			}
		}
	}
	if l := p.read(); l != "END" {
		t.Fatalf("java: %s", l)
	}
}

// javaPart decodes SaslPeer's hex, "-" (empty) or "null".
func javaPart(t *testing.T, s string) string {
	t.Helper()
	if s == "null" {
		return "null"
	}
	return string(unhexTok(t, s))
}

func startJavaPeerCP(t *testing.T, classPath string, args ...string) *javaPeer {
	t.Helper()
	abs, err := filepath.Abs(classPath)
	if err != nil {
		t.Fatal(err)
	}
	return startJavaPeer(t, append([]string{"-cp", abs}, args...)...)
}
