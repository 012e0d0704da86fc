package server

import (
	"cmp"
	"log/slog"
	"time"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/storage"
)

// FromConfig is what the server runs with for a parsed zoo.cfg: the one place a
// config.Config becomes a Config. serverID is this member's id (dataDir/myid), 0 for a
// standalone server; the ensemble settings are taken only with one. What zoo.cfg does not
// hold is left to the caller: the TLS and SASL material built from the security keys, the
// AdminServer's HTTPS, the metrics registry, where reconfigured configurations are written
// (PersistConfig), the file system and the text of the zoo.cfg itself.
func FromConfig(c *config.Config, serverID int64, logger *slog.Logger) Config {
	sc := Config{
		ListenAddr:                 c.ClientAddr(),
		DataDir:                    c.DataDir,
		DataLogDir:                 c.DataLogDir,
		TickTime:                   c.TickTime,
		MinSessionTimeout:          c.MinSessionTimeout,
		MaxSessionTimeout:          c.MaxSessionTimeout,
		MaxClientCnxns:             c.MaxClientCnxns,
		MaxCnxns:                   c.MaxCnxns,
		SkipACL:                    c.SkipACL,
		Audit:                      c.AuditEnable,
		SnapshotTrustEmpty:         c.SnapshotTrustEmpty,
		RequestThrottleMaxRequests: c.RequestThrottleMaxRequests,
		FsyncWarningThreshold:      cmp.Or(c.FsyncWarningThreshold(), -1),
		SnapCount:                  c.SnapCount,
		PreAllocSize:               c.PreAllocSize,
		NoSync:                     !c.ForceSync,
		NoDigest:                   !c.DigestEnabled,
		JuteMaxBuffer:              c.JuteMaxBuffer,
		ExtendedTypes:              c.ExtendedTypesEnabled,
		EnforceQuota:               c.EnforceQuota,
		SuperDigest:                c.SuperDigest,
		EnforceAuthSchemes:         c.Security.EnforcedSchemes(),
		GlobalOutstandingLimit:     c.GlobalOutstandingLimit,
		ContainerCheckInterval:     time.Duration(c.ContainerCheckIntervalMs) * time.Millisecond,
		SnapRetainCount:            c.SnapRetainCount,
		PurgeInterval:              time.Duration(c.PurgeInterval) * time.Hour,
		FourLetterWhitelist:        c.FourLetterWhitelist,
		SessionSecretFile:          c.SessionSecretFile,
		ReadOnlyMode:               c.ReadOnlyMode,
		FastElection:               c.FastElection,
		Extensions:                 c.Extensions,
		KeeperNodesListed:          c.KeeperNodesListed,
		WatchHistoryMaxChanges:     c.WatchHistoryMaxChanges,
		WatchHistoryMaxBytes:       c.WatchHistoryMaxBytes,
		MaxBufferLimit:             c.MaxBufferLimit,
		LocalSessions:              c.LocalSessions.Enabled,
		LocalSessionsUpgrading:     c.LocalSessions.Upgrading,
		ServerID:                   serverID,
		Logger:                     logger,
	}
	if c.TestZxidCounterStart != 0 {
		sc.zxidCounterStart = c.TestZxidCounterStart
		if logger != nil {
			logger.Warn("zxid counter starts near its end: for rollover tests only", "key", config.TestZxidCounterStartKey, "start", hex(c.TestZxidCounterStart))
		}
	}
	if c.SkipACL {
		// As ZooKeeperServer's static initializer.
		logger.Warn("skipACL is set (zookeeper.skipACL=yes): ACL checks will be skipped")
	}
	comp, known := storage.ParseSnapCompression(c.SnapshotCompression)
	if !known {
		// ZooKeeper falls back to uncompressed snapshots silently; a typo deserves a word.
		logger.Warn("unknown zookeeper.snapshot.compression.method; writing uncompressed snapshots",
			"value", c.SnapshotCompression)
	}
	sc.SnapshotCompression = comp
	if c.AdminEnableServer {
		sc.AdminAddr, sc.AdminCommandURL = c.AdminListenAddr(), c.AdminURL()
		sc.AdminSnap = AdminSnapConfig{
			SnapshotDisabled:   c.AdminSnapshotDisabled,
			RestoreEnabled:     c.AdminRestoreEnabled,
			RateLimitMs:        c.AdminRateLimiterMs,
			NeedClientAuth:     c.AdminNeedClientAuth,
			RestoreMaxBytes:    c.AdminGuards.RestoreMaxBytes,
			RestoreReadTimeout: time.Duration(c.AdminGuards.RestoreReadTimeoutMs) * time.Millisecond,
		}
		sc.AdminAllowedHosts = c.AdminGuards.AllowedHosts
	}
	sc.ConfText = func(dataSize, logSize int64, quorum []byte) string {
		info := config.ConfInfo{DataDirSize: dataSize, DataLogSize: logSize, ServerID: serverID}
		if quorum != nil {
			if d, err := config.ParseDynamicStandalone(quorum, c.StandaloneEnabled()); err == nil {
				info.Quorum = &d
			}
		}
		return c.Conf(info)
	}
	if serverID == 0 {
		return sc
	}
	sc.InitLimit, sc.SyncLimit = c.InitLimit, c.SyncLimit
	sc.ConnectToLearnerMasterLimit = c.ConnectToLearnerMasterLimit
	sc.CnxTimeout = c.CnxTimeout()
	sc.LeaderServesNo = c.LeaderServesNo
	sc.Peers = PeersOf(c.Servers)
	sc.Hierarchy = c.Hierarchy
	sc.QuorumListenOnAllIPs = c.QuorumShape.ListenOnAllIPs
	sc.ObserverMasterPort = c.QuorumShape.ObserverMasterPort
	sc.ElectionPortBindRetry = c.QuorumShape.ElectionPortBindRetry
	sc.ReconfigEnabled = c.ReconfigEnabled
	sc.StandaloneEnabled = c.StandaloneEnabled()
	sc.ConfigVersion = c.DynamicVersion
	if c.NextDynamic != nil {
		sc.LastSeenConfig = []byte(c.NextDynamic.Text())
	}
	return sc
}
