package auth

import (
	"errors"
	"slices"
	"testing"

	"github.com/zkd-io/zkd/jute"
)

// Expected values marked "java" were produced by running the Apache ZooKeeper 3.8.0 classes
// (DigestAuthenticationProvider, IPAuthenticationProvider, PrepRequestProcessor.fixupACL)
// on OpenJDK 17.

const userPass = "user:smGaoVKd/cQkjm7b88GyorAUz20=" // golden/01 #5, auth "user:pass"

func TestDigest(t *testing.T) {
	if got := DigestID("user", "pass"); got != userPass {
		t.Fatalf("DigestID(user, pass) = %q, want %q", got, userPass)
	}
	tests := map[string]string{ // java generateDigest
		"user:pass":    userPass,
		"nocolon":      "nocolon:Ra+cHr2ZoHvBjtNArFGNGlVie4g=",
		":":            ":BaefBs8/Z/cm2uaNGKIpD2yaUMk=",
		"a:b:c":        "a:cLzgnoJ6mP5qz3w+mwvPE2vDgu0=",
		"super:secret": "super:lK75jTNcA+U9vtVEw5vB51mj/w4=",
		"":             ":2jmj7l5rSw0yVb/vlWAYkK/YBwk=",
	}
	for in, want := range tests {
		if got := Digest(in); got != want {
			t.Errorf("Digest(%q) = %q, want %q", in, got, want)
		}
	}
	if got := DigestID("a", "b:c"); got != tests["a:b:c"] {
		t.Errorf("DigestID(a, b:c) = %q", got)
	}
}

