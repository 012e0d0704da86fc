package gssapi

import (
	"strings"
	"testing"
	"time"
)

func newTestServer(t testing.TB, principal string) (*Server, func() *Server) {
	t.Helper()
	kt := memKeytab(t, testService, "service-password", 1)
	mk := func() *Server {
		s, err := NewServer(ServerConfig{Keytab: kt, Principal: principal})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	return mk(), mk
}

// TestForgedExchange runs the server through both flows with tickets made from its keytab.
func TestForgedExchange(t *testing.T) {
	kt := memKeytab(t, testService, "service-password", 1)
	for _, mutual := range []bool{false, true} {
		s, err := NewServer(ServerConfig{Keytab: kt, Principal: testService + "@" + testRealm})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		f := forgeAPReq(t, kt, 1, now.Add(-time.Minute), now.Add(time.Hour), mutual)
		chal, err := s.Step(f.token)
		if err != nil {
			t.Fatalf("mutual=%v: AP-REQ: %v", mutual, err)
		}
		if mutual {
			if id, _, err := parseToken(chal); err != nil || id != tokAPRep {
				t.Fatalf("mutual: first challenge is not an AP-REP: %x %v", id, err)
			}
			if chal, err = s.Step(nil); err != nil {
				t.Fatalf("mutual: empty response: %v", err)
			}
		}
		key := wrapKey{key: f.auth.SubKey}
		offer, _, err := unwrap(chal, key, true)
		if err != nil {
			t.Fatalf("mutual=%v: offer: %v", mutual, err)
		}
		if string(offer) != "\x01\x01\x00\x00" {
			t.Fatalf("offer %x, want 01010000 (no layer, 65536)", offer)
		}
		if s.Complete() || s.AuthorizationID() != "" {
			t.Fatal("complete before the last message")
		}
		if chal, err = s.Step(f.finalToken(t, layerNone, "")); err != nil || chal != nil {
			t.Fatalf("final: %x %v", chal, err)
		}
		if !s.Complete() || s.AuthorizationID() != "user@EXAMPLE.COM" {
			t.Fatalf("complete %v id %q", s.Complete(), s.AuthorizationID())
		}
		if _, err := s.Step(nil); err == nil {
			t.Fatal("a step after completion succeeded")
		}
	}
}

// TestForgedRefusals checks tickets and answers the server must refuse.
func TestForgedRefusals(t *testing.T) {
	kt := memKeytab(t, testService, "service-password", 1)
	other := memKeytab(t, testService, "another-password", 1)
	newer := memKeytab(t, testService, "service-password", 2)
	now := time.Now()
	valid := func() forged { return forgeAPReq(t, kt, 1, now.Add(-time.Minute), now.Add(time.Hour), false) }
	cases := []struct {
		name  string
		steps func(s *Server) error
		want  string
	}{
		{"expired ticket", func(s *Server) error {
			_, err := s.Step(forgeAPReq(t, kt, 1, now.Add(-2*time.Hour), now.Add(-time.Hour), false).token)
			return err
		}, "expired"},
		{"ticket not yet valid", func(s *Server) error {
			_, err := s.Step(forgeAPReq(t, kt, 1, now.Add(time.Hour), now.Add(2*time.Hour), false).token)
			return err
		}, "not yet valid"},
		{"ticket from another key", func(s *Server) error {
			_, err := s.Step(forgeAPReq(t, other, 1, now.Add(-time.Minute), now.Add(time.Hour), false).token)
			return err
		}, "decrypt"},
		{"key version unknown", func(s *Server) error {
			_, err := s.Step(forgeAPReq(t, newer, 2, now.Add(-time.Minute), now.Add(time.Hour), false).token)
			return err
		}, "AP-REQ refused"},
		{"replayed authenticator", func(s *Server) error {
			f := valid()
			s2, _ := NewServer(ServerConfig{Keytab: kt})
			if _, err := s2.Step(f.token); err != nil {
				t.Fatalf("first use: %v", err)
			}
			_, err := s.Step(f.token)
			return err
		}, "replay"},
		{"security layer integrity", func(s *Server) error {
			f := valid()
			if _, err := s.Step(f.token); err != nil {
				t.Fatal(err)
			}
			_, err := s.Step(f.finalToken(t, layerIntegrity, ""))
			return err
		}, "security layer"},
		{"other authzid", func(s *Server) error {
			f := valid()
			if _, err := s.Step(f.token); err != nil {
				t.Fatal(err)
			}
			_, err := s.Step(f.finalToken(t, layerNone, "super@EXAMPLE.COM"))
			return err
		}, "may not act as"},
		{"data after no AP-REP", func(s *Server) error {
			f := forgeAPReq(t, kt, 1, now.Add(-time.Minute), now.Add(time.Hour), true)
			if _, err := s.Step(f.token); err != nil {
				t.Fatal(err)
			}
			_, err := s.Step([]byte{0})
			return err
		}, "empty"},
		{"final token from the acceptor's direction", func(s *Server) error {
			f := valid()
			if _, err := s.Step(f.token); err != nil {
				t.Fatal(err)
			}
			b, _ := wrap(layerMessage{layers: layerNone}.marshal(), wrapKey{key: f.auth.SubKey}, true, 0)
			_, err := s.Step(b)
			return err
		}, "sent-by-acceptor"},
		{"final token with the session key, not the subkey", func(s *Server) error {
			f := valid()
			if _, err := s.Step(f.token); err != nil {
				t.Fatal(err)
			}
			b, _ := wrap(layerMessage{layers: layerNone}.marshal(), wrapKey{key: f.session}, false, 0)
			_, err := s.Step(b)
			return err
		}, "checksum"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := NewServer(ServerConfig{Keytab: kt, Principal: testService + "@" + testRealm})
			if err != nil {
				t.Fatal(err)
			}
			err = c.steps(s)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if s.Complete() || s.AuthorizationID() != "" {
				t.Fatal("server completed")
			}
			if _, err := s.Step(nil); err == nil {
				t.Fatal("a failed exchange accepted another step")
			}
		})
	}
}

