package config

import "errors"

// SessionSecretKey is zkd's own zoo.cfg key naming the session secret file (see
// internal/session: with it, session passwords are keyed with the ensemble's secret instead
// of ZooKeeper's public derivation). Apache ZooKeeper turns it into an unused system
// property, silently, so it must not be set in an ensemble that has ZooKeeper members.
const SessionSecretKey = "zkd.sessionSecretFile"

// setSessionSecretFile takes the key's value: a path, checked when the server starts (the
// file is read then, and again whenever it changes).
func (c *Config) setSessionSecretFile(v string) error {
	if v == "" {
		// Fail closed: an operator who wrote the key asked for a secret.
		return errors.New("must name the session secret file")
	}
	c.SessionSecretFile = v
	return nil
}
