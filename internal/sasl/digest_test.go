package sasl

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
)

var testUsers = map[string]string{"bob": "secret", "super": "adminsecret", "jürgen": "pässwörd", "名前": "秘密"}

// exchange runs a client against a server to the end and returns the server's
// authorization id.
func exchange(t *testing.T, c Client, s Server) (string, error) {
	t.Helper()
	tok, err := c.Step(nil)
	if err != nil {
		t.Fatalf("client opening: %v", err)
	}
	for i := 0; i < 4; i++ {
		chal, err := s.Step(tok)
		if err != nil {
			return "", err
		}
		if tok, err = c.Step(chal); err != nil {
			return "", err
		}
		if s.Complete() && c.Complete() {
			if tok != nil {
				t.Fatalf("client sent %q after completing", tok)
			}
			return s.AuthorizationID(), nil
		}
	}
	t.Fatal("exchange did not complete in 4 rounds")
	return "", nil
}

func TestDigestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		user, pass, service, host string
		cfg                       ServerConfig
	}{
		{"bob", "secret", ClientService, ClientHost, ServerConfig{Users: testUsers}},
		{"jürgen", "pässwörd", ClientService, ClientHost, ServerConfig{Users: testUsers}},
		{"名前", "秘密", ClientService, ClientHost, ServerConfig{Users: testUsers}},
		{"bob", "secret", QuorumService, QuorumHost, ServerConfig{Service: QuorumService, Host: QuorumHost,
			Users: testUsers, Authorize: QuorumDigestAuthorize}},
	} {
		s, err := NewServer(DigestMD5, tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewClient(DigestMD5, tc.user, tc.pass, tc.service, tc.host)
		if err != nil {
			t.Fatal(err)
		}
		id, err := exchange(t, c, s)
		if err != nil {
			t.Fatalf("%s@%s: %v", tc.user, tc.host, err)
		}
		if id != tc.user {
			t.Errorf("authorization id %q, want %q", id, tc.user)
		}
		if _, err := s.Step(nil); err == nil {
			t.Error("server took a token after completing")
		}
	}
}

func TestDigestFailures(t *testing.T) {
	for _, tc := range []struct {
		name, user, pass, service, host string
		want                            string
	}{
		{"wrong password", "bob", "guess", ClientService, ClientHost, "mismatched response"},
		{"unknown user", "mallory", "secret", ClientService, ClientHost, "cannot acquire password"},
		{"other service", "bob", "secret", QuorumService, ClientHost, "mismatched digest-uri"},
		{"other host", "bob", "secret", ClientService, "elsewhere", "mismatched digest-uri"},
	} {
		s, _ := NewServer(DigestMD5, ServerConfig{Users: testUsers})
		c, _ := NewClient(DigestMD5, tc.user, tc.pass, tc.service, tc.host)
		_, err := exchange(t, c, s)
		if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want ErrAuth saying %q", tc.name, err, tc.want)
		}
		if s.Complete() || s.AuthorizationID() != "" {
			t.Errorf("%s: server complete after failing", tc.name)
		}
		// A failed exchange stays failed: the nonce is spent.
		if _, err := s.Step(nil); err == nil {
			t.Errorf("%s: server took a token after failing", tc.name)
		}
	}
}

