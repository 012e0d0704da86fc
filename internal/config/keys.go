package config

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// keyDef is one row of the key table: everything zkd knows about one zoo.cfg key. The table
// (keys) is the only place a key's name, default and parser are written; Parse dispatches
// through it, fileDefaults and Defaults are built from it, String and the `conf` four-letter
// word render from it, and docs/configuration.md is generated from it (Markdown).
type keyDef struct {
	// Name is the key as written in zoo.cfg. For a Prefix row it is the part before the free
	// one ("server.", "ssl.quorum."), and Syntax shows the whole form.
	Name   string
	Prefix bool
	Syntax string
	// SysProp: ZooKeeper reads the key as the system property "zookeeper."+Name, so people
	// write that spelling in zoo.cfg too; zkd takes both.
	SysProp bool
	// Default is ZooKeeper's value when zoo.cfg leaves the key out, in zoo.cfg syntax ("" =
	// none). Parse starts from it, unless ZeroIsDefault: then the field's zero value stands
	// for it and the code that uses the field reads the default with DefaultInt.
	Default       string
	ZeroIsDefault bool
	// ZkdDefault is the value of zkd's no-argument mode (no config file at all) where it
	// differs from Default.
	ZkdDefault string
	Section    string
	Doc        string
	// Unimplemented marks a key ZooKeeper 3.8/3.9 reads that zkd recognises and does not
	// implement; it says what zkd does instead. Parse lists such a key in
	// Config.NotImplemented (the row's parse, when set, only checks the value) and start-up
	// logs it apart from unknown keys; the documentation lists it with the reason.
	Unimplemented string

	// parse applies a value; key is the name as matched (without "zookeeper."), which a
	// Prefix row needs.
	parse func(c *Config, key, v string) error
	// check validates the key's own effective value (rules across keys live in validate).
	check func(c *Config) error
	// value renders the effective value in zoo.cfg syntax, for String, the `conf` four-letter
	// word and error messages; nil for keys String does not write.
	value func(c *Config) string
}

// displayName is how the documentation names the key.
func (k keyDef) displayName() string { return cmp.Or(k.Syntax, k.Name) }

// Table sections, in documentation order.
const (
	secBasic    = "Basic"
	secStorage  = "Storage and snapshots"
	secLimits   = "Limits and behaviour"
	secEnsemble = "Ensemble"
	secReconfig = "Dynamic reconfiguration"
	secAdmin    = "AdminServer"
	secMetrics  = "Metrics"
	secSecurity = "Security"
	secZkd      = "zkd's own keys"
	secUnimpl   = "ZooKeeper keys zkd does not implement"
)

// notImplementedError is what a row's parse returns for a value zkd recognises and does not
// implement (a row with Unimplemented set, or one whose value is only partly implemented,
// such as syncEnabled=false): Parse lists the key in Config.NotImplemented and goes on.
type notImplementedError struct{ reason string }

func (e *notImplementedError) Error() string { return "not implemented: " + e.reason }

func recognisedOnly(reason string) error { return &notImplementedError{reason: reason} }

// checkBool is the parse of an unimplemented boolean row: the value is still held to true
// or false (any case), as ZooKeeper's parseBoolean holds it.
func checkBool(_ *Config, _, v string) error {
	_, err := parseBool(v)
	return err
}

// checkStrictBool is checkBool under a guarded prefix (security.go), with its message.
func checkStrictBool(_ *Config, _, v string) error {
	_, err := strictBool(v)
	return err
}

// checkInt is the parse of an unimplemented integer row.
func checkInt(_ *Config, _, v string) error {
	_, err := javaDecodeInt(v)
	return err
}

// Setters for common value kinds.

func intKey(field func(*Config) *int, parse func(string) (int, error)) func(*Config, string, string) error {
	return func(c *Config, _, v string) (err error) {
		*field(c), err = parse(v)
		return err
	}
}

func boolKey(field func(*Config) *bool, parse func(string) (bool, error)) func(*Config, string, string) error {
	return func(c *Config, _, v string) (err error) {
		*field(c), err = parse(v)
		return err
	}
}

func stringKey(field func(*Config) *string) func(*Config, string, string) error {
	return func(c *Config, _, v string) error {
		*field(c) = v
		return nil
	}
}

// security and quorumShape hand a row to its part's parser; a row the part does not know is
// a bug that TestKeyTable catches through errUnknownKey.
func security(c *Config, key, v string) error {
	if handled, err := c.Security.setSecurityKey(key, v); handled {
		return err
	}
	return errUnknownKey
}

func quorumShape(c *Config, key, v string) error {
	if handled, err := c.QuorumShape.setQuorumShapeKey(key, v); handled {
		return err
	}
	return errUnknownKey
}

func itoa(n int) string { return strconv.Itoa(n) }

func boolString(b bool) string { return strconv.FormatBool(b) }

func nonZero[T comparable](v T, s func(T) string) string {
	var zero T
	if v == zero {
		return ""
	}
	return s(v)
}

func positive(n int) error {
	if n <= 0 {
		return errors.New("must be positive")
	}
	return nil
}

func notNegative(n int) error {
	if n < 0 {
		return errors.New("must not be negative")
	}
	return nil
}

