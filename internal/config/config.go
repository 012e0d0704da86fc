// Package config owns zkd's settings: reading a zoo.cfg the way Apache ZooKeeper 3.8 reads it
// (java.util.Properties syntax, ZooKeeper's key names, defaults and checks), the defaults of
// zkd's no-argument mode, validation, and the rendering of the settings for the `conf`
// four-letter word. One table (keys.go) holds every key with its default, parser, check and
// documentation; all of those, and docs/configuration.md, come from it. It also owns quorum configurations as dynamic reconfiguration handles
// them (Dynamic: the /zookeeper/config text, ZooKeeper's zoo.cfg.dynamic.<version> files and
// the edits of zoo.cfg, and the leader's computation of a reconfig request, ApplyReconfig),
// as pure functions and file writes; running a reconfig is the server's.
//
// A Config holds effective values: after Parse or Defaults, settings that ZooKeeper derives from
// others (session timeout bounds from tickTime, dataLogDir from dataDir) are already filled in.
// SetTickTime and SetDataDir change those two afterwards and keep the derived fields in step.
package config

import (
	"cmp"
	"errors"
	"fmt"
	"github.com/zkd-io/zkd/internal/ext"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrInvalid matches (with errors.Is) every error about a bad setting.
var ErrInvalid = errors.New("config: invalid setting")

// KeyError reports a bad value for one key.
type KeyError struct {
	File  string // "" when not read from a file
	Line  int    // 0 when not known (values checked by Validate)
	Key   string
	Value string
	Err   error
}

func (e *KeyError) Error() string {
	where := ""
	switch {
	case e.File != "" && e.Line > 0:
		where = fmt.Sprintf("%s:%d: ", e.File, e.Line)
	case e.File != "":
		where = e.File + ": "
	case e.Line > 0:
		where = fmt.Sprintf("line %d: ", e.Line)
	}
	return fmt.Sprintf("config: %s%s=%q: %v", where, e.Key, e.Value, e.Err)
}

func (e *KeyError) Unwrap() error { return e.Err }

// Is makes every KeyError match ErrInvalid.
func (e *KeyError) Is(target error) bool { return target == ErrInvalid }

// Config is the set of ZooKeeper settings zkd understands. Times are in milliseconds unless a
// field says otherwise.
type Config struct {
	TickTime          int
	InitLimit         int // in ticks
	SyncLimit         int // in ticks
	DataDir           string
	DataLogDir        string // equals DataDir unless zoo.cfg sets dataLogDir
	ClientPort        int
	ClientPortAddress string // "" = all interfaces
	// MaxClientCnxns limits connections per client IP; <= 0 means no limit.
	MaxClientCnxns          int
	MinSessionTimeout       int
	MaxSessionTimeout       int
	ClientPortListenBacklog int // -1 = the OS default

	SnapRetainCount int   // autopurge.snapRetainCount, at least 3
	PurgeInterval   int   // autopurge.purgeInterval, in hours; 0 = no purging
	SnapCount       int   // transactions between snapshots (ZooKeeper randomises around it)
	PreAllocSize    int64 // bytes; zoo.cfg gives KiB
	ForceSync       bool  // fsync the log; zoo.cfg "no" turns it off
	JuteMaxBuffer   int   // largest accepted frame length
	// DigestEnabled is zookeeper.digest.enabled (default true): each txn carries the tree
	// digest it leaves, and members check it after applying.
	DigestEnabled bool

	// FourLetterWhitelist is the enabled four-letter words. It always contains "srvr"; ["*"]
	// means all of them. Use FourLetterAllowed rather than reading it.
	FourLetterWhitelist []string

	ExtendedTypesEnabled     bool   // TTL nodes
	SuperDigest              string // "super:<base64 sha1>", "" = no super user
	GlobalOutstandingLimit   int
	ContainerCheckIntervalMs int

	Servers map[int]Member // ensemble members; empty for standalone
	// Hierarchy is group.N and weight.N (quorum.go): a hierarchical quorum when set.
	Hierarchy Hierarchy

	// Quotas part: zookeeper.enforceQuota refuses writes past hard quotas.
	EnforceQuota bool
	// AdminServer (issue 14): ZooKeeper's admin.* system properties. ZooKeeper enables its
	// AdminServer on 0.0.0.0:8080 by default; zkd serves it only when admin.enableServer
	// is true, and on loopback unless admin.serverAddress says otherwise, so that a zoo.cfg
	// written for ZooKeeper does not open an unauthenticated HTTP port on every interface.
	// Zero values mean the defaults; AdminListenAddr and AdminURL resolve them.
	AdminEnableServer  bool   // admin.enableServer
	AdminServerAddress string // admin.serverAddress; "" = 127.0.0.1
	AdminServerPort    int    // admin.serverPort; 0 = 8080
	AdminCommandURL    string // admin.commandURL; "" = /commands
	// AdminServer snapshot/restore part: 3.9's admin.* keys for the snapshot and restore
	// commands. Zero values are zkd's defaults: ZooKeeper's (snapshot enabled, one call
	// per 5 minutes), except that restore is off unless admin.restore.enabled=true.
	AdminSnapshotDisabled bool  // admin.snapshot.enabled is not "true"
	AdminRestoreEnabled   bool  // admin.restore.enabled is "true" (ZooKeeper's default; not zkd's)
	AdminRateLimiterMs    int64 // admin.rateLimiterIntervalInMS; 0 = 300000, -1 = written as <= 0
	AdminNeedClientAuth   bool  // admin.needClientAuth: HTTPS clients need a certificate
	// AdminServer HTTPS part: admin.portUnification and admin.forceHttps (internal/admin/httpadmin).
	AdminTLS AdminTLSKeys
	// AdminGuards is zkd's zkd.admin.* keys (internal/admin/httpadmin): the Host check's names and the
	// restore body's cap and deadline.
	AdminGuards AdminGuards
	// Prometheus metrics part: the metricsProvider.* keys (internal/metrics, internal/admin/dispatch).
	Metrics MetricsConfig
	// Snapshot compression part: zookeeper.snapshot.compression.method, the format
	// snapshots are written in, as given ("gz" and "snappy" in any case compress; anything
	// else, "" included, means uncompressed, as in ZooKeeper). Snapshots in every format are
	// read whatever it says.
	SnapshotCompression string

	// Security part (issue 12): TLS, SASL, x509 and enforced authentication keys.
	Security Security
	// SessionSecretFile is zkd.sessionSecretFile (sessionsecret.go); "" = ZooKeeper's
	// session passwords.
	SessionSecretFile string
	// ReadOnlyMode is readonlymode.enabled (readonly.go).
	ReadOnlyMode bool
	// FastElection is zkd.fastElection (fastelection.go).
	FastElection bool
	// TestZxidCounterStart is zkd.test.zxidCounterStart (fastelection.go): tests only.
	TestZxidCounterStart int64
	// Extensions is zkd.extensions: the opt-in extensions beyond ZooKeeper the server
	// enables (internal/ext); none by default.
	Extensions ext.Set
	// KeeperNodesListed is zkd.keeperNodesListed: getChildren("/") lists the capabilities
	// extension's virtual /keeper (fastelection.go).
	KeeperNodesListed bool
	// WatchHistoryMaxChanges and WatchHistoryMaxBytes bound the watch-resume extension's
	// change history (watchhistory.go).
	WatchHistoryMaxChanges, WatchHistoryMaxBytes int
	// MaxBufferLimit is zkd.maxBufferLimit: the most a connection of the large-replies
	// extension may negotiate with setMaxBuffer (maxbuffer.go); 0 is the default.
	MaxBufferLimit int
	// LocalSessions is localSessionsEnabled and localSessionsUpgradingEnabled
	// (localsessions.go).
	LocalSessions LocalSessions
	// QuorumShape is multiAddress.*, quorumListenOnAllIPs, electionPortBindRetry and
	// observerMasterPort (quorumshape.go).
	QuorumShape QuorumShape

	// Dynamic reconfiguration (issue 13, dynamic.go). ReconfigEnabled is reconfigEnabled;
	// StandaloneDisabled is standaloneEnabled=false (a single server then runs as a
	// one-member ensemble). DynamicConfigFile is dynamicConfigFile as written (ZooKeeper
	// opens it relative to the working directory); when set, Servers and Hierarchy come
	// from it and DynamicVersion from its name. DynamicVersion is the version of Servers'
	// configuration: 0 when they come from the zoo.cfg itself. NextDynamic is the
	// configuration in <zoo.cfg>.dynamic.next (proposed, not yet committed), read only with
	// a dynamicConfigFile, as ZooKeeper does; nil when there is none.
	ReconfigEnabled    bool
	StandaloneDisabled bool
	DynamicConfigFile  string
	DynamicVersion     int64
	NextDynamic        *Dynamic

	// SkipACL is zookeeper.skipACL=yes: no ACL is checked.
	SkipACL bool
	// AuditEnable is zookeeper.audit.enable=true: ZooKeeper's audit log is written.
	AuditEnable bool
	// MaxCnxns is zookeeper.maxCnxns: client connections allowed in total; 0 = no limit.
	MaxCnxns int
	// RequestThrottleMaxRequests is zookeeper.request_throttle_max_requests: requests in
	// process at once; 0 = no limit beyond GlobalOutstandingLimit.
	RequestThrottleMaxRequests int
	// LeaderServesNo is zookeeper.leaderServes=no: an ensemble's leader serves no clients.
	LeaderServesNo bool
	// FsyncWarningThresholdMs is zookeeper.fsync.warningthresholdms: a slower fsync of the
	// txn log is logged and counted. 0 = the default (1000), -1 = written as 0 or less. Use
	// FsyncWarningThreshold.
	FsyncWarningThresholdMs int64
	// SnapshotTrustEmpty is zookeeper.snapshot.trust.empty: a data directory with log
	// entries and no snapshot starts from the log alone.
	SnapshotTrustEmpty bool
	// ConnectToLearnerMasterLimit is connectToLearnerMasterLimit, in ticks; 0 = InitLimit.
	ConnectToLearnerMasterLimit int
	// CnxTimeoutMs is zookeeper.cnxTimeout: the bound on dialling a member's election port;
	// 0 = the default (5000). Use CnxTimeout.
	CnxTimeoutMs int

	// Unknown lists keys (in file order) that neither zkd nor ZooKeeper 3.8/3.9 knows (a
	// typo, or another program's key). ZooKeeper turns such keys into "zookeeper."-prefixed
	// system properties; zkd ignores them. NotImplemented lists the keys ZooKeeper reads that
	// zkd recognises and does not implement (the key table's Unimplemented rows), with what
	// zkd does instead. LogIgnored logs both, each with its own message.
	Unknown        []string
	NotImplemented []IgnoredKey
}

// IgnoredKey is a ZooKeeper key zkd recognises and does not implement, as zoo.cfg wrote it.
type IgnoredKey struct {
	Key, Value string
	// Instead is what zkd does instead, or why it needs nothing.
	Instead string
}

// LogIgnored logs the keys Parse ignored: a ZooKeeper key zkd does not implement with what
// zkd does instead, apart from an unknown key, which is most likely a typo.
func (c *Config) LogIgnored(logger *slog.Logger) {
	for _, k := range c.NotImplemented {
		logger.Warn("ignoring ZooKeeper key zkd does not implement", "key", k.Key, "value", k.Value, "zkd", k.Instead)
	}
	for _, k := range c.Unknown {
		logger.Warn("ignoring unknown config key (not a ZooKeeper 3.8/3.9 key: a typo?)", "key", k)
	}
}

// Defaults returns the settings of zkd's no-argument mode: a loopback-only server on port 2181
// keeping its data in ./zkd-data. (A zoo.cfg that omits a key gets ZooKeeper's default for it
// instead; for tickTime that is 3000, and dataDir and clientPort have none.) Both come from
// the key table (keys.go): its ZkdDefault and Default columns.
func Defaults() *Config {
	c := &Config{}
	applyDefaults(c, true)
	c.resolve()
	return c
}

// fileDefaults is what ZooKeeper assumes for keys a zoo.cfg leaves out (the table's Default
// column). -1 and "" mark values derived from other keys after parsing.
func fileDefaults() *Config {
	c := &Config{}
	applyDefaults(c, false)
	return c
}

const (
	minSnapRetainCount = 3 // ZooKeeper raises smaller autopurge.snapRetainCount values to this
	minSnapCount       = 2 // ZooKeeper raises smaller snapCount values to this
)

// Load reads and validates the zoo.cfg at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return parse(data, path)
}

