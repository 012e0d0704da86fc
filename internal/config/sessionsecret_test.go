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
	// zkd's own key: no "zookeeper." form.
	c = mustParse(t, base+"zookeeper.zkd.sessionSecretFile=/x\n")
	if c.SessionSecretFile != "" || !slices.Contains(c.Unknown, "zookeeper.zkd.sessionSecretFile") {
		t.Fatalf("prefixed key: SessionSecretFile = %q, Unknown = %v", c.SessionSecretFile, c.Unknown)
	}
	// An empty value fails closed rather than running without the secret.
	_, err := Parse(strings.NewReader(base + "zkd.sessionSecretFile=\n"))
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Key != SessionSecretKey || !strings.Contains(err.Error(), "must name") {
		t.Fatalf("empty value: %v", err)
	}
}
