package auth

import (
	"testing"

	"github.com/zkd-io/zkd/jute"
)

func TestValidKerberosName(t *testing.T) {
	for id, want := range map[string]bool{
		"bob": true, "bob@EXAMPLE.COM": true, "zookeeper/host.example.com@EXAMPLE.COM": true,
		"svc/host": true, "": true, "a@b@c": false, "a/b/c@R": false, "@": true,
	} {
		if got := ValidKerberosName(id); got != want {
			t.Errorf("ValidKerberosName(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestValidX500Name(t *testing.T) {
	for id, want := range map[string]bool{
		"CN=client,O=zkd": true, "CN=a\\,b,OU=x+O=y": true, `CN="a,b"`: true, "": true,
		"2.5.4.3=x": true, "OID.2.5.4.3=x": true, "CN": false, "=x": false, "CN=a,,O=b": false,
	} {
		if got := ValidX500Name(id); got != want {
			t.Errorf("ValidX500Name(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestProvidersMatching(t *testing.T) {
	acl := []jute.ACL{
		{Perms: jute.PermRead, ID: jute.ID{Scheme: SchemeSASL, ID: "bob"}},
		{Perms: jute.PermRead, ID: jute.ID{Scheme: SchemeX509, ID: "CN=app"}},
	}
	p := Providers{SASL: true, X509: true, X509SuperUser: "CN=admin"}
	for _, tc := range []struct {
		id   jute.ID
		want bool
	}{
		{jute.ID{Scheme: SchemeSASL, ID: "bob"}, true},
		{jute.ID{Scheme: SchemeSASL, ID: "alice"}, false},
		{jute.ID{Scheme: SchemeSASL, ID: "super"}, true}, // SASLAuthenticationProvider.matches
		{jute.ID{Scheme: SchemeX509, ID: "CN=app"}, true},
		{jute.ID{Scheme: SchemeX509, ID: "CN=admin"}, true},
		{jute.ID{Scheme: SchemeX509, ID: "CN=other"}, false},
	} {
		if got := p.Check(acl, jute.PermRead, []jute.ID{tc.id}); got != tc.want {
			t.Errorf("Check with %v = %v, want %v", tc.id, got, tc.want)
		}
	}
	if (Providers{}).Check(acl[1:], jute.PermRead, []jute.ID{{Scheme: SchemeX509, ID: "CN=admin"}}) {
		t.Error("x509 super user matched without X509SuperUser configured")
	}
	if _, err := (Providers{}).FixupACL(acl, nil); err == nil {
		t.Error("sasl/x509 entries accepted without their providers")
	}
	if _, err := p.FixupACL(acl, nil); err != nil {
		t.Errorf("sasl/x509 entries refused with their providers: %v", err)
	}
}
