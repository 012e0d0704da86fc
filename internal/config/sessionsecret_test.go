package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestSessionSecretFileKey(t *testing.T) {
	const base = "dataDir=/d\nclientPort=2181\n"
	if c := mustParse(t, base); c.SessionSecretFile != "" {
		t.Fatalf("default SessionSecretFile = %q, want none", c.SessionSecretFile)
	}
	c := mustParse(t, base+"zkd.sessionSecretFile=/etc/zkd/session.secret\n")
	if c.SessionSecretFile != "/etc/zkd/session.secret" || slices.Contains(c.Unknown, SessionSecretKey) {
		t.Fatalf("SessionSecretFile = %q, Unknown = %v", c.SessionSecretFile, c.Unknown)
	}
	// zkd's own key has no "zookeeper." form: written so, it would be ignored, so it stops
	// start-up instead, naming the key to write.
	_, err := Parse(strings.NewReader(base + "zookeeper.zkd.sessionSecretFile=/x\n"))
	if !errors.Is(err, ErrUnknownSecurityKey) || !errors.Is(err, ErrInvalid) ||
		!strings.Contains(err.Error(), "zookeeper.zkd.sessionSecretFile") || !strings.Contains(err.Error(), "write "+SessionSecretKey) {
		t.Fatalf("prefixed key: %v", err)
	}
	// An empty value fails closed rather than running without the secret.
	_, err = Parse(strings.NewReader(base + "zkd.sessionSecretFile=\n"))
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Key != SessionSecretKey || !strings.Contains(err.Error(), "must name") {
		t.Fatalf("empty value: %v", err)
	}
}