// TestWrongPrincipal: a ticket for another service is refused even when the keytab could
// decrypt it.
func TestWrongPrincipal(t *testing.T) {
	s, _ := newTestServer(t, "zookeeper/otherhost@"+testRealm)
	kt := memKeytab(t, testService, "service-password", 1)
	now := time.Now()
	_, err := s.Step(forgeAPReq(t, kt, 1, now.Add(-time.Minute), now.Add(time.Hour), false).token)
	if err == nil || !strings.Contains(err.Error(), "this server is") {
		t.Fatalf("error %v", err)
	}
}

// TestTruncated: every proper prefix of each message is refused without a panic.
func TestTruncated(t *testing.T) {
	kt := memKeytab(t, testService, "service-password", 1)
	now := time.Now()
	f := forgeAPReq(t, kt, 1, now.Add(-time.Minute), now.Add(time.Hour), false)
	for n := range len(f.token) {
		s, _ := NewServer(ServerConfig{Keytab: kt})
		if _, err := s.Step(f.token[:n]); err == nil {
			t.Fatalf("AP-REQ cut to %d of %d bytes accepted", n, len(f.token))
		}
	}
	final := f.finalToken(t, layerNone, "")
	for n := range len(final) {
		g := forgeAPReq(t, kt, 1, now.Add(-time.Minute), now.Add(time.Hour), false)
		s, _ := NewServer(ServerConfig{Keytab: kt})
		if _, err := s.Step(g.token); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Step(g.finalToken(t, layerNone, "")[:n]); err == nil {
			t.Fatalf("final token cut to %d of %d bytes accepted", n, len(final))
		}
	}
}

// TestGarbledAuthenticator: flipping any bit of the encrypted authenticator's last bytes (its
// integrity checksum) is refused.
func TestGarbledAuthenticator(t *testing.T) {
	kt := memKeytab(t, testService, "service-password", 1)
	now := time.Now()
	for i := 1; i <= 16; i++ {
		f := forgeAPReq(t, kt, 1, now.Add(-time.Minute), now.Add(time.Hour), false)
		tok := append([]byte(nil), f.token...)
		tok[len(tok)-i] ^= 0x10
		s, _ := NewServer(ServerConfig{Keytab: kt})
		if _, err := s.Step(tok); err == nil {
			t.Fatalf("AP-REQ with byte -%d flipped accepted", i)
		}
	}
}

func TestNewServerNeedsKeys(t *testing.T) {
	if _, err := NewServer(ServerConfig{}); err == nil {
		t.Fatal("NewServer without a keytab succeeded")
	}
	kt := memKeytab(t, testService, "p", 1)
	if _, err := NewServer(ServerConfig{Keytab: kt, Principal: "zookeeper/localhost"}); err == nil {
		t.Fatal("NewServer with a principal without realm succeeded")
	}
}