// response runs a client up to its digest-response against s and returns it.
func response(t *testing.T, s Server, user, pass string) []byte {
	t.Helper()
	c, _ := NewClient(DigestMD5, user, pass, ClientService, ClientHost)
	open, _ := c.Step(nil)
	chal, err := s.Step(open)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Step(chal)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestDigestServerRejects(t *testing.T) {
	edit := func(from, to string) func([]byte) []byte {
		return func(b []byte) []byte { return []byte(strings.Replace(string(b), from, to, 1)) }
	}
	for _, tc := range []struct {
		name   string
		mutate func([]byte) []byte
		want   string
	}{
		{"flipped response digit", func(b []byte) []byte {
			i := bytes.Index(b, []byte("response=")) + len("response=")
			b[i] ^= 1
			return b
		}, "mismatched response"},
		{"other authzid", edit(`authzid="bob"`, `authzid="super"`), "mismatched response"},
		{"other cnonce", edit(`cnonce="`, `cnonce="x`), "mismatched response"},
		{"other nonce", edit(`nonce="`, `nonce="x`), "mismatched nonce"},
		{"no nonce", edit(`nonce="`, `xnonce="`), "missing nonce"},
		{"no cnonce", edit(`cnonce="`, `xcnonce="`), "missing cnonce"},
		{"no username", edit(`username="`, `xusername="`), "missing username"},
		{"no response", edit(`response=`, `xresponse=`), "missing response"},
		{"no digest-uri", edit(`digest-uri=`, `xdigest-uri=`), "mismatched digest-uri"},
		{"other realm", edit(`realm="zk-sasl-md5"`, `realm="other"`), "nonexistent realm"},
		{"nc 2", edit(`nc=00000001`, `nc=00000002`), "nonce count"},
		{"qop auth-int", edit(`qop=auth`, `qop=auth-int`), "does not support qop"},
		{"qop auth-conf", edit(`qop=auth`, `qop=auth-conf,cipher=rc4`), "does not support qop"},
		{"qop junk", edit(`qop=auth`, `qop=junk`), "invalid qop"},
		{"charset latin1", edit(`charset=utf-8`, `charset=iso-8859-1`), "incompatible charset"},
		{"duplicate username", func(b []byte) []byte { return append(b, `,username="bob"`...) }, "more than one"},
		{"unclosed quote", func(b []byte) []byte { return append(b, `,x="abc`...) }, "unmatched quote"},
		{"too long", func(b []byte) []byte { return append(b, bytes.Repeat([]byte(","), MaxDigestToken)...) }, "at most"},
		{"too many directives", func(b []byte) []byte {
			for i := range maxDirectives {
				b = fmt.Appendf(b, ",k%d=v", i)
			}
			return b
		}, "more than 64 directives"},
	} {
		s, _ := NewServer(DigestMD5, ServerConfig{Users: testUsers})
		resp := tc.mutate(response(t, s, "bob", "secret"))
		_, err := s.Step(resp)
		if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want ErrAuth saying %q\nresponse %s", tc.name, err, tc.want, resp)
		}
	}
}

