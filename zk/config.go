package zk

import (
	"context"

	"github.com/zkd-io/zkd/jute"
)

// ConfigNode is the znode in which the servers publish the ensemble's configuration
// (ZooDefs.CONFIG_NODE): one `server.N=...` line per member, then `version=<hex>`. A
// standalone server leaves it empty.
const ConfigNode = "/zookeeper/config"

// configReq builds getConfig's request: a getData of ConfigNode, which, as in ZooKeeper's
// client, ignores the chroot.
func (c *Conn) configReq(watch bool) (*request, *jute.GetDataResponse, *watchEntry) {
	resp := &jute.GetDataResponse{}
	r := newRequest(jute.OpGetData, ConfigNode, &jute.PathWatchRequest{Path: ConfigNode, Watch: watch}, resp, 0)
	if watch {
		r.watch = &watchEntry{kind: kindConfig, path: ConfigNode, q: newEventQueue(oneShotBuffer)}
	}
	return r, resp, r.watch
}

func (c *Conn) getConfig(ctx context.Context, watch bool) ([]byte, *Stat, <-chan Event, error) {
	r, resp, e := c.configReq(watch)
	if err := c.call(ctx, r); err != nil {
		return nil, nil, nil, err
	}
	return resp.Data, &resp.Stat, watchChan(e), nil
}

func (c *Conn) getConfigAsync(watch bool, cb func([]byte, *Stat, <-chan Event, error)) {
	r, resp, e := c.configReq(watch)
	c.callAsync(r, func(err error) {
		if err != nil {
			cb(nil, nil, nil, err)
			return
		}
		cb(resp.Data, &resp.Stat, watchChan(e), nil)
	})
}

// GetConfig returns the ensemble's configuration as the connected server publishes it in
// ConfigNode, and the node's Stat (ZooKeeper.getConfig). The connection's chroot does not
// apply. A server may lag behind the leader: Sync first for the latest configuration.
func (c *Conn) GetConfig(ctx context.Context) ([]byte, *Stat, error) {
	data, st, _, err := c.getConfig(ctx, false)
	return data, st, err
}

// GetConfigAsync is GetConfig with a callback.
func (c *Conn) GetConfigAsync(cb func([]byte, *Stat, error)) {
	c.getConfigAsync(false, func(d []byte, st *Stat, _ <-chan Event, err error) { cb(d, st, err) })
}

// GetConfigW is GetConfig that also sets a one-time watch on the configuration: the channel
// receives ConfigNode's next NodeDataChanged (with Path ConfigNode, whatever the chroot), or
// EventNotWatching if the session ends first, and is then closed. The watch survives
// reconnects.
func (c *Conn) GetConfigW(ctx context.Context) ([]byte, *Stat, <-chan Event, error) {
	return c.getConfig(ctx, true)
}

// GetConfigWAsync is GetConfigW with a callback.
func (c *Conn) GetConfigWAsync(cb func([]byte, *Stat, <-chan Event, error)) {
	c.getConfigAsync(true, cb)
}

// removedWatches ends the client's watches that a successful removeWatches(path, t) removed
// on the server, getConfig's among them when path is, on the server, ConfigNode.
func (c *Conn) removedWatches(path string, t WatcherType) {
	c.watches.removeType(path, t)
	if (t == WatcherData || t == WatcherAny) && c.chroot.join(path) == ConfigNode {
		c.watches.removeConfig()
	}
}
