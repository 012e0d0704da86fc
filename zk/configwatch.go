package zk

import (
	"errors"
	"slices"
	"strings"
	"time"
)

// WithConfigWatch makes the client follow the ensemble's membership: it watches ConfigNode
// and, whenever the configuration changes (a reconfig), replaces its server list with the
// client addresses of the new configuration, as UpdateServerList would (so the client may
// move to rebalance the load). A member whose client address is the wildcard (a server.N
// line with only a client port) is reached at its quorum host. Without client addresses in
// the configuration (a standalone server, or server.N lines without a client part) the list
// is left alone. ZooKeeper's Java client leaves this to the application; the option does
// what its documentation suggests applications do.
func WithConfigWatch() Option { return func(c *config) { c.configWatch = true } }

// followConfig is WithConfigWatch's loop; it ends with the session.
func (c *Conn) followConfig() {
	wait := c.cfg.backoffMin
	for c.ctx.Err() == nil {
		data, _, ch, err := c.GetConfigW(c.ctx)
		if err != nil {
			if errors.Is(err, ErrClosed) || errors.Is(err, ErrSessionExpired) || c.ctx.Err() != nil {
				return
			}
			// Disconnected (or refused): try again once the client may have reconnected.
			c.log.Debug("zk: reading the configuration failed", "err", err)
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-c.ctx.Done():
				t.Stop()
				return
			}
			wait = min(2*wait, c.cfg.backoffMax)
			continue
		}
		wait = c.cfg.backoffMin
		if servers := configClientAddrs(data); len(servers) > 0 {
			c.mu.Lock()
			same := sameSet(servers, c.hosts.servers)
			c.mu.Unlock()
			if !same {
				c.log.Info("zk: server list follows the ensemble's configuration", "servers", strings.Join(servers, ","))
				c.updateServers(servers)
			}
		}
		select {
		case <-ch:
			// Changed, or the watch ended (the session did too, then: the loop ends).
		case <-c.ctx.Done():
			return
		}
	}
}

// configClientAddrs is the client addresses of the servers in a configuration's text
// (ZooKeeper's ConfigUtils.getClientConfigStr), normalised as in a connect string.
func configClientAddrs(data []byte) []string {
	var out []string
	for line := range strings.SplitSeq(string(data), "\n") {
		key, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || !strings.HasPrefix(strings.TrimSpace(key), "server.") {
			continue
		}
		serverPart, client, ok := strings.Cut(strings.TrimSpace(value), ";")
		if !ok || strings.TrimSpace(client) == "" {
			continue
		}
		client = strings.TrimSpace(client)
		host, port := "", client
		if i := strings.LastIndexByte(client, ':'); i >= 0 {
			host, port = client[:i], client[i+1:]
		}
		if h := strings.Trim(host, "[]"); h == "" || h == "0.0.0.0" || h == "::" {
			host = quorumHost(serverPart)
		}
		addr, err := normalizeHost(host + ":" + port)
		if err != nil || slices.Contains(out, addr) {
			continue
		}
		out = append(out, addr)
	}
	return out
}

// quorumHost is the host of the first address of a server.N value, brackets kept.
func quorumHost(serverPart string) string {
	first, _, _ := strings.Cut(serverPart, "|")
	if strings.HasPrefix(first, "[") {
		if i := strings.IndexByte(first, ']'); i >= 0 {
			return first[:i+1]
		}
	}
	host, _, _ := strings.Cut(first, ":")
	return host
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
