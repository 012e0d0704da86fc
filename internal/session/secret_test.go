package session

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

const (
	secretA = "0123456789abcdef0123456789abcdef"
	secretB = "fedcba9876543210fedcba9876543210"
)

func mustParse(t *testing.T, text string) *Secrets {
	t.Helper()
	s, err := ParseSecrets([]byte(text))
	if err != nil {
		t.Fatalf("ParseSecrets(%q): %v", text, err)
	}
	return s
}

// The derivation is the documented one (doc.go), computed here independently.
func TestSecretPasswordVector(t *testing.T) {
	id := int64(0x100000a4ed70000)
	m := hmac.New(sha256.New, []byte(secretA))
	m.Write([]byte("zkd session password v1"))
	m.Write([]byte{0})
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(id))
	m.Write(b[:])
	want := m.Sum(nil)[:16]
	got := mustParse(t, secretA+"\n").Password(id)
	if string(got[:]) != string(want) {
		t.Fatalf("Password = %x, want %x", got, want)
	}
	if zk := Password(id); got == zk {
		t.Fatal("secret password equals ZooKeeper's")
	}
}

func TestSecretsNilIsZooKeeper(t *testing.T) {
	var s *Secrets
	for _, g := range goldenPasswords {
		if s.Password(g.id) != Password(g.id) {
			t.Fatalf("nil Secrets password for %#x differs from ZooKeeper's", g.id)
		}
		p := Password(g.id)
		if !s.Check(g.id, p[:]) {
			t.Fatalf("nil Secrets refuses ZooKeeper's password for %#x", g.id)
		}
		p[3] ^= 1
		if s.Check(g.id, p[:]) {
			t.Fatal("nil Secrets accepts a wrong password")
		}
	}
	if !s.AcceptsZooKeeper() || s.Len() != 0 {
		t.Fatal("nil Secrets: AcceptsZooKeeper must be true, Len 0")
	}
}

func TestSecretsCheck(t *testing.T) {
	const id = int64(0x200000a4ed70042)
	one := mustParse(t, secretA)
	rot := mustParse(t, "# rotation\n"+secretB+"\n\n  "+secretA+"  \r\n")
	withZK := mustParse(t, secretA+"\nZooKeeper\n")
	zkFirst := mustParse(t, "zookeeper\n"+secretA+"\n")

	pa, pb, pz := one.Password(id), mustParse(t, secretB).Password(id), Password(id)
	for _, tc := range []struct {
		name   string
		s      *Secrets
		passwd [16]byte
		want   bool
	}{
		{"one secret, its password", one, pa, true},
		{"one secret, ZooKeeper's password", one, pz, false},
		{"one secret, another secret's password", one, pb, false},
		{"rotation, new", rot, pb, true},
		{"rotation, old", rot, pa, true},
		{"rotation, ZooKeeper's", rot, pz, false},
		{"keyword second, ZooKeeper's", withZK, pz, true},
		{"keyword second, secret's", withZK, pa, true},
		{"keyword first, ZooKeeper's", zkFirst, pz, true},
		{"keyword first, secret's", zkFirst, pa, true},
	} {
		if got := tc.s.Check(id, tc.passwd[:]); got != tc.want {
			t.Errorf("%s: Check = %v, want %v", tc.name, got, tc.want)
		}
	}
	// Another session's password does not open this one.
	if one.Check(id+1, pa[:]) {
		t.Error("password of one id accepted for another")
	}
	// Short, long and empty passwords never match.
	for _, p := range [][]byte{nil, pa[:15], append(pa[:], 0)} {
		if one.Check(id, p) || (*Secrets)(nil).Check(id, p) {
			t.Errorf("password of length %d accepted", len(p))
		}
	}
	if rot.Password(id) != pb {
		t.Error("rotation: new sessions must use the first secret")
	}
	if zkFirst.Password(id) != pz {
		t.Error("keyword first: new sessions must get ZooKeeper's password")
	}
	if one.AcceptsZooKeeper() || rot.AcceptsZooKeeper() || !withZK.AcceptsZooKeeper() {
		t.Error("AcceptsZooKeeper wrong")
	}
	if rot.Len() != 2 || withZK.Len() != 2 {
		t.Errorf("Len: %d %d, want 2 2", rot.Len(), withZK.Len())
	}
}

func TestParseSecretsErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"empty", "", "no secret"},
		{"comments only", "# a\n\n   \n#b", "no secret"},
		{"short", "# x\nshort-secret\n", "line 2: a secret must be at least 16 bytes"},
		{"duplicate", secretA + "\n" + secretA, "line 2: a secret appears twice"},
		{"keyword twice", "zookeeper\n" + secretA + "\nZOOKEEPER", `line 3: "zookeeper" appears twice`},
		{"too many", manySecrets(maxSecrets + 1), "more than 16 secrets"},
	} {
		_, err := ParseSecrets([]byte(tc.text))
		if err == nil || !errors.Is(err, ErrSecrets) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", tc.name, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "short-secret") || strings.Contains(err.Error(), secretA) {
			t.Errorf("%s: error shows a secret: %v", tc.name, err)
		}
	}
	if s, err := ParseSecrets([]byte(manySecrets(maxSecrets))); err != nil || s.Len() != maxSecrets {
		t.Fatalf("%d secrets: %v", maxSecrets, err)
	}
}

func manySecrets(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(string(rune('a'+i)), MinSecretLen))
		b.WriteByte('\n')
	}
	return b.String()
}

func TestSecretsEqualAndString(t *testing.T) {
	a, a2 := mustParse(t, secretA), mustParse(t, "# same\n"+secretA+"\n")
	ab, ba := mustParse(t, secretA+"\n"+secretB), mustParse(t, secretB+"\n"+secretA)
	var none *Secrets
	if !a.Equal(a2) || a.Equal(ab) || ab.Equal(ba) || a.Equal(none) || !none.Equal(nil) {
		t.Fatal("Equal wrong")
	}
	if !mustParse(t, "zookeeper").Equal(mustParse(t, "ZooKeeper")) || mustParse(t, "zookeeper").Equal(a) {
		t.Fatal("Equal wrong for the keyword")
	}
	for _, s := range []*Secrets{a, ab, none, mustParse(t, "zookeeper\n"+secretB)} {
		str := s.String()
		if strings.Contains(str, secretA) || strings.Contains(str, secretB) || str == "" {
			t.Errorf("String = %q", str)
		}
	}
}

// FuzzParseSecrets: the secret file is operator input read at start and on every change;
// whatever it holds, parsing must not panic, and what it accepts must behave: the first
// secret's password checks, and nothing shorter than MinSecretLen became a secret.
func FuzzParseSecrets(f *testing.F) {
	f.Add([]byte(secretA + "\n"))
	f.Add([]byte("# c\n" + secretB + "\r\n" + secretA + "\nzookeeper\n"))
	f.Add([]byte("zookeeper"))
	f.Add([]byte("\n\n#\n  \t\n"))
	f.Add([]byte("short\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSecrets(data)
		if err != nil {
			if s != nil || !errors.Is(err, ErrSecrets) {
				t.Fatalf("error %v with Secrets %v", err, s)
			}
			return
		}
		if s.Len() < 1 || s.Len() > maxSecrets {
			t.Fatalf("Len %d", s.Len())
		}
		for _, k := range s.keys {
			if k != nil && len(k) < MinSecretLen {
				t.Fatalf("short secret accepted: %d bytes", len(k))
			}
		}
		const id = int64(0x1234567890)
		p := s.Password(id)
		if !s.Check(id, p[:]) {
			t.Fatal("own password refused")
		}
		zk := Password(id)
		if s.Check(id, zk[:]) != s.AcceptsZooKeeper() {
			t.Fatal("ZooKeeper's password accepted without the keyword (or refused with it)")
		}
	})
}
