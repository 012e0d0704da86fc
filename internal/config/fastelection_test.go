package config

import (
	"errors"
	"strings"
	"testing"
)

func TestFastElectionKey(t *testing.T) {
	const base = "dataDir=/d\nclientPort=2181\n"
	if c := mustParse(t, base); c.FastElection {
		t.Fatal("fast election on by default")
	}
	if c := mustParse(t, base+"zkd.fastElection=TRUE\n"); !c.FastElection {
		t.Fatal("zkd.fastElection=TRUE not taken")
	}
	if c := mustParse(t, base+"zkd.fastElection=false\n"); c.FastElection {
		t.Fatal("zkd.fastElection=false turned it on")
	}
	for _, bad := range []string{"", "yes", "1", "on"} {
		_, err := Parse(strings.NewReader(base + "zkd.fastElection=" + bad + "\n"))
		var ke *KeyError
		if !errors.As(err, &ke) || ke.Key != FastElectionKey {
			t.Errorf("zkd.fastElection=%q: err = %v, want a KeyError naming the key", bad, err)
		}
	}
}

func TestKeeperNodesListedKey(t *testing.T) {
	const base = "dataDir=/d\nclientPort=2181\n"
	if c := mustParse(t, base); c.KeeperNodesListed {
		t.Fatal("zkd.keeperNodesListed on by default")
	}
	if c := mustParse(t, base+"zkd.extensions=capabilities\nzkd.keeperNodesListed=true\n"); !c.KeeperNodesListed {
		t.Fatal("zkd.keeperNodesListed=true not taken")
	}
	_, err := Parse(strings.NewReader(base + "zkd.keeperNodesListed=yes\n"))
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Key != KeeperNodesListedKey {
		t.Errorf("zkd.keeperNodesListed=yes: err = %v, want a KeyError naming the key", err)
	}
}