// Parse reads and validates a zoo.cfg. Keys it leaves out get ZooKeeper's defaults, not those of
// Defaults. All bad values are reported, joined; each matches ErrInvalid.
func Parse(r io.Reader) (*Config, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("config: reading: %w", err)
	}
	return parse(data, "")
}

func parse(data []byte, file string) (*Config, error) {
	props, err := parseProperties(data)
	if err != nil {
		if file != "" {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, file, err)
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	// Properties is a map: a repeated key keeps only its last value, wherever it was.
	last := make(map[string]int, len(props))
	for i, p := range props {
		last[p.Key] = i
	}
	c := fileDefaults()
	var errs []error
	_, hasDynamicFile := last[DynamicConfigFileKey]
	for i, p := range props {
		if last[p.Key] != i {
			continue
		}
		if hasDynamicFile && isDynamicKey(p.Key) {
			errs = append(errs, &KeyError{File: file, Line: p.Line, Key: p.Key, Value: p.Value,
				Err: fmt.Errorf("parameter: %s must be in a separate dynamic config file", p.Key)})
			continue
		}
		err := c.set(p.Key, p.Value)
		if ni, ok := errors.AsType[*notImplementedError](err); ok {
			c.NotImplemented = append(c.NotImplemented, IgnoredKey{Key: p.Key, Value: p.Value, Instead: ni.reason})
			continue
		}
		if errors.Is(err, errUnknownKey) {
			if err = checkUnknownKey(p.Key, p.Value); err == nil {
				c.Unknown = append(c.Unknown, p.Key)
				continue
			}
		}
		if err != nil {
			errs = append(errs, &KeyError{File: file, Line: p.Line, Key: p.Key, Value: p.Value, Err: err})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if hasDynamicFile {
		if err := c.loadDynamic(file); err != nil {
			return nil, err
		}
	}
	c.resolve()
	if err := c.validate(file); err != nil {
		return nil, err
	}
	return c, nil
}

// resolve fills in the values ZooKeeper derives from other keys.
func (c *Config) resolve() {
	if c.DataLogDir == "" {
		c.DataLogDir = c.DataDir
	}
	minTimeout, maxTimeout := SessionTimeoutBounds(c.TickTime)
	if c.MinSessionTimeout == -1 {
		c.MinSessionTimeout = minTimeout
	}
	if c.MaxSessionTimeout == -1 {
		c.MaxSessionTimeout = maxTimeout
	}
	c.SnapRetainCount = max(c.SnapRetainCount, minSnapRetainCount)
	c.PurgeInterval = max(c.PurgeInterval, 0)
	c.SnapCount = max(c.SnapCount, minSnapCount)
}

// SessionTimeoutBounds are the session timeout bounds ZooKeeper derives from tickTime when
// minSessionTimeout and maxSessionTimeout are not set.
func SessionTimeoutBounds(tickTime int) (minTimeout, maxTimeout int) {
	return 2 * tickTime, 20 * tickTime
}

// SetTickTime changes tickTime after parsing (a flag overriding the file); session timeout
// bounds that were derived from the old value follow the new one.
func (c *Config) SetTickTime(ms int) {
	oldMin, oldMax := SessionTimeoutBounds(c.TickTime)
	newMin, newMax := SessionTimeoutBounds(ms)
	if c.MinSessionTimeout == oldMin {
		c.MinSessionTimeout = newMin
	}
	if c.MaxSessionTimeout == oldMax {
		c.MaxSessionTimeout = newMax
	}
	c.TickTime = ms
}

// SetDataDir changes dataDir after parsing; dataLogDir follows unless it was set apart.
func (c *Config) SetDataDir(dir string) {
	if c.DataLogDir == c.DataDir {
		c.DataLogDir = dir
	}
	c.DataDir = dir
}

// ClientAddr is the client port's host:port ("" host = every interface).
func (c *Config) ClientAddr() string {
	return net.JoinHostPort(c.ClientPortAddress, strconv.Itoa(c.ClientPort))
}

var errUnknownKey = errors.New("unknown key")

// set applies one zoo.cfg entry through its row of the key table. A row zkd does not
// implement only checks the value, then answers a notImplementedError.
func (c *Config) set(key, v string) error {
	k, name := lookup(key)
	if k == nil {
		return errUnknownKey
	}
	if k.parse != nil {
		if err := k.parse(c, name, v); err != nil {
			return err
		}
	}
	if k.Unimplemented != "" {
		return recognisedOnly(k.Unimplemented)
	}
	return nil
}

// parseWhitelist follows ZooKeeper: comma-separated, trimmed, "*" enables everything, and
// "srvr" is always enabled.
func parseWhitelist(v string) []string {
	list := []string{}
	for cmd := range strings.SplitSeq(v, ",") {
		cmd = javaTrim(cmd)
		if cmd == "*" {
			return []string{"*"}
		}
		if cmd != "" && !slices.Contains(list, cmd) {
			list = append(list, cmd)
		}
	}
	if !slices.Contains(list, "srvr") {
		list = append(list, "srvr")
	}
	return list
}

// FourLetterAllowed reports whether the whitelist enables cmd. It does not know which commands
// exist: "*" allows any name.
func (c *Config) FourLetterAllowed(cmd string) bool {
	return cmd == "srvr" || slices.Contains(c.FourLetterWhitelist, "*") || slices.Contains(c.FourLetterWhitelist, cmd)
}

// javaParseInt is Integer.parseInt: optional sign, decimal digits, 32-bit range.
func javaParseInt(v string) (int, error) {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, numError(err)
	}
	return int(n), nil
}

// javaDecodeInt is Integer.decode: optional sign, then 0x/0X/# for hex, a leading 0 for octal,
// decimal otherwise; 32-bit range.
func javaDecodeInt(v string) (int, error) {
	s, neg := v, false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	base := 10
	switch {
	case strings.HasPrefix(s, "0x"), strings.HasPrefix(s, "0X"):
		base, s = 16, s[2:]
	case strings.HasPrefix(s, "#"):
		base, s = 16, s[1:]
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	if s == "" || s[0] == '-' || s[0] == '+' {
		return 0, errors.New("not an integer")
	}
	n, err := strconv.ParseUint(s, base, 32)
	if err != nil {
		return 0, numError(err)
	}
	if neg {
		if n > 1<<31 {
			return 0, errors.New("out of the 32-bit integer range")
		}
		return -int(n), nil
	}
	if n > 1<<31-1 {
		return 0, errors.New("out of the 32-bit integer range")
	}
	return int(n), nil
}

func numError(err error) error {
	if errors.Is(err, strconv.ErrRange) {
		return errors.New("out of the 32-bit integer range")
	}
	return errors.New("not an integer")
}

// ErrNotBoolean matches (with errors.Is) the error for a boolean key whose value is neither
// "true" nor "false".
var ErrNotBoolean = errors.New(`must be "true" or "false"`)

func parseBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, ErrNotBoolean
}

// Validate checks the rules ZooKeeper enforces at start-up, plus the ranges zkd needs. It
// reports every violation, joined; each matches ErrInvalid.
func (c *Config) Validate() error { return c.validate("") }

func (c *Config) validate(file string) error {
	var errs []error
	bad := func(key string, value any, format string, args ...any) {
		errs = append(errs, &KeyError{File: file, Key: key, Value: fmt.Sprint(value), Err: fmt.Errorf(format, args...)})
	}
	c.checkKeys(bad)
	switch {
	case c.ClientPort < 0 || c.ClientPort > 65535:
		bad("clientPort", c.ClientPort, "port out of range")
	case c.ClientPort == 0 && c.ClientPortAddress != "":
		bad("clientPortAddress", c.ClientPortAddress, "clientPortAddress is set but clientPort is not set")
	case c.ClientPort == 0 && len(c.Servers) == 0:
		bad("clientPort", c.ClientPort, "clientPort is not set")
	}
	if c.MinSessionTimeout > c.MaxSessionTimeout {
		bad("minSessionTimeout", c.MinSessionTimeout,
			"minSessionTimeout must not be larger than maxSessionTimeout (%d)", c.MaxSessionTimeout)
	}
	if len(c.Servers) > 0 {
		if c.InitLimit == 0 {
			bad("initLimit", c.InitLimit, "initLimit is not set")
		}
		if c.SyncLimit == 0 {
			bad("syncLimit", c.SyncLimit, "syncLimit is not set")
		}
	}
	c.validateAdminTLS(bad)
	c.Metrics.validate(bad)
	c.Security.validate(bad)
	c.Hierarchy.validate(c.Servers, bad)
	c.QuorumShape.validate(c.Servers, bad)
	for _, id := range slices.Sorted(maps.Keys(c.Servers)) {
		s := c.Servers[id]
		key := fmt.Sprintf("server.%d", id)
		if err := s.validate(); err != nil {
			bad(key, s, "%v", err)
		} else if s.ID != int64(id) {
			bad(key, s, "listed under id %d but has ID %d", id, s.ID)
		}
	}
	return errors.Join(errs...)
}

// AdminListenAddr is the AdminServer's host:port (AdminServer, issue 14).
func (c *Config) AdminListenAddr() string {
	host := cmp.Or(c.AdminServerAddress, DefaultString("admin.serverAddress"))
	port := cmp.Or(c.AdminServerPort, DefaultInt("admin.serverPort"))
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// FsyncWarningThreshold is how long an fsync of the txn log may take before it is logged
// (fsync.warningthresholdms).
func (c *Config) FsyncWarningThreshold() time.Duration {
	ms := cmp.Or(c.FsyncWarningThresholdMs, int64(DefaultInt("fsync.warningthresholdms")))
	return time.Duration(max(ms, 0)) * time.Millisecond
}

// CnxTimeout bounds a connection attempt to a member's election port (cnxTimeout).
func (c *Config) CnxTimeout() time.Duration {
	return time.Duration(cmp.Or(c.CnxTimeoutMs, DefaultInt("cnxTimeout"))) * time.Millisecond
}

// AdminURL is the AdminServer's command URL (AdminServer, issue 14).
func (c *Config) AdminURL() string {
	return cmp.Or(c.AdminCommandURL, DefaultString("admin.commandURL"))
}

// String renders the config as a zoo.cfg that Parse reads back to an equal Config (Unknown
// aside): the keys of the table whose value is not what leaving them out gives, then the
// members and the metrics provider's settings. Prefixed names are not used, so ZooKeeper
// reads it the same way.
func (c *Config) String() string {
	var b strings.Builder
	kv := func(k string, v any) { fmt.Fprintf(&b, "%s=%s\n", k, escapeValue(fmt.Sprint(v))) }
	c.renderKeys(kv)
	c.Metrics.render(kv)
	if c.DynamicConfigFile == "" {
		// With a dynamicConfigFile the members live in that file; ZooKeeper refuses them in
		// both.
		for _, id := range slices.Sorted(maps.Keys(c.Servers)) {
			kv(fmt.Sprintf("server.%d", id), c.Servers[id].render(false))
		}
		c.Hierarchy.render(kv)
	}
	return b.String()
}

// escapeValue writes v so that parseProperties (and Java) read it back unchanged: backslashes
// and control characters are escaped and anything outside printable ASCII is written as
// \uXXXX. (Leading and trailing whitespace cannot survive: ZooKeeper trims values.)
func escapeValue(v string) string {
	var b strings.Builder
	for _, r := range v {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || r > 0x7e:
			for _, u := range utf16Units(r) {
				fmt.Fprintf(&b, `\u%04X`, u)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func utf16Units(r rune) []rune {
	if r < 0x10000 {
		return []rune{r}
	}
	r -= 0x10000
	return []rune{0xD800 + r>>10, 0xDC00 + r&0x3FF}
}