// keys is the key table. Rows are in documentation order; within the exact-name rows the
// order is also the order of String's lines and of the checks' errors.
var keys = []keyDef{
	// Basic.
	{Name: "tickTime", Default: "3000", ZkdDefault: "2000", Section: secBasic,
		Doc:   "The basic time unit in milliseconds; session timeouts and the ensemble's limits count in ticks.",
		parse: intKey(func(c *Config) *int { return &c.TickTime }, javaParseInt),
		check: func(c *Config) error {
			if c.TickTime <= 0 {
				return errors.New("must be positive (tickTime is not set)")
			}
			return nil
		},
		value: func(c *Config) string { return itoa(c.TickTime) }},
	{Name: "dataDir", ZkdDefault: "./zkd-data", Section: secBasic,
		Doc:   "Where snapshots (and, unless dataLogDir says otherwise, the transaction log) are kept, under version-2/; also holds myid.",
		parse: stringKey(func(c *Config) *string { return &c.DataDir }),
		check: func(c *Config) error {
			if c.DataDir == "" {
				return errors.New("dataDir is not set")
			}
			return nil
		},
		value: func(c *Config) string { return c.DataDir }},
	{Name: "dataLogDir", Section: secBasic,
		Doc:   "Where the transaction log is kept; empty means dataDir.",
		parse: stringKey(func(c *Config) *string { return &c.DataLogDir }),
		value: func(c *Config) string { return c.DataLogDir }},
	{Name: "clientPort", ZkdDefault: "2181", Section: secBasic,
		Doc:   "The port clients connect to; may instead come from this server's server.N line (\";port\").",
		parse: intKey(func(c *Config) *int { return &c.ClientPort }, javaParseInt),
		value: func(c *Config) string { return itoa(c.ClientPort) }},
	{Name: "clientPortAddress", ZkdDefault: "127.0.0.1", Section: secBasic,
		Doc:   "The address the client port listens on; empty means every interface.",
		parse: stringKey(func(c *Config) *string { return &c.ClientPortAddress }),
		value: func(c *Config) string { return c.ClientPortAddress }},
	{Name: "maxClientCnxns", Default: "60", Section: secBasic,
		Doc:   "Connections allowed per client IP address; 0 or less means no limit.",
		parse: intKey(func(c *Config) *int { return &c.MaxClientCnxns }, javaParseInt),
		value: func(c *Config) string { return itoa(c.MaxClientCnxns) }},
	{Name: "minSessionTimeout", Default: "-1", Section: secBasic,
		Doc:   "The smallest session timeout granted, in ms; -1 means 2 × tickTime.",
		parse: intKey(func(c *Config) *int { return &c.MinSessionTimeout }, javaParseInt),
		check: func(c *Config) error { return notNegative(c.MinSessionTimeout) },
		value: func(c *Config) string { return itoa(c.MinSessionTimeout) }},
	{Name: "maxSessionTimeout", Default: "-1", Section: secBasic,
		Doc:   "The largest session timeout granted, in ms; -1 means 20 × tickTime.",
		parse: intKey(func(c *Config) *int { return &c.MaxSessionTimeout }, javaParseInt),
		check: func(c *Config) error { return notNegative(c.MaxSessionTimeout) },
		value: func(c *Config) string { return itoa(c.MaxSessionTimeout) }},
	{Name: "clientPortListenBacklog", Default: "-1", Section: secBasic,
		Doc:   "The client port's listen backlog; -1 means the operating system's default.",
		parse: intKey(func(c *Config) *int { return &c.ClientPortListenBacklog }, javaParseInt),
		value: func(c *Config) string { return itoa(c.ClientPortListenBacklog) }},

	// Storage and snapshots.
	{Name: "autopurge.snapRetainCount", Default: "3", Section: secStorage,
		Doc:   "Snapshots (and the logs they need) kept by autopurge; smaller values are raised to 3.",
		parse: intKey(func(c *Config) *int { return &c.SnapRetainCount }, javaParseInt),
		check: func(c *Config) error {
			if c.SnapRetainCount < minSnapRetainCount {
				return fmt.Errorf("must be at least %d", minSnapRetainCount)
			}
			return nil
		},
		value: func(c *Config) string { return itoa(c.SnapRetainCount) }},
	{Name: "autopurge.purgeInterval", Default: "0", Section: secStorage,
		Doc:   "Hours between purges of old snapshots and logs; 0 means never.",
		parse: intKey(func(c *Config) *int { return &c.PurgeInterval }, javaParseInt),
		check: func(c *Config) error { return notNegative(c.PurgeInterval) },
		value: func(c *Config) string { return itoa(c.PurgeInterval) }},
	{Name: "snapCount", SysProp: true, Default: "100000", Section: secStorage,
		Doc:   "Transactions between snapshots: one is taken after snapCount/2 + random(snapCount/2) txns.",
		parse: intKey(func(c *Config) *int { return &c.SnapCount }, javaDecodeInt),
		check: func(c *Config) error {
			if c.SnapCount < minSnapCount {
				return fmt.Errorf("must be at least %d", minSnapCount)
			}
			return nil
		},
		value: func(c *Config) string { return itoa(c.SnapCount) }},
	{Name: "preAllocSize", SysProp: true, Default: "65536", Section: secStorage,
		Doc: "KiB by which the transaction log file grows at a time.",
		parse: func(c *Config, _, v string) error {
			kib, err := strconv.ParseInt(v, 10, 64)
			c.PreAllocSize = kib * 1024
			switch {
			case err != nil:
				return errors.New("not an integer (KiB)")
			case kib < 0 || kib > 1<<40:
				return errors.New("must be between 0 and 2^40 KiB")
			}
			return nil
		},
		check: func(c *Config) error {
			if c.PreAllocSize < 0 {
				return errors.New("must not be negative")
			}
			return nil
		},
		value: func(c *Config) string { return strconv.FormatInt(c.PreAllocSize/1024, 10) }},
	{Name: "forceSync", SysProp: true, Default: "yes", Section: secStorage,
		Doc: "\"no\" skips fsync of the log: faster, and acknowledged writes can be lost in a power failure.",
		parse: func(c *Config, _, v string) error {
			switch v {
			case "yes":
				c.ForceSync = true
			case "no":
				c.ForceSync = false
			default:
				return errors.New(`must be "yes" or "no"`)
			}
			return nil
		},
		value: func(c *Config) string {
			if c.ForceSync {
				return "yes"
			}
			return "no"
		}},
	{Name: "snapshot.compression.method", SysProp: true, Section: secStorage,
		Doc:   "The format snapshots are written in: gz or snappy (any case); anything else means uncompressed. Every format is read whatever it says.",
		parse: stringKey(func(c *Config) *string { return &c.SnapshotCompression }),
		value: func(c *Config) string { return c.SnapshotCompression }},
	{Name: "snapshot.trust.empty", SysProp: true, Default: "false", Section: secStorage,
		Doc:   "A data directory whose log has txns and which has no snapshot at all is refused at start-up (the log may not reach back to the beginning); true starts from the log alone, for data directories of ZooKeeper before 3.5.3. Anything but \"true\" (any case) is false, as Boolean.getBoolean reads it.",
		parse: func(c *Config, _, v string) error { c.SnapshotTrustEmpty = strings.EqualFold(v, "true"); return nil },
		value: func(c *Config) string { return boolString(c.SnapshotTrustEmpty) }},
	{Name: "fsync.warningthresholdms", SysProp: true, Default: "1000", ZeroIsDefault: true, Section: secStorage,
		Doc: "An fsync of the transaction log that takes longer than this many ms is logged (WARN), as ZooKeeper compares them: in whole milliseconds; 0 or less warns of every fsync that takes one.",
		parse: func(c *Config, _, v string) error {
			n, err := strconv.ParseInt(v, 0, 64)
			if err != nil {
				return errors.New("not an integer")
			}
			// 0 and less warn of every fsync that takes a millisecond; -1 keeps that apart
			// from unset (zero).
			c.FsyncWarningThresholdMs = max(n, -1)
			if n == 0 {
				c.FsyncWarningThresholdMs = -1
			}
			return nil
		},
		value: func(c *Config) string {
			return nonZero(c.FsyncWarningThresholdMs, func(ms int64) string { return strconv.FormatInt(max(ms, 0), 10) })
		}},

	// Limits and behaviour.
	{Name: "jute.maxbuffer", SysProp: true, Default: "1048575", Section: secLimits,
		Doc:   "The largest frame accepted from a client or peer, in bytes.",
		parse: intKey(func(c *Config) *int { return &c.JuteMaxBuffer }, javaDecodeInt),
		check: func(c *Config) error { return positive(c.JuteMaxBuffer) },
		value: func(c *Config) string { return itoa(c.JuteMaxBuffer) }},
	{Name: "globalOutstandingLimit", SysProp: true, Default: "1000", Section: secLimits,
		Doc:   "Requests read but not yet answered; past it the server stops reading from clients.",
		parse: intKey(func(c *Config) *int { return &c.GlobalOutstandingLimit }, javaDecodeInt),
		check: func(c *Config) error { return positive(c.GlobalOutstandingLimit) },
		value: func(c *Config) string { return itoa(c.GlobalOutstandingLimit) }},
	{Name: "4lw.commands.whitelist", SysProp: true, Default: "srvr", Section: secLimits,
		Doc:   "The four-letter words served, comma-separated; * for all. srvr is always on.",
		parse: func(c *Config, _, v string) error { c.FourLetterWhitelist = parseWhitelist(v); return nil },
		check: func(c *Config) error {
			if len(c.FourLetterWhitelist) == 0 {
				return errors.New(`must contain at least "srvr"`)
			}
			return nil
		},
		value: func(c *Config) string { return strings.Join(c.FourLetterWhitelist, ",") }},
	{Name: "extendedTypesEnabled", SysProp: true, Default: "false", Section: secLimits,
		Doc:   "Allows TTL nodes.",
		parse: boolKey(func(c *Config) *bool { return &c.ExtendedTypesEnabled }, parseBool),
		value: func(c *Config) string { return boolString(c.ExtendedTypesEnabled) }},
	{Name: "znode.container.checkIntervalMs", SysProp: true, Default: "60000", Section: secLimits,
		Doc:   "How often empty containers and expired TTL nodes are removed, in ms.",
		parse: intKey(func(c *Config) *int { return &c.ContainerCheckIntervalMs }, javaDecodeInt),
		check: func(c *Config) error { return positive(c.ContainerCheckIntervalMs) },
		value: func(c *Config) string { return itoa(c.ContainerCheckIntervalMs) }},
	{Name: "digest.enabled", SysProp: true, Default: "true", Section: secLimits,
		Doc:   "Each txn carries the tree digest it leaves, and every member checks it after applying.",
		parse: boolKey(func(c *Config) *bool { return &c.DigestEnabled }, parseBool),
		value: func(c *Config) string { return boolString(c.DigestEnabled) }},
	{Name: "enforceQuota", SysProp: true, Default: "false", Section: secLimits,
		Doc:   "Refuses creates and setData past a hard quota (QUOTAEXCEEDED).",
		parse: boolKey(func(c *Config) *bool { return &c.EnforceQuota }, parseBool),
		value: func(c *Config) string { return boolString(c.EnforceQuota) }},
	{Name: ReadOnlyModeKey, SysProp: true, Default: "false", Section: secLimits,
		Doc: "An ensemble member cut off from its quorum serves reads to read-only clients. Anything but \"true\" is false, as Java's Boolean.getBoolean reads it.",
		parse: func(c *Config, _, v string) error {
			c.setReadOnlyMode(v)
			return nil
		},
		value: func(c *Config) string { return boolString(c.ReadOnlyMode) }},
	{Name: LocalSessionsKey, Default: "false", Section: secLimits,
		Doc:   "An ensemble member's new sessions are local to it, with no txn.",
		parse: func(c *Config, key, v string) error { return c.setLocalSessions(key, v) },
		value: func(c *Config) string { return boolString(c.LocalSessions.Enabled) }},
	{Name: LocalSessionsUpgradingKey, Default: "false", Section: secLimits,
		Doc:   "A local session that creates an ephemeral is upgraded to a global one (otherwise the create fails).",
		parse: func(c *Config, key, v string) error { return c.setLocalSessions(key, v) },
		value: func(c *Config) string { return boolString(c.LocalSessions.Upgrading) }},
	{Name: "maxCnxns", SysProp: true, Default: "0", Section: secLimits,
		Doc: "Client connections allowed in total (ServerCnxnFactory.maxCnxns); a connection past it is closed as soon as it is accepted and counted in connection_rejected. 0 means no limit; a negative value is read as 0, as ZooKeeper does.",
		parse: func(c *Config, _, v string) error {
			n, err := javaDecodeInt(v)
			c.MaxCnxns = max(n, 0)
			return err
		},
		value: func(c *Config) string { return itoa(c.MaxCnxns) }},
	{Name: "request_throttle_max_requests", SysProp: true, Default: "0", Section: secLimits,
		Doc: "Requests in process at once (RequestThrottler); past it further requests wait, their connections unread, until one finishes, and a waiting request whose connection closes is dropped unanswered. 0 means no limit beyond globalOutstandingLimit.",
		parse: func(c *Config, _, v string) error {
			n, err := javaDecodeInt(v)
			c.RequestThrottleMaxRequests = max(n, 0)
			return err
		},
		value: func(c *Config) string { return itoa(c.RequestThrottleMaxRequests) }},
	{Name: "leaderServes", SysProp: true, Default: "yes", Section: secLimits,
		Doc:   "\"no\": an ensemble's leader serves no clients (their connections are closed, as while a member has no quorum), leaving it to the quorum's work. Anything but \"no\" is yes, as ZooKeeper reads it.",
		parse: func(c *Config, _, v string) error { c.LeaderServesNo = v == "no"; return nil },
		value: func(c *Config) string {
			if c.LeaderServesNo {
				return "no"
			}
			return "yes"
		}},

	// Ensemble.
	{Name: "initLimit", ZkdDefault: "10", Section: secEnsemble,
		Doc:   "Ticks a follower may take to connect and sync to the leader; required in an ensemble.",
		parse: intKey(func(c *Config) *int { return &c.InitLimit }, javaParseInt),
		check: func(c *Config) error { return notNegative(c.InitLimit) },
		value: func(c *Config) string { return itoa(c.InitLimit) }},
	{Name: "syncLimit", ZkdDefault: "5", Section: secEnsemble,
		Doc:   "Ticks a follower may lag behind the leader; required in an ensemble.",
		parse: intKey(func(c *Config) *int { return &c.SyncLimit }, javaParseInt),
		check: func(c *Config) error { return notNegative(c.SyncLimit) },
		value: func(c *Config) string { return itoa(c.SyncLimit) }},
	{Name: "connectToLearnerMasterLimit", Default: "0", Section: secEnsemble,
		Doc:   "Ticks a learner may take to connect to its leader (or an observer to its learner master); 0 means initLimit.",
		parse: intKey(func(c *Config) *int { return &c.ConnectToLearnerMasterLimit }, javaParseInt),
		value: func(c *Config) string { return itoa(c.ConnectToLearnerMasterLimit) }},
	{Name: "cnxTimeout", SysProp: true, Default: "5000", ZeroIsDefault: true, Section: secEnsemble,
		Doc: "Milliseconds a connection attempt to another member's election port may take. ZooKeeper takes 0 as no bound; zkd refuses 0 and less, which would let one unreachable member stall the election.",
		parse: func(c *Config, _, v string) error {
			n, err := javaParseInt(v)
			if err != nil {
				return err
			}
			if n <= 0 {
				return errors.New("must be positive: a connection attempt without a bound would stall the election on an unreachable member")
			}
			c.CnxTimeoutMs = n
			return nil
		},
		value: func(c *Config) string { return nonZero(c.CnxTimeoutMs, itoa) }},
	{Name: "syncEnabled", Default: "true", Section: secEnsemble,
		Doc:   "Observers log and snapshot the txns they receive, as zkd's observers always do; false is recognised and not implemented (logged at start-up).",
		parse: syncEnabled},
	{Name: "observer.syncEnabled", SysProp: true, Default: "true", Section: secEnsemble,
		Doc:   "The system property form of syncEnabled, which it overrides in ZooKeeper; the same in zkd.",
		parse: syncEnabled},
	{Name: "server.", Prefix: true, Syntax: "server.N", Section: secEnsemble,
		Doc: "host:quorumPort:electionPort[:participant|observer][;[clientHost:]clientPort]; two or more lines (or one with standaloneEnabled=false) make an ensemble.",
		parse: func(c *Config, key, v string) error {
			s, err := parseServer(strings.TrimPrefix(key, "server."), v)
			if err != nil {
				return err
			}
			if c.Servers == nil {
				c.Servers = make(map[int]Member)
			}
			c.Servers[int(s.ID)] = s
			return nil
		}},
	// ZooKeeper switches to hierarchical quorums for any key starting with "group" or
	// "weight", so those are the prefixes.
	{Name: "group", Prefix: true, Syntax: "group.N", Section: secEnsemble,
		Doc:   "sid:sid:...: a group of a hierarchical quorum; every participant is then in exactly one group.",
		parse: func(c *Config, key, v string) error { _, err := c.Hierarchy.setHierarchyKey(key, v); return err }},
	{Name: "weight", Prefix: true, Syntax: "weight.N", Section: secEnsemble,
		Doc:   "The weight of server N in a hierarchical quorum; participants not listed weigh 1.",
		parse: func(c *Config, key, v string) error { _, err := c.Hierarchy.setHierarchyKey(key, v); return err }},
	{Name: MultiAddressKey, SysProp: true, Default: "false", Section: secEnsemble,
		Doc:   "Allows several '|'-separated addresses in a server.N line.",
		parse: quorumShape,
		value: func(c *Config) string { return boolString(c.QuorumShape.MultiAddressEnabled) }},
	{Name: MultiAddressReachabilityKey, SysProp: true, Default: "true", Section: secEnsemble,
		Doc:   "Accepted for compatibility and unused: zkd dials a member's addresses in turn.",
		parse: quorumShape,
		value: func(c *Config) string { return boolString(!c.QuorumShape.ReachabilityCheckDisabled) }},
	{Name: MultiAddressTimeoutKey, SysProp: true, Default: "1000", ZeroIsDefault: true, Section: secEnsemble,
		Doc:   "Accepted for compatibility and unused.",
		parse: quorumShape,
		value: func(c *Config) string { return nonZero(c.QuorumShape.ReachabilityCheckTimeoutMs, itoa) }},
	{Name: QuorumListenOnAllIPsKey, Default: "false", Section: secEnsemble,
		Doc:   "The quorum and election ports listen on every interface; members still advertise and dial the configured addresses.",
		parse: quorumShape,
		value: func(c *Config) string { return boolString(c.QuorumShape.ListenOnAllIPs) }},
	{Name: ElectionPortBindRetryKey, SysProp: true, Default: itoa(DefaultElectionPortBindRetry), ZeroIsDefault: true, Section: secEnsemble,
		Doc:   "Attempts, a second apart, to bind the election port before start-up fails; 0 means forever.",
		parse: quorumShape,
		value: func(c *Config) string {
			return nonZero(c.QuorumShape.ElectionPortBindRetry, func(int) string { return itoa(c.QuorumShape.ElectionPortBindRetries()) })
		}},
	{Name: ObserverMasterPortKey, Section: secEnsemble,
		Doc:   "When set, followers serve observers on this port and observers sync from a follower rather than the leader.",
		parse: quorumShape,
		value: func(c *Config) string { return nonZero(c.QuorumShape.ObserverMasterPort, itoa) }},

	// Dynamic reconfiguration.
	{Name: ReconfigEnabledKey, Default: "false", Section: secReconfig,
		Doc:   "Allows the reconfig operation.",
		parse: boolKey(func(c *Config) *bool { return &c.ReconfigEnabled }, parseBool),
		value: func(c *Config) string { return boolString(c.ReconfigEnabled) }},
	{Name: StandaloneEnabledKey, Default: "true", Section: secReconfig,
		Doc: "false makes a single server run as a one-member ensemble, which can grow by reconfig.",
		parse: func(c *Config, _, v string) error {
			on, err := parseBool(v)
			c.StandaloneDisabled = !on
			return err
		},
		value: func(c *Config) string { return boolString(!c.StandaloneDisabled) }},
	{Name: DynamicConfigFileKey, Section: secReconfig,
		Doc:   "The file holding the server.N, group.N and weight.N lines (zoo.cfg.dynamic.<version>); they may then not be in zoo.cfg.",
		parse: stringKey(func(c *Config) *string { return &c.DynamicConfigFile }),
		value: func(c *Config) string { return c.DynamicConfigFile }},

	// AdminServer.
	{Name: "admin.enableServer", SysProp: true, Default: "false", Section: secAdmin,
		Doc:   "Serves the AdminServer (ZooKeeper's default is true; zkd's is false).",
		parse: boolKey(func(c *Config) *bool { return &c.AdminEnableServer }, parseBool),
		value: func(c *Config) string { return boolString(c.AdminEnableServer) }},
	{Name: "admin.serverAddress", SysProp: true, Default: "127.0.0.1", ZeroIsDefault: true, Section: secAdmin,
		Doc:   "The AdminServer's address (ZooKeeper's default is 0.0.0.0; zkd's is loopback).",
		parse: stringKey(func(c *Config) *string { return &c.AdminServerAddress }),
		value: func(c *Config) string { return c.AdminServerAddress }},
	{Name: "admin.serverPort", SysProp: true, Default: "8080", ZeroIsDefault: true, Section: secAdmin,
		Doc:   "The AdminServer's port.",
		parse: intKey(func(c *Config) *int { return &c.AdminServerPort }, javaDecodeInt),
		check: func(c *Config) error {
			if c.AdminServerPort < 0 || c.AdminServerPort > 65535 {
				return errors.New("port out of range")
			}
			return nil
		},
		value: func(c *Config) string { return nonZero(c.AdminServerPort, itoa) }},
	{Name: "admin.commandURL", SysProp: true, Default: "/commands", ZeroIsDefault: true, Section: secAdmin,
		Doc:   "The AdminServer's command URL.",
		parse: stringKey(func(c *Config) *string { return &c.AdminCommandURL }),
		check: func(c *Config) error {
			if c.AdminCommandURL != "" && !strings.HasPrefix(c.AdminCommandURL, "/") {
				return errors.New(`must start with "/"`)
			}
			return nil
		},
		value: func(c *Config) string { return c.AdminCommandURL }},
	{Name: "admin.snapshot.enabled", SysProp: true, Default: "true", Section: secAdmin,
		Doc: "Enables the AdminServer's snapshot command.",
		parse: func(c *Config, _, v string) error {
			on, err := strictBool(v)
			c.AdminSnapshotDisabled = !on
			return err
		},
		value: func(c *Config) string { return boolString(!c.AdminSnapshotDisabled) }},
	{Name: "admin.restore.enabled", SysProp: true, Default: "false", Section: secAdmin,
		Doc:   "Enables the AdminServer's restore command (ZooKeeper's default is true; zkd's is false).",
		parse: boolKey(func(c *Config) *bool { return &c.AdminRestoreEnabled }, strictBool),
		value: func(c *Config) string { return boolString(c.AdminRestoreEnabled) }},
	{Name: "admin.rateLimiterIntervalInMS", SysProp: true, Default: "300000", ZeroIsDefault: true, Section: secAdmin,
		Doc: "The least time between two snapshot commands, in ms; 0 or less means no limit.",
		parse: func(c *Config, _, v string) error {
			ms, err := strconv.Atoi(v)
			if err != nil {
				return err
			}
			// ZooKeeper's RateLimiter lets a call through whenever the interval has passed,
			// so an interval <= 0 limits (nearly) nothing; -1 keeps that apart from unset.
			c.AdminRateLimiterMs = max(int64(ms), -1)
			if ms == 0 {
				c.AdminRateLimiterMs = -1
			}
			return nil
		},
		value: func(c *Config) string {
			return nonZero(c.AdminRateLimiterMs, func(ms int64) string { return strconv.FormatInt(max(ms, 0), 10) })
		}},
	{Name: "admin.needClientAuth", SysProp: true, Default: "false", Section: secAdmin,
		Doc:   "HTTPS clients of the AdminServer need a certificate.",
		parse: boolKey(func(c *Config) *bool { return &c.AdminNeedClientAuth }, strictBool),
		value: func(c *Config) string { return boolString(c.AdminNeedClientAuth) }},
	{Name: "admin.portUnification", SysProp: true, Default: "false", Section: secAdmin,
		Doc:   "HTTP and HTTPS on the AdminServer's port (HTTPS with the ssl.quorum.* stores).",
		parse: boolKey(func(c *Config) *bool { return &c.AdminTLS.PortUnification }, strictBool),
		value: func(c *Config) string { return boolString(c.AdminTLS.PortUnification) }},
	{Name: "admin.forceHttps", SysProp: true, Default: "false", Section: secAdmin,
		Doc:   "HTTPS only on the AdminServer's port (with the ssl.quorum.* stores).",
		parse: boolKey(func(c *Config) *bool { return &c.AdminTLS.ForceHTTPS }, strictBool),
		value: func(c *Config) string { return boolString(c.AdminTLS.ForceHTTPS) }},

	// Metrics.
	{Name: "metricsProvider.className", Default: DefaultMetricsProvider, ZeroIsDefault: true, Section: secMetrics,
		Doc:   "The metrics provider: " + PrometheusMetricsProvider + " serves /metrics.",
		parse: func(c *Config, key, v string) error { c.Metrics.setMetricsKey(key, v); return nil },
		value: func(c *Config) string { return c.Metrics.ClassName }},
	{Name: "metricsProvider.", Prefix: true, Syntax: "metricsProvider.X", Section: secMetrics,
		Doc: fmt.Sprintf("The provider's settings: httpHost (%s), httpPort (%d), exportJvmInfo (true), numWorkerThreads, maxQueueSize, workerShutdownTimeoutMs.",
			DefaultMetricsHTTPHost, DefaultMetricsHTTPPort),
		parse: func(c *Config, key, v string) error { c.Metrics.setMetricsKey(key, v); return nil }},

	// Security.
	{Name: "DigestAuthenticationProvider.superDigest", SysProp: true, Section: secSecurity,
		Doc:   "super:<base64 sha1>: the digest of the super user's password.",
		parse: stringKey(func(c *Config) *string { return &c.SuperDigest }),
		value: func(c *Config) string { return c.SuperDigest }},
	{Name: "skipACL", SysProp: true, Default: "no", Section: secSecurity,
		Doc:   "\"yes\" skips every ACL check (reads, writes, reconfig, watch events). Anything but \"yes\" is no, as ZooKeeper reads it; start-up logs a WARN when it is on.",
		parse: func(c *Config, _, v string) error { c.SkipACL = v == "yes"; return nil },
		value: func(c *Config) string {
			if c.SkipACL {
				return "yes"
			}
			return "no"
		}},
	{Name: "audit.enable", SysProp: true, Default: "false", Section: secSecurity,
		Doc: "Audit logging (ZKAuditProvider): true writes ZooKeeper's audit lines (serverStart and serverStop; each client write's create, delete, setData, setAcl, multiOperation or reconfig with its session, user, ip, znode and result; a closed session's ephemeral deletions) to zkd's log, as records with logger=audit whose message is the tab-separated line, at INFO (ERROR for result=failure); only true or false are taken.",
		parse: func(c *Config, _, v string) error {
			on, err := strictBool(v)
			if err != nil {
				return err
			}
			c.AuditEnable = on
			return nil
		},
		value: func(c *Config) string { return strconv.FormatBool(c.AuditEnable) }},
	{Name: "secureClientPort", Section: secSecurity, Doc: "The TLS client port (with the ssl.* stores).", parse: security},
	{Name: "secureClientPortAddress", Section: secSecurity, Doc: "The address the TLS client port listens on; empty means every interface.", parse: security},
	{Name: "client.portUnification", SysProp: true, Default: "false", Section: secSecurity, Doc: "TLS and plaintext clients on clientPort.", parse: security},
	{Name: "client.certReload", SysProp: true, Default: "false", Section: secSecurity, Doc: "Reloads the client-side certificates when their files change.", parse: security},
	{Name: "ssl.quorum.", Prefix: true, SysProp: true, Syntax: "ssl.quorum.*", Section: secSecurity, Doc: "The quorum's (and the AdminServer's) TLS stores and settings.", parse: security},
	{Name: "ssl.", Prefix: true, SysProp: true, Syntax: "ssl.*", Section: secSecurity, Doc: "The client port's TLS stores and settings.", parse: security},
	{Name: "sslQuorum", Default: "false", Section: secSecurity, Doc: "TLS between ensemble members.", parse: security},
	{Name: "portUnification", Default: "false", Section: secSecurity, Doc: "TLS and plaintext members on the quorum and election ports.", parse: security},
	{Name: "sslQuorumReloadCertFiles", SysProp: true, Default: "false", Section: secSecurity, Doc: "Reloads the quorum certificates when their files change.", parse: security},
	{Name: "serverCnxnFactory", SysProp: true, Section: secSecurity, Doc: "Accepted and unused: zkd has one network layer, which does what NIO's and Netty's do.", parse: security},
	{Name: "authProvider.", Prefix: true, SysProp: true, Syntax: "authProvider.N", Section: secSecurity, Doc: "An authentication provider class; zkd has ZooKeeper's four (digest, ip, sasl, x509) and refuses others.", parse: security},
	{Name: "enforce.auth.enabled", SysProp: true, Default: "false", Section: secSecurity, Doc: "Refuses requests from connections not authenticated with one of enforce.auth.schemes.", parse: security},
	{Name: "enforce.auth.schemes", SysProp: true, Section: secSecurity, Doc: "The schemes enforce.auth.enabled accepts, comma-separated.", parse: security},
	{Name: "sessionRequireClientSASLAuth", SysProp: true, Default: "false", Section: secSecurity, Doc: "Refuses requests from connections not authenticated with SASL.", parse: security},
	{Name: "allowSaslFailedClients", SysProp: true, Default: "false", Section: secSecurity, Doc: "Keeps a connection whose SASL exchange failed (unless SASL is enforced).", parse: security},
	{Name: "kerberos.removeHostFromPrincipal", SysProp: true, Default: "false", Section: secSecurity, Doc: "Drops the host from Kerberos principals' ids.", parse: security},
	{Name: "kerberos.removeRealmFromPrincipal", SysProp: true, Default: "false", Section: secSecurity, Doc: "Drops the realm from Kerberos principals' ids.", parse: security},
	{Name: "superUser", SysProp: true, Section: secSecurity, Doc: "A SASL id that is also super.", parse: security},
	{Name: "X509AuthenticationProvider.superUser", SysProp: true, Section: secSecurity, Doc: "An x509 id that is also super.", parse: security},
	{Name: "java.security.auth.login.config", Section: secSecurity, Doc: "The JAAS login configuration file.", parse: security},
	{Name: "sasl.serverconfig", SysProp: true, Default: "Server", ZeroIsDefault: true, Section: secSecurity, Doc: "The JAAS section configuring the client-facing SASL server.", parse: security},
	{Name: "security.auth_to_local", SysProp: true, Default: "DEFAULT", ZeroIsDefault: true, Section: secSecurity, Doc: "Kerberos auth_to_local rules mapping principals to SASL ids.", parse: security},
	{Name: "SASLAuthenticationProvider.superPassword", SysProp: true, Section: secSecurity, Doc: "Replaces the password of the JAAS Server section's user_super.", parse: security},
	{Name: "quorum.auth.enableSasl", Default: "false", Section: secSecurity, Doc: "SASL (DIGEST-MD5) between ensemble members.", parse: security},
	{Name: "quorum.auth.learnerRequireSasl", Default: "false", Section: secSecurity, Doc: "Learners must authenticate to the leader.", parse: security},
	{Name: "quorum.auth.serverRequireSasl", Default: "false", Section: secSecurity, Doc: "Members must authenticate when connecting to this one.", parse: security},
	{Name: "quorum.auth.learner.saslLoginContext", Default: "QuorumLearner", ZeroIsDefault: true, Section: secSecurity, Doc: "The JAAS section a learner logs in with.", parse: security},
	{Name: "quorum.auth.server.saslLoginContext", Default: "QuorumServer", ZeroIsDefault: true, Section: secSecurity, Doc: "The JAAS section a server authenticates learners with.", parse: security},
	{Name: "quorum.auth.kerberos.servicePrincipal", Section: secSecurity, Doc: "Not implemented (zkd's quorum SASL is DIGEST-MD5): setting it stops start-up.", parse: security},

	// zkd's own keys.
	{Name: SessionSecretKey, Section: secZkd,
		Doc:   "The ensemble's session secret file: session passwords are keyed with it instead of ZooKeeper's public derivation. Only in ensembles without ZooKeeper members.",
		parse: func(c *Config, _, v string) error { return c.setSessionSecretFile(v) },
		value: func(c *Config) string { return c.SessionSecretFile }},
	{Name: FastElectionKey, Default: "false", Section: secZkd,
		Doc:   "An election round ends as soon as every member not known to be down agrees. Only when every member is zkd.",
		parse: func(c *Config, _, v string) error { return c.setFastElection(v) },
		value: func(c *Config) string { return boolString(c.FastElection) }},
	{Name: ExtensionsKey, Default: "none", Section: secZkd,
		Doc:   "The extensions beyond ZooKeeper the server enables, comma-separated, or all or none (docs/beyond.md). A stock client sees ZooKeeper whatever is enabled.",
		parse: func(c *Config, _, v string) error { return c.setExtensions(v) },
		value: func(c *Config) string { return cmp.Or(c.Extensions.String(), "none") }},
	{Name: TestZxidCounterStartKey, Default: "0", ZeroIsDefault: true, Section: secZkd,
		Doc:   "For tests only: where a new leader's zxid counter starts (decimal or 0x hex), to reach the counter's end in a few writes; the server warns at start when it is set.",
		parse: func(c *Config, _, v string) error { return c.setTestZxidCounterStart(v) },
		value: func(c *Config) string {
			return nonZero(c.TestZxidCounterStart, func(n int64) string { return "0x" + strconv.FormatInt(n, 16) })
		}},
	{Name: KeeperNodesListedKey, Default: "false", Section: secZkd,
		Doc:   "With the capabilities extension on, getChildren of / lists the virtual /keeper node, as ClickHouse Keeper does (docs/beyond.md).",
		parse: func(c *Config, _, v string) error { return c.setKeeperNodesListed(v) },
		value: func(c *Config) string { return boolString(c.KeeperNodesListed) }},
	{Name: WatchHistoryMaxChangesKey, Default: strconv.Itoa(DefaultWatchHistoryMaxChanges), ZeroIsDefault: true, Section: secZkd,
		Doc:   "With the watch-resume extension: the most changes the server keeps for resumed watches (addWatchSince); a resume from before them gets WATCHHISTORYCOMPACTED.",
		parse: func(c *Config, key, v string) error { return c.setWatchHistory(key, v) },
		value: func(c *Config) string { return nonZero(c.WatchHistoryMaxChanges, strconv.Itoa) }},
	{Name: WatchHistoryMaxBytesKey, Default: strconv.Itoa(DefaultWatchHistoryMaxBytes), ZeroIsDefault: true, Section: secZkd,
		Doc:   "With the watch-resume extension: the most bytes (paths plus 64 per change) that history holds.",
		parse: func(c *Config, key, v string) error { return c.setWatchHistory(key, v) },
		value: func(c *Config) string { return nonZero(c.WatchHistoryMaxBytes, strconv.Itoa) }},
	{Name: MaxBufferLimitKey, Default: strconv.Itoa(DefaultMaxBufferLimit), ZeroIsDefault: true, Section: secZkd,
		Doc:   "With the large-replies extension: the largest limit (bytes) a connection may negotiate with setMaxBuffer for the replies it reads; never below jute.maxbuffer.",
		parse: func(c *Config, _, v string) error { return c.setMaxBufferLimit(v) },
		value: func(c *Config) string { return nonZero(c.MaxBufferLimit, strconv.Itoa) }},
	{Name: AdminAllowedHostsKey, Section: secZkd,
		Doc:   "Names a request's Host may carry at the AdminServer besides loopback ones, comma-separated.",
		parse: func(c *Config, key, v string) error { return c.setAdminGuard(key, v) },
		value: func(c *Config) string { return strings.Join(c.AdminGuards.AllowedHosts, ",") }},
	{Name: AdminRestoreMaxBytesKey, Default: "1073741824", ZeroIsDefault: true, Section: secZkd,
		Doc:   "The largest restore body the AdminServer reads, in bytes.",
		parse: func(c *Config, key, v string) error { return c.setAdminGuard(key, v) },
		value: func(c *Config) string {
			return nonZero(c.AdminGuards.RestoreMaxBytes, func(n int64) string { return strconv.FormatInt(n, 10) })
		}},
	{Name: AdminRestoreReadTimeoutKey, Default: "30000", ZeroIsDefault: true, Section: secZkd,
		Doc:   "The longest a restore body may go without sending a byte, in ms.",
		parse: func(c *Config, key, v string) error { return c.setAdminGuard(key, v) },
		value: func(c *Config) string {
			return nonZero(c.AdminGuards.RestoreReadTimeoutMs, func(n int64) string { return strconv.FormatInt(n, 10) })
		}},

	// ZooKeeper keys zkd recognises and does not implement: Parse lists them in
	// NotImplemented and start-up logs each with what zkd does instead.
	{Name: "electionAlg", Default: "3", Section: secUnimpl, parse: checkInt,
		Unimplemented: "zkd runs fast leader election, ZooKeeper 3.x's only algorithm (3)"},
	{Name: "peerType", Section: secUnimpl,
		Unimplemented: "a member's role comes from its server.N line (:observer), which ZooKeeper also follows when the two differ"},
	{Name: "quorum.cnxn.threads.size", Default: "20", Section: secUnimpl, parse: checkInt,
		Unimplemented: "quorum SASL handshakes run on a goroutine each, with no pool to size"},
	{Name: "jvm.pause.monitor", Default: "false", Section: secUnimpl, parse: checkBool,
		Unimplemented: "no JVM: there are no JVM pauses to watch"},
	{Name: "jvm.pause.info-threshold.ms", Default: "1000", Section: secUnimpl, parse: checkInt,
		Unimplemented: "no JVM: there are no JVM pauses to watch"},
	{Name: "jvm.pause.warn-threshold.ms", Default: "10000", Section: secUnimpl, parse: checkInt,
		Unimplemented: "no JVM: there are no JVM pauses to watch"},
	{Name: "jvm.pause.sleep.time.ms", Default: "500", Section: secUnimpl, parse: checkInt,
		Unimplemented: "no JVM: there are no JVM pauses to watch"},
	{Name: "oraclePath", Section: secUnimpl,
		Unimplemented: "no quorum oracle: a two-member ensemble needs both members for a quorum"},
	{Name: "commitProcessor.numWorkerThreads", SysProp: true, Section: secUnimpl, parse: checkInt,
		Unimplemented: "zkd applies requests on one core goroutine; there is no worker pool to size"},
	{Name: "nio.numSelectorThreads", SysProp: true, Section: secUnimpl, parse: checkInt,
		Unimplemented: "each connection has its own reader and writer goroutines; there are no selector threads"},
	{Name: "nio.numWorkerThreads", SysProp: true, Section: secUnimpl, parse: checkInt,
		Unimplemented: "each connection has its own reader and writer goroutines; there is no worker pool"},
	{Name: "request_throttle_stall_time", SysProp: true, Default: "100", Section: secUnimpl, parse: checkInt,
		Unimplemented: "a request waiting on request_throttle_max_requests is let through the moment a slot frees, with no polling interval"},
	{Name: "request_throttle_drop_stale", SysProp: true, Default: "true", Section: secUnimpl, parse: checkBool,
		Unimplemented: "a waiting request whose connection closes is always dropped (ZooKeeper's default, true)"},
	{Name: "request_stale_connection_check", SysProp: true, Default: "true", Section: secUnimpl, parse: checkBool,
		Unimplemented: "a request whose connection has closed is always stale (ZooKeeper's default, true)"},
	{Name: "request_stale_latency_check", SysProp: true, Default: "false", Section: secUnimpl, parse: checkBool,
		Unimplemented: "a request older than its session timeout is not dropped (ZooKeeper's default, false)"},
	{Name: "audit.impl.class", SysProp: true, Section: secUnimpl,
		Unimplemented: "zkd writes the audit log through its own log (audit.enable), not through a pluggable class"},
	{Name: "sasl.client", SysProp: true, Default: "true", Section: secUnimpl, parse: checkStrictBool,
		Unimplemented: "a Java client setting: a server has no use for it"},
	{Name: "sasl.client.username", SysProp: true, Default: "zookeeper", Section: secUnimpl,
		Unimplemented: "a Java client setting: a server has no use for it"},
	{Name: "sasl.clientconfig", SysProp: true, Default: "Client", Section: secUnimpl,
		Unimplemented: "a Java client setting: a server has no use for it"},
	{Name: "sasl.client.canonicalize.hostname", SysProp: true, Default: "true", Section: secUnimpl, parse: checkStrictBool,
		Unimplemented: "a Java client setting: a server has no use for it"},
	{Name: "sasl.client.allowReverseDnsLookup", SysProp: true, Default: "false", Section: secUnimpl, parse: checkStrictBool,
		Unimplemented: "a Java client setting: a server has no use for it"},
	{Name: "admin.idleTimeout", SysProp: true, Default: "30000", Section: secUnimpl,
		Unimplemented: "Jetty tuning: zkd's AdminServer is Go's net/http with its own timeouts"},
	{Name: "admin.httpVersion", SysProp: true, Default: "11", Section: secUnimpl,
		Unimplemented: "Jetty tuning: zkd's AdminServer speaks HTTP/1.1"},
}

