package config

import "strings"

// ReadOnlyModeKey turns on read-only mode: an ensemble member cut off from its quorum serves
// reads to clients that asked for read-only sessions. ZooKeeper reads it only as the JVM
// system property readonlymode.enabled (QuorumPeer), without the "zookeeper." prefix, so a
// zoo.cfg line cannot turn it on there (ZooKeeper files unknown keys as
// "zookeeper."-prefixed properties); zkd takes it from zoo.cfg, with or without the prefix.
const ReadOnlyModeKey = "readonlymode.enabled"

// setReadOnlyMode takes the value as Java's Boolean.getBoolean reads the property: "true" in
// any case turns it on, anything else leaves it off.
func (c *Config) setReadOnlyMode(v string) {
	c.ReadOnlyMode = strings.EqualFold(strings.TrimSpace(v), "true")
}
