package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/zkd-io/zkd/internal/ext"
)

// FastElectionKey is zkd's own zoo.cfg key for the fast election decision (see
// internal/election's Config.FastDecision): a round ends as soon as every member not known to
// be down agrees, instead of after ZooKeeper's 200 ms finalize wait. Set it only when every
// member is zkd: Apache ZooKeeper ignores the key, and a mixed ensemble keeps ZooKeeper's
// timing only if no member decides early.
const FastElectionKey = "zkd.fastElection"

// setFastElection takes "true" or "false" (any case); anything else fails closed, since an
// operator who wrote the key meant something by it.
func (c *Config) setFastElection(v string) error {
	on, err := parseBool(v)
	if err != nil {
		return fmt.Errorf("fast election: %w", err)
	}
	c.FastElection = on
	return nil
}

// TestZxidCounterStartKey is a key for tests only: where a new leader's zxid counter
// starts (and, with wide, each epoch's after an in-place rollover), so that a test reaches
// the counter's end in a few writes. 0, the default, is every real server's.
const TestZxidCounterStartKey = "zkd.test.zxidCounterStart"

func (c *Config) setTestZxidCounterStart(v string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 0, 64)
	if err != nil || n < 0 || n > 0xfffffffe {
		return fmt.Errorf("%s: %q is not a counter below 0xffffffff", TestZxidCounterStartKey, v)
	}
	c.TestZxidCounterStart = n
	return nil
}

// ExtensionsKey is zkd's own zoo.cfg key for the extensions beyond ZooKeeper a server
// enables: a comma-separated list of internal/ext names, "all" or "none".
const ExtensionsKey = "zkd.extensions"

func (c *Config) setExtensions(v string) error {
	set, err := ext.Parse(v)
	if err != nil {
		return fmt.Errorf("extensions: %w", err)
	}
	c.Extensions = set
	return nil
}

// KeeperNodesListedKey is zkd's own zoo.cfg key that lists the capabilities extension's
// virtual /keeper node in getChildren("/"), as ClickHouse Keeper lists its /keeper. Off by
// default: a user may own a /keeper of their own, and a stock client listing "/" must see
// ZooKeeper's children.
const KeeperNodesListedKey = "zkd.keeperNodesListed"

func (c *Config) setKeeperNodesListed(v string) error {
	on, err := parseBool(v)
	if err != nil {
		return fmt.Errorf("%s: %w", KeeperNodesListedKey, err)
	}
	c.KeeperNodesListed = on
	return nil
}