// syncEnabled is the parse of syncEnabled and zookeeper.observer.syncEnabled: zkd's observers
// always log and snapshot, so true is what they do and false is not implemented.
func syncEnabled(_ *Config, _, v string) error {
	on, err := parseBool(v)
	if err != nil {
		return err
	}
	if !on {
		return recognisedOnly("observers log and snapshot the txns they receive anyway, as with syncEnabled=true")
	}
	return nil
}

// keyIndex finds the exact-name rows by name; prefixRows are the Prefix rows, longest name
// first so that "ssl.quorum." wins over "ssl.". They are built by a variable's initializer
// rather than init so that other package-level variables may read defaults.
var keyIndex, prefixRows = indexKeys()

func indexKeys() (map[string]*keyDef, []*keyDef) {
	index := map[string]*keyDef{}
	var prefixes []*keyDef
	for i := range keys {
		k := &keys[i]
		if k.Prefix {
			prefixes = append(prefixes, k)
			continue
		}
		index[k.Name] = k
	}
	slices.SortStableFunc(prefixes, func(a, b *keyDef) int { return len(b.Name) - len(a.Name) })
	return index, prefixes
}

// lookup finds the row for a key as written and the name its parser gets (without a
// "zookeeper." prefix that the row allows).
func lookup(key string) (*keyDef, string) {
	bare, prefixed := strings.CutPrefix(key, "zookeeper.")
	if k := keyIndex[key]; k != nil {
		return k, key
	}
	if k := keyIndex[bare]; prefixed && k != nil && k.SysProp {
		return k, bare
	}
	for _, k := range prefixRows {
		if strings.HasPrefix(key, k.Name) {
			return k, key
		}
		if prefixed && k.SysProp && strings.HasPrefix(bare, k.Name) {
			return k, bare
		}
	}
	return nil, ""
}

