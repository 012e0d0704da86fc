package session

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// ZooKeeperKeyword is the secret-file line that stands for ZooKeeper's own derivation
// (Password). First, it makes new sessions get ZooKeeper's passwords; anywhere else, it keeps
// accepting them, so an ensemble can switch the secret on without expiring its sessions.
const ZooKeeperKeyword = "zookeeper"

// MinSecretLen is the shortest secret accepted, in bytes. Any client learns one (id,
// password) pair, its own, and can test guesses of the secret against it offline, so a
// secret must be long and random (32 random bytes in hex is what docs/security.md suggests).
const MinSecretLen = 16

// maxSecrets bounds the lines of a secret file: a rotation needs two, and every line costs
// an HMAC on each reconnect that does not match the first.
const maxSecrets = 16

// passwordLabel separates zkd's session passwords from any other use of the same key.
var passwordLabel = []byte("zkd session password v1\x00")

// ErrSecrets matches (with errors.Is) every error ParseSecrets returns.
var ErrSecrets = errors.New("session secret file")

// Secrets is an ensemble's session secrets, parsed from a secret file. The first derives
// the passwords of new sessions (and of reconnects: a client takes the password a reconnect
// answers); every one is accepted when a client reconnects. A nil *Secrets is "no secret
// configured": ZooKeeper's derivation only.
//
// A Secrets is immutable and safe for concurrent use. Its secrets never leave it: String
// and errors do not show them.
type Secrets struct {
	// keys are the secret lines in file order; nil stands for ZooKeeperKeyword.
	keys [][]byte
}

// ParseSecrets reads a secret file: one secret per line; leading and trailing white space
// is dropped, and empty lines and lines starting with '#' are skipped. A line equal to
// ZooKeeperKeyword (any case) stands for ZooKeeper's derivation. The file must hold at
// least one secret; each must be at least MinSecretLen bytes and appear once.
//
// Errors name line numbers, never a line's text.
func ParseSecrets(data []byte) (*Secrets, error) {
	s := &Secrets{}
	zk := false
	for i, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		n := i + 1
		if len(s.keys) == maxSecrets {
			return nil, fmt.Errorf("%w: line %d: more than %d secrets", ErrSecrets, n, maxSecrets)
		}
		if strings.EqualFold(string(line), ZooKeeperKeyword) {
			if zk {
				return nil, fmt.Errorf("%w: line %d: %q appears twice", ErrSecrets, n, ZooKeeperKeyword)
			}
			zk = true
			s.keys = append(s.keys, nil)
			continue
		}
		if len(line) < MinSecretLen {
			return nil, fmt.Errorf("%w: line %d: a secret must be at least %d bytes (it has %d)",
				ErrSecrets, n, MinSecretLen, len(line))
		}
		for _, k := range s.keys {
			if k != nil && bytes.Equal(k, line) {
				return nil, fmt.Errorf("%w: line %d: a secret appears twice", ErrSecrets, n)
			}
		}
		s.keys = append(s.keys, bytes.Clone(line))
	}
	if len(s.keys) == 0 {
		return nil, fmt.Errorf("%w: no secret in the file", ErrSecrets)
	}
	return s, nil
}

// Len is the number of secrets, the ZooKeeper keyword included.
func (s *Secrets) Len() int {
	if s == nil {
		return 0
	}
	return len(s.keys)
}

// AcceptsZooKeeper reports whether ZooKeeper's derivation is among the secrets (always true
// for nil): a client that computes a password from a session id alone is then accepted.
func (s *Secrets) AcceptsZooKeeper() bool {
	if s == nil {
		return true
	}
	for _, k := range s.keys {
		if k == nil {
			return true
		}
	}
	return false
}

// Equal reports whether s and o hold the same secrets in the same order.
func (s *Secrets) Equal(o *Secrets) bool {
	if s.Len() != o.Len() {
		return false
	}
	for i := range s.Len() {
		a, b := s.keys[i], o.keys[i]
		if (a == nil) != (b == nil) || !hmac.Equal(a, b) {
			return false
		}
	}
	return true
}

// String describes s without its secrets, for logs.
func (s *Secrets) String() string {
	if s == nil {
		return "none (ZooKeeper's derivation)"
	}
	first := "a secret"
	if s.keys[0] == nil {
		first = "ZooKeeper's derivation"
	}
	return fmt.Sprintf("%d secret(s); new sessions use %s; ZooKeeper's derivation accepted: %v",
		len(s.keys), first, s.AcceptsZooKeeper())
}

// Password returns the password of session id: derived from the first secret, or
// ZooKeeper's when s is nil or the first line is ZooKeeperKeyword.
func (s *Secrets) Password(id int64) [16]byte {
	if s == nil {
		return Password(id)
	}
	return derive(s.keys[0], id)
}

// Check reports whether passwd is session id's password under any of the secrets. Every
// candidate is compared in constant time.
func (s *Secrets) Check(id int64, passwd []byte) bool {
	if s == nil {
		p := Password(id)
		return subtle.ConstantTimeCompare(p[:], passwd) == 1
	}
	ok := 0
	for _, k := range s.keys {
		p := derive(k, id)
		ok |= subtle.ConstantTimeCompare(p[:], passwd)
	}
	return ok == 1
}

// derive is one secret's password for id: HMAC-SHA256 keyed with the secret over the label
// and the id, cut to ZooKeeper's 16 bytes; a nil key is ZooKeeper's derivation.
func derive(key []byte, id int64) [16]byte {
	if key == nil {
		return Password(id)
	}
	m := hmac.New(sha256.New, key)
	m.Write(passwordLabel)
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(id))
	m.Write(b[:])
	var p [16]byte
	copy(p[:], m.Sum(nil))
	return p
}
