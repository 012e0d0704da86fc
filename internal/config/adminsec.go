package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// zkd's own keys guarding the AdminServer (internal/admin/httpadmin).
// ZooKeeper has none of them: its Jetty checks no Host header and reads a restore body of
// any size with no deadline.
const (
	// AdminAllowedHostsKey lists, comma-separated, the names a request's Host (and Origin)
	// may carry besides loopback names and addresses. The Host check is on when the
	// AdminServer is bound to loopback, or when this key lists names.
	AdminAllowedHostsKey = "zkd.admin.allowedHosts"
	// AdminRestoreMaxBytesKey caps a restore's body, in bytes.
	AdminRestoreMaxBytesKey = "zkd.admin.restoreMaxBytes"
	// AdminRestoreReadTimeoutKey is the longest a restore's body may go without sending a
	// byte, in milliseconds.
	AdminRestoreReadTimeoutKey = "zkd.admin.restoreReadTimeoutMs"
)

// AdminGuards is the settings of those keys; zero values mean the key table's defaults (no
// names beyond loopback; internal/admin/httpadmin reads the size and time defaults from it).
type AdminGuards struct {
	AllowedHosts         []string
	RestoreMaxBytes      int64
	RestoreReadTimeoutMs int64
}

// setAdminGuard parses one of the keys. Values fail closed: a number that is not positive,
// or a host list with an empty or malformed entry, stops start-up rather than leaving the
// guard at a value the operator did not mean.
func (c *Config) setAdminGuard(key, v string) error {
	switch key {
	case AdminAllowedHostsKey:
		var hosts []string
		for h := range strings.SplitSeq(v, ",") {
			h = strings.TrimSpace(h)
			if h == "" || strings.ContainsAny(h, "/:@ []") {
				return fmt.Errorf("%q is not a host name or IPv4 address (list names without ports, comma-separated)", h)
			}
			hosts = append(hosts, strings.ToLower(h))
		}
		c.AdminGuards.AllowedHosts = hosts
	case AdminRestoreMaxBytesKey, AdminRestoreReadTimeoutKey:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer: %w", err)
		}
		if n <= 0 {
			return errors.New("must be positive")
		}
		if key == AdminRestoreMaxBytesKey {
			c.AdminGuards.RestoreMaxBytes = n
		} else {
			c.AdminGuards.RestoreReadTimeoutMs = n
		}
	default:
		return errUnknownKey
	}
	return nil
}
