package config

// Local sessions (ZooKeeper's QuorumPeerConfig keys, zoo.cfg only: with the "zookeeper."
// prefix ZooKeeper would set a system property nobody reads, so zkd lists that as unknown).
const (
	// LocalSessionsKey makes an ensemble member's new sessions local to it: no txn, known
	// to that member alone.
	LocalSessionsKey = "localSessionsEnabled"
	// LocalSessionsUpgradingKey upgrades a local session to a global one when it creates
	// an ephemeral node; without it that create fails with EPHEMERALONLOCALSESSION.
	LocalSessionsUpgradingKey = "localSessionsUpgradingEnabled"
)

// LocalSessions is the local-session part of the configuration.
type LocalSessions struct {
	Enabled   bool
	Upgrading bool
}

// setLocalSessions takes one of the two keys, as QuorumPeerConfig.parseBoolean does:
// "true" or "false" in any case, anything else an error.
func (c *Config) setLocalSessions(key, v string) error {
	b, err := parseBool(v)
	if err != nil {
		return err
	}
	if key == LocalSessionsKey {
		c.LocalSessions.Enabled = b
	} else {
		c.LocalSessions.Upgrading = b
	}
	return nil
}