func TestDigestServerReplay(t *testing.T) {
	// A response recorded from one exchange is useless against another: each server has
	// its own nonce, and spends it on the first response.
	s1, _ := NewServer(DigestMD5, ServerConfig{Users: testUsers})
	resp := response(t, s1, "bob", "secret")
	if _, err := s1.Step(resp); err != nil {
		t.Fatal(err)
	}
	s2, _ := NewServer(DigestMD5, ServerConfig{Users: testUsers})
	if _, err := s2.Step(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Step(resp); err == nil || !strings.Contains(err.Error(), "mismatched nonce") {
		t.Errorf("replayed response to another server: %v, want mismatched nonce", err)
	}
	// Nor can the same server be asked twice.
	s3, _ := NewServer(DigestMD5, ServerConfig{Users: testUsers})
	good := response(t, s3, "bob", "secret")
	bad := bytes.Replace(good, []byte("response="), []byte("response=0"), 1)
	if _, err := s3.Step(bad); err == nil {
		t.Fatal("tampered response accepted")
	}
	if _, err := s3.Step(good); err == nil {
		t.Error("second response to a spent nonce accepted")
	}
}

func TestDigestTruncated(t *testing.T) {
	// Every strict prefix of a good response fails cleanly (most lose a directive or
	// change a value; none may panic).
	probe, _ := NewServer(DigestMD5, ServerConfig{Users: testUsers})
	full := response(t, probe, "bob", "secret")
	for n := 0; n < len(full); n++ {
		s, _ := NewServer(DigestMD5, ServerConfig{Users: testUsers, Rand: bytes.NewReader(nonceBytes(t, probe))})
		if _, err := s.Step(nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Step(full[:n]); err == nil {
			t.Errorf("prefix %q accepted", full[:n])
		}
	}
	// And the whole of it succeeds, so the loop above tested truncation.
	s, _ := NewServer(DigestMD5, ServerConfig{Users: testUsers, Rand: bytes.NewReader(nonceBytes(t, probe))})
	s.Step(nil)
	if _, err := s.Step(full); err != nil {
		t.Fatalf("full response: %v", err)
	}
	// A client given a truncated challenge or rspauth fails too.
	s2, _ := NewServer(DigestMD5, ServerConfig{Users: testUsers})
	chal, _ := s2.Step(nil)
	for n := 0; n < len(chal); n++ {
		c, _ := NewClient(DigestMD5, "bob", "secret", ClientService, ClientHost)
		c.Step(nil)
		if resp, err := c.Step(chal[:n]); err == nil {
			// Cutting the nonce short still gives a challenge, but not this server's.
			if _, _, err := s2.(*digestServer).validate(resp); err == nil {
				t.Errorf("challenge prefix %q led to an accepted response", chal[:n])
			}
		}
	}
}

// nonceBytes recovers the random bytes behind a server's nonce, to make another server
// issue the same one.
func nonceBytes(t *testing.T, s Server) []byte {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(string(s.(*digestServer).nonce))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestDigestClientRejectsBadRspauth(t *testing.T) {
	s, _ := NewServer(DigestMD5, ServerConfig{Users: map[string]string{"bob": "secret"}})
	c, _ := NewClient(DigestMD5, "bob", "secret", ClientService, ClientHost)
	open, _ := c.Step(nil)
	chal, _ := s.Step(open)
	resp, _ := c.Step(chal)
	final, err := s.Step(resp)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(final)
	bad[len(bad)-1] ^= 1
	if _, err := c.Step(bad); err == nil || c.Complete() {
		t.Errorf("client accepted a wrong rspauth: %v", err)
	}
	for _, chal := range []string{
		`realm="r",nonce="n",charset=utf-8`,                      // no algorithm
		`realm="r",nonce="n",algorithm=md5`,                      // not md5-sess
		`realm="r",algorithm=md5-sess`,                           // no nonce
		`realm="r",nonce="n",qop="auth-conf",algorithm=md5-sess`, // no auth
		`realm="r",nonce="n",charset=latin1,algorithm=md5-sess`,  // charset
		`realm="r",nonce="n",nonce="m",algorithm=md5-sess`,       // two nonces
		`realm="r",nonce="n,algorithm=md5-sess`,                  // unclosed
	} {
		c, _ := NewClient(DigestMD5, "bob", "secret", ClientService, ClientHost)
		c.Step(nil)
		if _, err := c.Step([]byte(chal)); err == nil {
			t.Errorf("client accepted challenge %s", chal)
		}
	}
}

// TestDigestJavaTranscript replays an exchange recorded between the JDK 17 client and
// server (testdata/SaslPeer.java): same nonce, same client response, same rspauth.
func TestDigestJavaTranscript(t *testing.T) {
	const (
		nonce    = "bx31Vp//G8a41HvYfoXuG0sgwkdn8MLh9K1JSkqN"
		wantChal = `realm="zk-sasl-md5",nonce="` + nonce + `",charset=utf-8,algorithm=md5-sess`
		resp     = `charset=utf-8,username="bob",realm="zk-sasl-md5",nonce="` + nonce +
			`",nc=00000001,cnonce="c7V4sIrvosELScLvbCq1LMjTzHOY62f3Iq5lWS9K",digest-uri="zookeeper/zk-sasl-md5",` +
			`maxbuf=65536,response=1c5fda2815767af255662b7236cd0133,qop=auth,authzid="bob"`
		wantFinal = "rspauth=9cfccd233034c993c91895f6881c3599"
	)
	raw, _ := base64.StdEncoding.DecodeString(nonce)
	s, _ := NewServer(DigestMD5, ServerConfig{Users: map[string]string{"bob": "secret"}, Rand: bytes.NewReader(raw)})
	chal, err := s.Step(nil)
	if err != nil || string(chal) != wantChal {
		t.Fatalf("challenge %q, %v; want %q", chal, err, wantChal)
	}
	final, err := s.Step([]byte(resp))
	if err != nil || string(final) != wantFinal {
		t.Fatalf("final %q, %v; want %q", final, err, wantFinal)
	}
	if !s.Complete() || s.AuthorizationID() != "bob" {
		t.Errorf("complete %v, id %q", s.Complete(), s.AuthorizationID())
	}
}

// TestDigestRFC2831 checks the digest arithmetic on RFC 2831 section 4's example.
func TestDigestRFC2831(t *testing.T) {
	in := digestInput{user: "chris", realm: "elwood.innosoft.com", pass: "secret", nonce: []byte("OA6MG9tEQGm2hh"),
		cnonce: []byte("OA6MHXh6VqTrRk"), nc: "00000001", qop: "auth", digestURI: "imap/elwood.innosoft.com"}
	if got := string(in.value("AUTHENTICATE")); got != "d388dad90d4bbd760a152321f2143af7" {
		t.Errorf("response %s", got)
	}
	if got := string(in.value("")); got != "ea40f60335c427b5527b84dbabcdfffd" {
		t.Errorf("rspauth %s", got)
	}
	// The RFC's challenge parses, LWS, quoted and unquoted values alike.
	d, err := parseDirectives([]byte(`realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",qop="auth",algorithm=md5-sess,charset=utf-8`), true)
	if err != nil || string(d.vals["nonce"]) != "OA6MG9tEQGm2hh" || len(d.realms) != 1 || string(d.vals["algorithm"]) != "md5-sess" {
		t.Errorf("parse: %+v, %v", d, err)
	}
}

func TestParseDirectives(t *testing.T) {
	d, err := parseDirectives([]byte(" , A = \"x\\\"y\" ,, b=c\t,\r\n D=\"\" , realm=\"1\",realm=2 "), true)
	if err != nil {
		t.Fatal(err)
	}
	if string(d.vals["a"]) != `x"y` || string(d.vals["b"]) != "c" || string(d.vals["d"]) != "" || len(d.realms) != 2 {
		t.Errorf("got %q realms %q", d.vals, d.realms)
	}
	// As the JDK, a trailing key without '=' is a directive with an empty value.
	if d, err := parseDirectives([]byte(`x=1,a`), false); err != nil || string(d.vals["x"]) != "1" || !hasKey(d, "a") {
		t.Errorf("trailing key: %q, %v", d.vals, err)
	}
	for _, bad := range []string{`=b`, `a b=c`, `a=`, `a="b"c`, `a="b\`, `a=b,a=c`, `realm=x,realm=y`} {
		if _, err := parseDirectives([]byte(bad), false); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestNewUnknownMechanism(t *testing.T) {
	if _, err := NewServer("PLAIN", ServerConfig{}); !errors.Is(err, ErrMechanism) {
		t.Errorf("server: %v", err)
	}
	if _, err := NewClient("GSSAPI", "a", "b", "c", "d"); !errors.Is(err, ErrMechanism) {
		t.Errorf("client: %v", err)
	}
}

func TestQuorumAuthorize(t *testing.T) {
	s, _ := NewServer(DigestMD5, ServerConfig{Service: QuorumService, Host: QuorumHost,
		Users: testUsers, Authorize: QuorumDigestAuthorize})
	c, _ := NewClient(DigestMD5, "bob", "secret", QuorumService, QuorumHost)
	open, _ := c.Step(nil)
	chal, _ := s.Step(open)
	resp, _ := c.Step(chal)
	// A learner authenticated as bob asking to be super: the digest covers the authzid,
	// so recompute it as a client that knows bob's password would.
	resp = bytes.Replace(resp, []byte(`authzid="bob"`), []byte(`authzid="super"`), 1)
	d, _ := parseDirectives(resp, false)
	in := digestInput{user: "bob", realm: QuorumHost, pass: "secret", utf8: true, nonce: d.vals["nonce"],
		cnonce: d.vals["cnonce"], nc: nonceCount, qop: "auth", digestURI: QuorumService + "/" + QuorumHost, authzid: []byte("super")}
	old := d.vals["response"]
	resp = bytes.Replace(resp, old, in.value("AUTHENTICATE"), 1)
	if _, err := s.Step(resp); err == nil || !strings.Contains(err.Error(), "not authorized") {
		t.Errorf("quorum learner acting as another: %v", err)
	}
}

func hasKey(d directives, k string) bool { _, ok := d.vals[k]; return ok }
