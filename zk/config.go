package zk

import (
	"context"

	"github.com/zkd-io/zkd/jute"
)

// ConfigNode is the znode in which the servers publish the ensemble's configuration
// (ZooDefs.CONFIG_NODE): one `server.N=...` line per member, then `version=<hex>`. A
// standalone server leaves it empty.
const ConfigNode = "/zookeeper/config"

// configSpec is getConfig's request: a getData of ConfigNode, which, as in ZooKeeper's
// client, ignores the chroot.
func configSpec(watch bool) spec {
	s := readSpec(jute.OpGetData, ConfigNode, kindConfig, watch)
	s.raw = true
	return s
}

// GetConfig returns the ensemble's configuration as the connected server publishes it in
// ConfigNode, and the node's Stat (ZooKeeper.getConfig). The connection's chroot does not
// apply. A server may lag behind the leader: Sync first for the latest configuration.
func (c *Conn) GetConfig(ctx context.Context) ([]byte, *Stat, error) {
	data, st, _, err := c.getData(ctx, configSpec(false))
	return data, st, err
}

// GetConfigW is GetConfig that also sets a one-time watch on the configuration: the channel
// receives ConfigNode's next NodeDataChanged (with Path ConfigNode, whatever the chroot), or
// EventNotWatching if the session ends first, and is then closed. The watch survives
// reconnects.
func (c *Conn) GetConfigW(ctx context.Context) ([]byte, *Stat, <-chan Event, error) {
	return c.getData(ctx, configSpec(true))
}

// removedWatches ends the client's watches that a successful removeWatches(path, t) removed
// on the server, getConfig's among them when path is, on the server, ConfigNode.
func (c *Conn) removedWatches(path string, t WatcherType) {
	c.watches.removeType(path, t)
	if (t == WatcherData || t == WatcherAny) && c.chroot.join(path) == ConfigNode {
		c.watches.removeConfig()
	}
}
