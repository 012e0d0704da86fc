package sasl

import (
	"bytes"
	"testing"
)

// fuzzServer is a server past its challenge, with the nonce FuzzDigestServer's seed
// response was computed for.
func fuzzServer(t *testing.T) Server {
	raw := bytes.Repeat([]byte{7}, rawNonceSize)
	s, _ := NewServer(DigestMD5, ServerConfig{Users: testUsers, Rand: bytes.NewReader(raw)})
	if _, err := s.Step(nil); err != nil {
		t.Fatal(err)
	}
	return s
}

func FuzzDigestServer(f *testing.F) {
	raw := bytes.Repeat([]byte{7}, rawNonceSize)
	s, _ := NewServer(DigestMD5, ServerConfig{Users: testUsers, Rand: bytes.NewReader(raw)})
	c, _ := NewClient(DigestMD5, "bob", "secret", ClientService, ClientHost)
	open, _ := c.Step(nil)
	chal, _ := s.Step(open)
	resp, _ := c.Step(chal)
	f.Add(resp)
	f.Add([]byte(`username="bob",nonce="x",qop=auth-int`))
	f.Add([]byte(`a="\`))
	f.Fuzz(func(t *testing.T, resp []byte) {
		s := fuzzServer(t)
		out, err := s.Step(resp)
		if err == nil {
			// Only a response that carries the right digest for a known user succeeds.
			if !s.Complete() || !bytes.HasPrefix(out, []byte("rspauth=")) {
				t.Fatalf("accepted without completing: %q", out)
			}
			if _, ok := testUsers[s.AuthorizationID()]; !ok {
				t.Fatalf("authorised as %q", s.AuthorizationID())
			}
		} else if s.Complete() {
			t.Fatal("complete after an error")
		}
	})
}

func FuzzDigestClient(f *testing.F) {
	s, _ := NewServer(DigestMD5, ServerConfig{Users: testUsers})
	chal, _ := s.Step(nil)
	f.Add(chal, []byte("rspauth=0123"))
	f.Add([]byte(`realm="a",realm="b",nonce="n",qop="auth,auth-int",algorithm=md5-sess`), []byte(""))
	f.Fuzz(func(t *testing.T, chal, final []byte) {
		c, _ := NewClient(DigestMD5, "bob", "secret", ClientService, ClientHost)
		c.Step(nil)
		resp, err := c.Step(chal)
		if err != nil {
			return
		}
		if len(resp) == 0 {
			t.Fatal("empty response without an error")
		}
		// Whatever it answered parses back.
		if _, err := parseDirectives(resp, false); err != nil && len(resp) <= MaxDigestToken {
			t.Fatalf("own response %q does not parse: %v", resp, err)
		}
		if _, err := c.Step(final); err == nil && !c.Complete() {
			t.Fatal("no error and not complete")
		}
	})
}

func FuzzParseDirectives(f *testing.F) {
	f.Add([]byte(`realm="zk-sasl-md5",nonce="abc",charset=utf-8,algorithm=md5-sess`))
	f.Add([]byte(` , a = "x\"y" ,, b=c`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := parseDirectives(b, true)
		if err != nil {
			return
		}
		if len(d.vals)+len(d.realms) > maxDirectives {
			t.Fatalf("%d directives", len(d.vals)+len(d.realms))
		}
		// What writeQuoted writes, parseDirectives reads back.
		var out bytes.Buffer
		for k, v := range d.vals {
			if k == "" || bytes.ContainsAny([]byte(k), " \t\r\n,=\"") {
				continue
			}
			out.Reset()
			writeQuoted(&out, k, v)
			if out.Len() > MaxDigestToken {
				continue
			}
			back, err := parseDirectives(out.Bytes(), false)
			if err != nil || !bytes.Equal(back.vals[k], v) {
				t.Fatalf("%q: %q read back as %q, %v", k, v, back.vals[k], err)
			}
		}
	})
}

func FuzzParseJAAS(f *testing.F) {
	f.Add([]byte(zkTestJAAS))
	f.Add([]byte(kerberosJAAS))
	for _, tc := range jaasCases {
		f.Add([]byte(tc.text))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		j, err := ParseJAAS(b)
		if err != nil {
			return
		}
		if len(j.Order) != len(j.Sections) {
			t.Fatalf("order %v, sections %d", j.Order, len(j.Sections))
		}
		for _, name := range j.Order {
			for _, m := range j.Sections[name] {
				switch m.Flag {
				case "REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL":
				default:
					t.Fatalf("flag %q", m.Flag)
				}
			}
			j.ServerUsers(name)
			j.QuorumUsers(name)
			j.DigestClient(name)
			j.Krb5(name)
		}
	})
}

func FuzzKerberosName(f *testing.F) {
	f.Add("zookeeper/host@EXAMPLE.COM", `RULE:[2:$1@$0](.*@EXAMPLE\.COM)s/@.*// DEFAULT`)
	f.Add("bob@", "DEFAULT")
	f.Add("a/b", `RULE:[1:$1$0]s/(.)/$1$1/g`)
	f.Fuzz(func(t *testing.T, name, rules string) {
		if len(rules) > 512 {
			return // a rule's regular expressions compile in time linear in their size
		}
		k, err := ParseKerberosName(name)
		if err != nil {
			return
		}
		if k.String() != name {
			t.Fatalf("%q came back as %q", name, k.String())
		}
		parsed, err := ParseRules(rules)
		if err != nil {
			return
		}
		n := KerberosNames{Rules: parsed, DefaultRealm: "EXAMPLE.COM"}
		if id, err := n.AuthorizationID(name); err == nil {
			short, _ := n.ShortName(k)
			if (k.HasHost || k.HasRealm) && bytes.ContainsAny([]byte(short), "/@") {
				t.Fatalf("non-simple short name %q", short)
			}
			_ = id
		}
	})
}