// DefaultInt is the table's default for an integer key whose field's zero value stands for
// it (ZeroIsDefault). It panics for a key without an integer default: that is a bug here.
func DefaultInt(name string) int {
	k := keyIndex[name]
	if k == nil {
		panic("config: no key " + name)
	}
	n, err := strconv.Atoi(k.Default)
	if err != nil {
		panic(fmt.Sprintf("config: key %s has no integer default: %v", name, err))
	}
	return n
}

// DefaultString is the table's default for a key whose field's zero value stands for it.
func DefaultString(name string) string {
	k := keyIndex[name]
	if k == nil {
		panic("config: no key " + name)
	}
	return k.Default
}

// applyDefaults parses every row's default (or, zkd, its no-argument default) into c.
func applyDefaults(c *Config, zkd bool) {
	for _, k := range keys {
		v := k.Default
		if k.ZeroIsDefault {
			v = ""
		}
		if zkd && k.ZkdDefault != "" {
			v = k.ZkdDefault
		}
		if v == "" || k.Prefix || k.Unimplemented != "" {
			continue
		}
		if err := k.parse(c, k.Name, v); err != nil {
			panic(fmt.Sprintf("config: default of %s: %v", k.Name, err))
		}
	}
}

// renderKeys writes, in table order, every key String renders whose effective value differs
// from what a zoo.cfg without it would give.
func (c *Config) renderKeys(kv func(k string, v any)) {
	base := fileDefaults()
	for _, k := range keys {
		if k.value == nil {
			continue
		}
		if v := k.value(c); v != k.value(base) {
			kv(k.Name, v)
		}
	}
}

// checkKeys runs every row's own check.
func (c *Config) checkKeys(bad func(key string, value any, format string, args ...any)) {
	for _, k := range keys {
		if k.check == nil {
			continue
		}
		if err := k.check(c); err != nil {
			bad(k.Name, k.value(c), "%w", err)
		}
	}
}