func TestAuthenticate(t *testing.T) {
	const superDigest = "super:lK75jTNcA+U9vtVEw5vB51mj/w4=" // super:secret
	tests := []struct {
		name   string
		scheme string
		auth   []byte
		super  string
		want   []jute.ID
		fail   bool
	}{
		{"digest", "digest", []byte("user:pass"), "", []jute.ID{{Scheme: "digest", ID: userPass}}, false},
		{"digest with super configured", "digest", []byte("user:pass"), superDigest,
			[]jute.ID{{Scheme: "digest", ID: userPass}}, false},
		{"super", "digest", []byte("super:secret"), superDigest,
			[]jute.ID{Super, {Scheme: "digest", ID: superDigest}}, false},
		{"super not configured", "digest", []byte("super:secret"), "",
			[]jute.ID{{Scheme: "digest", ID: superDigest}}, false},
		{"no colon", "digest", []byte("nocolon"), "",
			[]jute.ID{{Scheme: "digest", ID: "nocolon:Ra+cHr2ZoHvBjtNArFGNGlVie4g="}}, false},
		{"empty", "digest", []byte{}, "", []jute.ID{{Scheme: "digest", ID: ":2jmj7l5rSw0yVb/vlWAYkK/YBwk="}}, false},
		{"null auth", "digest", nil, "", nil, true},
		{"ip", "ip", []byte("whatever"), "", nil, false},
		{"unknown", "foo", []byte("x"), "", nil, true},
		{"case matters", "Digest", []byte("user:pass"), "", nil, true},
		{"world", "world", []byte("anyone"), "", nil, true},
		{"super scheme", "super", []byte(""), "", nil, true},
		{"sasl not via auth", "sasl", []byte("bob"), "", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Authenticate(tc.scheme, tc.auth, tc.super)
			if tc.fail {
				if !errors.Is(err, jute.ErrAuthFailed) {
					t.Fatalf("err = %v, want AUTHFAILED", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("ids = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAuthenticateInvalidUTF8(t *testing.T) {
	// Java decodes the bytes before hashing; invalid bytes become U+FFFD.
	got, err := Authenticate("digest", []byte("u:p\xff"), "")
	if err != nil || len(got) != 1 || got[0].ID != Digest("u:p\uFFFD") {
		t.Fatalf("got %v, %v", got, err)
	}
}

func TestValidDigestID(t *testing.T) {
	tests := map[string]bool{ // java isValid
		"user:h": true, "user:": false, ":h": true, "a:b:": true, "a::": false, "::": false,
		"": false, "nocolon": false, "a:b:c": false, "a:b\nc": true, userPass: true,
	}
	for in, want := range tests {
		if got := ValidDigestID(in); got != want {
			t.Errorf("ValidDigestID(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestValidIPID(t *testing.T) {
	tests := map[string]bool{ // java isValid (3.8.0) except the IPv6 rows
		"10.0.0.1": true, "010.0.0.1": true, "+10.0.0.1": true, "10.0.0.1/8": true,
		"10.0.0.1/33": false, "10.0.0.1/-1": false, "10.0.0.1/+8": true, "10.0.0.1/": false,
		"10.0.0.256": false, "10.0.0": false, "10.0.0.1.": false, "-0.0.0.0": true,
		"10.0.0.1/8/9": false, " 10.0.0.1": false, "10.0.0.1/ 8": false, "1.2.3.4/0": true,
		"": false, "/8": false, "a.b.c.d": false, "99999999999.0.0.1": false,
		// IPv6, accepted since ZOOKEEPER-4240 (3.9.4; 3.8.0 says false): its parseV6addr.
		"::1": true, "fe80::/10": true, "2001:db8::1/128": true, "2001:db8::1/129": false,
		"fe80::1%eth0": false, ":::": false, "::ffff:1.2.3.4": false, "::": true, "::/0": true,
		"1:2:3:4:5:6:7:8": true, "1:2:3:4:5:6:7": false, "1:2:3:4:5:6:7:8:9": false,
		"1:2:3:4:5:6:7::": true, "::2:3:4:5:6:7:8": true, "1:2:3:4:5:6:7:8::": false,
		"1::2::3": false, "1:::2": false, "::::": false, "1:2:": false, ":1::": false,
		"::00001": false, "::0001": true, "::FfFf": true, "::g": false, "::+1": true, "::-1": true,
		"::-": false, "::1/+128": true, "::1/0128": true,
	}
	for in, want := range tests {
		if got := ValidIPID(in); got != want {
			t.Errorf("ValidIPID(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestIPMatches(t *testing.T) {
	tests := []struct {
		acl, client string
		want        bool
	}{
		// java matches (3.8.0)
		{"10.0.0.0/8", "10.1.2.3", true},
		{"10.0.0.0/8", "11.1.2.3", false},
		{"10.1.2.3", "10.1.2.3", true},
		{"10.1.2.3", "10.1.2.4", false},
		{"10.1.2.0/24", "10.1.2.3", true},
		{"10.1.2.0/23", "10.1.3.3", true},
		{"10.1.2.0/23", "10.1.4.3", false},
		{"0.0.0.0/0", "1.2.3.4", true},
		{"010.1.2.3", "10.1.2.3", true},
		{"10.1.2.3/32", "10.1.2.3", true},
		{"10.1.2.3/33", "10.1.2.3", false},
		{"192.168.1.128/25", "192.168.1.129", true},
		{"192.168.1.128/25", "192.168.1.127", false},
		// ours
		{"bad", "10.1.2.3", false},
		{"10.1.2.3", "bad", false},
		{"127.0.0.1", "::ffff:127.0.0.1", true}, // dual-stack listener
		{"::1", "::1", true},
		{"::1", "127.0.0.1", false},
		{"127.0.0.1", "::1", false},
		{"fe80::/10", "fe80::1234%eth0", true},
		{"fe80::/10", "fec0::1", false},
		{"2001:db8::/32", "2001:db8:ffff::1", true},
		{"2001:db8::/33", "2001:db8:8000::1", false},
		{"::/0", "2001:db8::1", true},
		{"::-1", "::ffff", true}, // Integer.parseInt("-1", 16), low 16 bits
		{"0:0:0:0:0:0:0:1", "::1", true},
	}
	for _, tc := range tests {
		if got := IPMatches(tc.acl, tc.client); got != tc.want {
			t.Errorf("IPMatches(%q, %q) = %v, want %v", tc.acl, tc.client, got, tc.want)
		}
	}
}

func acl(perms int32, scheme, id string) jute.ACL {
	return jute.ACL{Perms: perms, ID: jute.ID{Scheme: scheme, ID: id}}
}

func TestFixupACL(t *testing.T) {
	session := []jute.ID{{Scheme: "ip", ID: "127.0.0.1"}, Super, {Scheme: "digest", ID: "u:h"}}
	tests := []struct {
		name string
		in   []jute.ACL
		ids  []jute.ID
		want []jute.ACL // nil: InvalidACL
	}{
		// java fixupACL rows
		{"world anyone", []jute.ACL{acl(31, "world", "anyone")}, session, []jute.ACL{acl(31, "world", "anyone")}},
		{"world other", []jute.ACL{acl(31, "world", "foo")}, session, nil},
		{"auth", []jute.ACL{acl(31, "auth", "")}, session, []jute.ACL{acl(31, "digest", "u:h")}},
		{"auth id ignored", []jute.ACL{acl(31, "auth", "whatever")}, session, []jute.ACL{acl(31, "digest", "u:h")}},
		{"duplicates", []jute.ACL{acl(1, "world", "anyone"), acl(1, "world", "anyone"), acl(2, "world", "anyone")},
			session, []jute.ACL{acl(1, "world", "anyone"), acl(2, "world", "anyone")}},
		{"expansion not deduplicated", []jute.ACL{acl(31, "digest", "u:h"), acl(31, "auth", "")},
			session, []jute.ACL{acl(31, "digest", "u:h"), acl(31, "digest", "u:h")}},
		{"sasl entry", []jute.ACL{acl(31, "sasl", "bob")}, session, nil},
		{"x509 entry", []jute.ACL{acl(31, "x509", "CN=a")}, session, nil},
		{"super entry", []jute.ACL{acl(31, "super", "")}, session, nil},
		{"ip", []jute.ACL{acl(31, "ip", "10.0.0.0/8")}, session, []jute.ACL{acl(31, "ip", "10.0.0.0/8")}},
		{"bad ip", []jute.ACL{acl(31, "ip", "bad")}, session, nil},
		{"perms unchecked", []jute.ACL{acl(999, "world", "anyone")}, session, []jute.ACL{acl(999, "world", "anyone")}},
		{"empty", []jute.ACL{}, session, nil},
		{"nil", nil, session, nil},
		{"auth with only ip", []jute.ACL{acl(31, "auth", "")}, []jute.ID{{Scheme: "ip", ID: "127.0.0.1"}}, nil},
		// ours
		{"auth with only super", []jute.ACL{acl(31, "auth", "")}, []jute.ID{Super}, nil},
		{"auth with no ids", []jute.ACL{acl(31, "auth", "")}, nil, nil},
		{"auth expands every authenticated id in order",
			[]jute.ACL{acl(1, "world", "anyone"), acl(3, "auth", "")},
			[]jute.ID{{Scheme: "digest", ID: "a:1"}, {Scheme: "ip", ID: "1.2.3.4"}, {Scheme: "sasl", ID: "bob"}, {Scheme: "x509", ID: "CN=c"}, {Scheme: "digest", ID: "b:2"}},
			[]jute.ACL{acl(1, "world", "anyone"), acl(3, "digest", "a:1"), acl(3, "sasl", "bob"), acl(3, "x509", "CN=c"), acl(3, "digest", "b:2")}},
		{"digest ok", []jute.ACL{acl(31, "digest", userPass)}, nil, []jute.ACL{acl(31, "digest", userPass)}},
		{"digest malformed", []jute.ACL{acl(31, "digest", "nocolon")}, nil, nil},
		{"one bad entry spoils all", []jute.ACL{acl(31, "world", "anyone"), acl(31, "foo", "bar")}, nil, nil},
		{"unknown scheme", []jute.ACL{acl(31, "foo", "bar")}, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.in)
			got, err := FixupACL(tc.in, tc.ids)
			if !slices.Equal(in, tc.in) {
				t.Fatal("input modified")
			}
			if tc.want == nil {
				if !errors.Is(err, jute.ErrInvalidACL) || got != nil {
					t.Fatalf("got %v, %v; want InvalidACL", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	ipID := jute.ID{Scheme: "ip", ID: "10.1.2.3"}
	digest := jute.ID{Scheme: "digest", ID: userPass}
	tests := []struct {
		name string
		acls []jute.ACL
		perm int32
		ids  []jute.ID
		want bool
	}{
		{"empty acl", nil, jute.PermAdmin, nil, true},
		{"open", jute.OpenACLUnsafe, jute.PermWrite, nil, true},
		{"read only", jute.ReadACLUnsafe, jute.PermWrite, []jute.ID{ipID}, false},
		{"read only read", jute.ReadACLUnsafe, jute.PermRead, nil, true},
		{"super", []jute.ACL{acl(jute.PermRead, "digest", "x:y")}, jute.PermAdmin, []jute.ID{ipID, Super}, true},
		{"digest match", []jute.ACL{acl(jute.PermAll, "digest", userPass)}, jute.PermDelete, []jute.ID{ipID, digest}, true},
		{"digest other user", []jute.ACL{acl(jute.PermAll, "digest", "other:h")}, jute.PermDelete, []jute.ID{digest}, false},
		{"digest masked never matches", []jute.ACL{acl(jute.PermAll, "digest", "user:x")}, jute.PermRead, []jute.ID{digest}, false},
		{"digest lacking bit", []jute.ACL{acl(jute.PermRead, "digest", userPass)}, jute.PermWrite, []jute.ID{digest}, false},
		{"ip prefix", []jute.ACL{acl(jute.PermAll, "ip", "10.0.0.0/8")}, jute.PermRead, []jute.ID{ipID}, true},
		{"ip outside", []jute.ACL{acl(jute.PermAll, "ip", "11.0.0.0/8")}, jute.PermRead, []jute.ID{ipID}, false},
		{"scheme must match", []jute.ACL{acl(jute.PermAll, "ip", "u:h")}, jute.PermRead, []jute.ID{{Scheme: "digest", ID: "u:h"}}, false},
		{"getACL any bit", []jute.ACL{acl(jute.PermAdmin, "digest", userPass)}, jute.PermRead | jute.PermAdmin, []jute.ID{digest}, true},
		{"zero perm", jute.OpenACLUnsafe, 0, nil, false},
		{"second entry", []jute.ACL{acl(jute.PermAll, "digest", "a:b"), acl(jute.PermRead, "world", "anyone")}, jute.PermRead, nil, true},
		{"world not anyone", []jute.ACL{acl(jute.PermAll, "world", "bob")}, jute.PermRead, []jute.ID{{Scheme: "world", ID: "bob"}}, false},
		{"sasl exact", []jute.ACL{acl(jute.PermAll, "sasl", "bob")}, jute.PermRead, []jute.ID{{Scheme: "sasl", ID: "bob"}}, true},
		{"no ids", []jute.ACL{acl(jute.PermAll, "digest", userPass)}, jute.PermRead, nil, false},
	}
	for _, tc := range tests {
		if got := Check(tc.acls, tc.perm, tc.ids); got != tc.want {
			t.Errorf("%s: Check = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestMaskDigests(t *testing.T) {
	in := []jute.ACL{acl(31, "digest", userPass), acl(1, "world", "anyone"), acl(3, "ip", "1.2.3.4"),
		acl(1, "digest", "nocolon"), acl(1, "digest", "u:ab\ncd:ef"), acl(1, "digest", "u:a\r\nb"), acl(1, "digest", "a:b:c")}
	orig := slices.Clone(in)
	got := MaskDigests(in)
	want := []jute.ACL{acl(31, "digest", "user:x"), acl(1, "world", "anyone"), acl(3, "ip", "1.2.3.4"),
		acl(1, "digest", "nocolon"),
		acl(1, "digest", "u:x\ncd:x"), // java replaceAll(":.*", ":x")
		acl(1, "digest", "u:x\r\nb"),  // java
		acl(1, "digest", "a:x")}
	if !slices.Equal(got, want) {
		t.Fatalf("MaskDigests = %q\nwant %q", got, want)
	}
	if !slices.Equal(in, orig) {
		t.Fatal("input modified")
	}
	if MaskDigests(nil) != nil {
		t.Fatal("MaskDigests(nil) != nil")
	}
	// golden/03: getACL without ADMIN shows 'user:x'.
	if got := maskDigest(userPass); got != "user:x" {
		t.Fatalf("maskDigest = %q", got)
	}
	if got := maskDigest("a:b\u2028c:d"); got != "a:x\u2028c:x" {
		t.Fatalf("maskDigest with U+2028 = %q", got)
	}
}

func TestClientInfo(t *testing.T) {
	ids := []jute.ID{{Scheme: "ip", ID: "127.0.0.1"}, Super, {Scheme: "digest", ID: userPass},
		{Scheme: "digest", ID: ":h"}, {Scheme: "sasl", ID: "bob@REALM"}, {Scheme: "x509", ID: "CN=c"}, {Scheme: "foo", ID: "bar"}}
	want := []jute.ClientInfo{{AuthScheme: "ip", User: "127.0.0.1"}, {AuthScheme: "super", User: ""},
		{AuthScheme: "digest", User: "user"}, {AuthScheme: "digest", User: ""},
		{AuthScheme: "sasl", User: "bob@REALM"}, {AuthScheme: "x509", User: "CN=c"}, {AuthScheme: "foo", User: ""}}
	if got := ClientInfo(ids); !slices.Equal(got, want) {
		t.Fatalf("ClientInfo = %v, want %v", got, want)
	}
	if got := ClientInfo(nil); got == nil || len(got) != 0 {
		t.Fatalf("ClientInfo(nil) = %#v, want empty non-nil (an empty vector, not null)", got)
	}
}
