package main

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/server"
)

// persistReconfig tells the server how a new configuration is written: as ZooKeeper's
// QuorumPeer.setQuorumVerifier and setLastSeenQuorumVerifier write it, next to the zoo.cfg
// (nothing is written without one, as ZooKeeper writes nothing without a config file).
func persistReconfig(cfg *config.Config, cfgPath string, sc *server.Config, logger *slog.Logger) error {
	if cfgPath == "" || !cfg.ReconfigEnabled {
		return nil
	}
	if cfg.BacksUpStaticConfig() {
		// QuorumPeerConfig.backupOldConfig: the first reconfig moves the members out of
		// the zoo.cfg, which is kept as it was written in zoo.cfg.bak.
		if err := config.BackupOldConfig(cfgPath); err != nil {
			return err
		}
	}
	myID := int(sc.ServerID)
	sc.PersistConfig = func(text []byte, version int64, next bool) error {
		nextPath := cfgPath + config.NextDynamicConfigSuffix
		if next && text == nil {
			// Nothing is pending any more (a new leader had no newer configuration).
			if err := os.Remove(nextPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			return nil
		}
		if next {
			return config.WriteDynamicConfig(nextPath, string(text), true)
		}
		path := config.DynamicConfigPath(cfgPath, version)
		if err := config.WriteDynamicConfig(path, string(text), false); err != nil {
			return err
		}
		// needEraseClientInfoFromStaticConfig: the configuration names this server's client
		// address, so zoo.cfg's clientPort and clientPortAddress go.
		erase := false
		if d, err := config.ParseDynamicStandalone(text, cfg.StandaloneEnabled()); err == nil {
			if me, ok := d.Servers[myID]; ok && me.ClientPort != 0 {
				erase = true
			}
		}
		if err := config.EditStaticConfig(cfgPath, path, erase); err != nil {
			return err
		}
		// The proposed configuration is now committed (or superseded).
		if data, err := os.ReadFile(nextPath); err == nil {
			if v, err := config.ConfigVersion(data); err != nil || v <= version {
				if err := os.Remove(nextPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
					logger.Warn("cannot remove the proposed configuration file", "path", nextPath, "err", err)
				}
			}
		}
		return nil
	}
	return nil
}
