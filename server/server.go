// Package server owns zkd's client-facing server: it accepts connections, speaks the
// ZooKeeper client protocol, and runs every request through the pipeline prepare -> log ->
// apply -> reply. A standalone server is an ensemble of one: the log step is where
// replication will sit.
//
// One goroutine, the core, owns the tree, sessions, watches and the prepared-txn overlay;
// connection goroutines decode and encode, the log goroutine appends and fsyncs (group
// commit), and the snapshot goroutine writes fuzzy snapshots.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkd-io/zkd/internal/admin"
	"github.com/zkd-io/zkd/internal/admin/dispatch"
	"github.com/zkd-io/zkd/internal/admin/learnerqueue"
	"github.com/zkd-io/zkd/internal/auth"
	"github.com/zkd-io/zkd/internal/clock"
	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/internal/datatree"
	"github.com/zkd-io/zkd/internal/ext"
	"github.com/zkd-io/zkd/internal/metrics"
	"github.com/zkd-io/zkd/internal/peer"
	"github.com/zkd-io/zkd/internal/prep"
	"github.com/zkd-io/zkd/internal/session"
	"github.com/zkd-io/zkd/internal/storage"
	"github.com/zkd-io/zkd/internal/tlsconf"
	"github.com/zkd-io/zkd/internal/watch"
)

type applyResult = datatree.Result

// Config is what the server needs to run; FromConfig fills it from a parsed zoo.cfg. Zero
// fields take defaults (setDefaults): those of zoo.cfg keys come from config's key table.
type Config struct {
	ListenAddr        string // host:port for clients
	DataDir           string
	DataLogDir        string // defaults to DataDir
	TickTime          int    // ms
	MinSessionTimeout int    // ms; 0 = derived from TickTime (config.SessionTimeoutBounds)
	MaxSessionTimeout int    // ms; 0 = derived from TickTime
	MaxClientCnxns    int    // per IP; 0 = unlimited (not the key's default)
	// MaxCnxns limits client connections in total (zookeeper.maxCnxns); one past it is
	// closed as soon as it is accepted. 0 = no limit.
	MaxCnxns     int
	SnapCount    int
	PreAllocSize int64
	// NoSync skips fsync (zoo.cfg forceSync=no): faster, and acknowledged writes can be
	// lost in a power failure. The zero value is the safe one.
	NoSync bool
	// NoDigest turns the per-txn tree digest off (zookeeper.digest.enabled=false): txns
	// carry none and none is compared (digest.go). The zero value is ZooKeeper's default.
	NoDigest      bool
	JuteMaxBuffer int
	ExtendedTypes bool
	SuperDigest   string
	SkipACL       bool
	// Audit writes ZooKeeper's audit log (zookeeper.audit.enable=true) to Logger, with
	// logger=audit: see audit.go.
	Audit bool
	// EnforceAuthSchemes, when not empty, refuses every request but auth and sasl from a
	// connection that has not authenticated with one of these schemes: the reply is
	// SESSIONCLOSEDREQUIRESASLAUTH and the connection is closed (ZooKeeper's
	// enforce.auth.enabled and enforce.auth.schemes, or sessionRequireClientSASLAuth).
	EnforceAuthSchemes []string
	// SecureListenAddr is the secure client port's host:port (secureClientPortAddress,
	// secureClientPort), served with TLS; "" for none. TLS is its configuration.
	SecureListenAddr string
	TLS              *tls.Config
	// ClientPortUnification serves TLS (with TLS) and plaintext clients on ListenAddr, told
	// apart by their first bytes within TLSDetectTimeout (client.portUnification).
	ClientPortUnification bool
	TLSDetectTimeout      time.Duration
	// AuthProviders is the optional authentication providers configured (authProvider.N;
	// x509 also by default with a secure client port, config.Security.AuthSchemes): sasl and
	// x509 ACL entries are valid only with theirs, and without x509 a TLS client that
	// presents a certificate is disconnected.
	AuthProviders auth.Providers
	// NewSASLServer, when set, serves sasl requests: it starts a connection's exchange
	// (the JAAS Server section's mechanism). nil answers them AUTHFAILED and closes.
	NewSASLServer func() (SASLServer, error)
	// SASLSuperUsers are SASL authorization ids that are also super (zookeeper.superUser).
	SASLSuperUsers []string
	// AllowSASLFailedClients keeps a connection whose SASL exchange failed, unless sasl is
	// an enforced scheme (allowSaslFailedClients).
	AllowSASLFailedClients bool
	// EnforceQuota refuses creates and setData past a hard quota with QUOTAEXCEEDED and
	// logs passed soft ones (zookeeper.enforceQuota).
	EnforceQuota bool
	// GlobalOutstandingLimit bounds requests read but not yet answered; past it the
	// server stops reading from clients.
	GlobalOutstandingLimit int
	// RequestThrottleMaxRequests bounds requests in process at once
	// (zookeeper.request_throttle_max_requests, ZooKeeper's RequestThrottler): past it the
	// connections' readers wait for a slot, as at GlobalOutstandingLimit; 0 = no bound but
	// that one.
	RequestThrottleMaxRequests int
	// LeaderServesNo is zookeeper.leaderServes=no: as leader, this member serves no
	// clients (Leader.lead does not hand the client port its ZooKeeperServer).
	LeaderServesNo bool
	// SnapshotTrustEmpty is zookeeper.snapshot.trust.empty: a data directory with log
	// entries and no snapshot starts from the log alone instead of being refused.
	SnapshotTrustEmpty bool
	// FsyncWarningThreshold: an fsync of the txn log that takes longer is logged and
	// counted (zookeeper.fsync.warningthresholdms), both in whole milliseconds as
	// ZooKeeper compares them; 0 = 1 s, negative = 0 ms.
	FsyncWarningThreshold time.Duration
	// MaxOutgoingBytes bounds a connection's unsent replies; past it the connection is
	// closed (a client that does not read).
	MaxOutgoingBytes       int
	ContainerCheckInterval time.Duration
	SnapRetainCount        int
	PurgeInterval          time.Duration // 0 = no autopurge
	FourLetterWhitelist    []string      // "*" = all
	ConnectTimeout         time.Duration // time allowed for the ConnectRequest
	WriteTimeout           time.Duration
	ServerID               int64
	// SnapshotCompression is the format snapshots are written in
	// (zookeeper.snapshot.compression.method); snapshots of every format are read.
	SnapshotCompression storage.SnapCompression
	// Peers lists the ensemble's members, this server (ServerID) included; empty means
	// standalone.
	Peers []config.Member
	// Hierarchy is the ensemble's group.N and weight.N lines: a hierarchical quorum when set,
	// majority otherwise.
	Hierarchy config.Hierarchy
	// ReconfigEnabled is reconfigEnabled: dynamic reconfiguration (reconfig.go). Peers and
	// Hierarchy are then the configuration of version ConfigVersion (0 for zoo.cfg's
	// server.N lines, else a dynamic file's), and LastSeenConfig a newer one proposed
	// before the server stopped (zoo.cfg.dynamic.next), or nil.
	ReconfigEnabled bool
	ConfigVersion   int64
	LastSeenConfig  []byte
	// StandaloneEnabled is standaloneEnabled: with it a reconfig must leave at least two
	// participants.
	StandaloneEnabled bool
	// PersistConfig writes a configuration's files, on the storage goroutine: the committed
	// one (next false: zoo.cfg.dynamic.<version> and zoo.cfg's dynamicConfigFile line) or
	// a proposed one (next true: zoo.cfg.dynamic.next, removed when text is nil). nil
	// writes nothing.
	PersistConfig func(text []byte, version int64, next bool) error
	InitLimit     int // ticks
	SyncLimit     int // ticks
	// ConnectToLearnerMasterLimit bounds, in ticks, a learner's connecting to its leader or
	// learner master (connectToLearnerMasterLimit); 0 = InitLimit.
	ConnectToLearnerMasterLimit int
	// CnxTimeout bounds a connection attempt to a member's election port
	// (zookeeper.cnxTimeout); 0 = 5 s.
	CnxTimeout time.Duration
	// QuorumListenOnAllIPs makes the quorum and election ports listen on every interface
	// (quorumListenOnAllIPs); members still advertise and dial the configured addresses.
	QuorumListenOnAllIPs bool
	// ObserverMasterPort, when > 0, makes a synced follower serve observers on that port of
	// its quorum address's host, and an observer sync from a follower there rather than
	// from the leader (ZooKeeper's observerMasterPort, observermaster.go).
	ObserverMasterPort int
	// ElectionPortBindRetry is how many times binding the election port is tried, a second
	// apart, before Start fails: 0 means ZooKeeper's default 3, negative forever (until
	// Close).
	ElectionPortBindRetry int
	// ElectionTransport carries election messages; nil means TCP on the election port.
	ElectionTransport ElectionTransport
	// QuorumTLS secures the election connections and the learners' connections to the
	// leader (sslQuorum, portUnification, the ssl.quorum.* stores); nil = plaintext.
	QuorumTLS *peer.TLS
	// QuorumSASL authenticates ensemble members to each other on the election and quorum
	// ports (quorum.auth.enableSasl, quorumauth.go); nil means off.
	QuorumSASL *peer.QuorumSASL
	// ConfText renders the conf four-letter word, given the data and log directory sizes
	// and, for an ensemble member, the committed configuration's text (nil standalone).
	ConfText func(dataSize, logSize int64, quorum []byte) string
	// AdminAddr is where the AdminServer (HTTP, adminhttp.go) listens; "" = not served.
	AdminAddr string
	// AdminCommandURL is the AdminServer's command URL; "" = /commands.
	AdminCommandURL string
	// AdminSnap configures the AdminServer's snapshot and restore commands
	// (internal/admin/httpadmin).
	AdminSnap AdminSnapConfig
	// AdminAllowedHosts are the names (zkd.admin.allowedHosts) a request's Host may carry
	// besides loopback names and addresses (internal/admin/httpadmin). The check is on when
	// the AdminServer is bound to loopback or names are listed.
	AdminAllowedHosts []string
	// AdminTLS serves the AdminServer over HTTPS (admin.forceHttps, admin.portUnification,
	// internal/admin/httpadmin); nil = plain HTTP.
	AdminTLS *AdminTLS
	// InitialConfig is the text of the zoo.cfg the server was started from, which the
	// AdminServer's initial_configuration command answers.
	InitialConfig string
	// SessionSecretFile names the ensemble's session secret file (zkd.sessionSecretFile,
	// sessionsecret.go); "" keeps ZooKeeper's session passwords.
	SessionSecretFile string
	// ReadOnlyMode lets an ensemble member without a quorum serve reads to read-only
	// clients (readonlymode.enabled, readonly.go).
	ReadOnlyMode bool
	// Extensions are the opt-in extensions beyond ZooKeeper this server enables (zoo.cfg's
	// zkd.extensions); the zero Set is ZooKeeper.
	Extensions ext.Set
	// KeeperNodesListed lists the capabilities extension's virtual /keeper in getChildren
	// of "/" (zkd.keeperNodesListed, capsnodes.go); off, a listing of "/" is ZooKeeper's.
	KeeperNodesListed bool
	// WatchHistoryMaxChanges and WatchHistoryMaxBytes bound the change history the
	// watch-resume extension replays from (zkd.watchHistory.*, watchresume.go); zero takes
	// internal/config's defaults, negative keeps nothing.
	WatchHistoryMaxChanges, WatchHistoryMaxBytes int
	// MaxBufferLimit bounds what a connection may negotiate with the large-replies
	// extension's setMaxBuffer (zkd.maxBufferLimit, bigreply.go); zero takes
	// internal/config's default.
	MaxBufferLimit int
	// FastElection ends an election round as soon as every member not known to be down
	// agrees, instead of after ZooKeeper's finalize wait (zkd.fastElection; only for
	// ensembles of zkd servers).
	FastElection bool
	// LocalSessions makes an ensemble member's new sessions local to it, with no txn
	// (localSessionsEnabled, localsess.go); LocalSessionsUpgrading upgrades one to a global
	// session when it creates an ephemeral (localSessionsUpgradingEnabled), which otherwise
	// fails with EPHEMERALONLOCALSESSION. A standalone server ignores both, as ZooKeeper's.
	LocalSessions          bool
	LocalSessionsUpgrading bool
	Logger                 *slog.Logger
	// FS is the file system; nil means the real one.
	FS storage.FS
	// Clock is the time sessions, ticks and timers run on; nil means the wall clock.
	Clock clock.Clock
	// Rand is the server's random source (snapshot spacing); nil means one seeded from
	// the time.
	Rand *rand.Rand
	// Metrics receives the server's measurements and reads its numbers for the
	// Prometheus endpoint; nil means a metrics.Options.MntrOnly registry, which keeps the
	// summaries mntr prints (ZooKeeper's DefaultMetricsProvider).
	Metrics *metrics.Registry

	// zxidCounterStart is where a new leader's zxid counter starts (tests of the rollover).
	zxidCounterStart int64
	// ackSampleEvery replaces ZooKeeper's ackLoggingFrequency (defaultAckSampleEvery) for
	// tests: the leader times the acks of proposals whose zxid is a multiple of it.
	ackSampleEvery int64
	// cutAfterSnap makes a learner drop its leader connection once, right after loading a
	// SNAP, before NEWLEADER (tests of that window).
	cutAfterSnap *atomic.Bool
	// finalizeWaitMs replaces the election's finalize wait (tests that only the fast
	// decision can pass); 0 = ZooKeeper's 200 ms.
	finalizeWaitMs int64
}

// setDefaults fills in the fields left zero. A field that is a zoo.cfg key takes the key
// table's value for zkd with no config file (config.Defaults), so that a Config written by
// hand (tests, embedders) runs as `zkd` with no arguments does; the one exception is
// MaxClientCnxns, whose zero means no limit. The other defaults are the server's own: they
// have no zoo.cfg key.
func (c *Config) setDefaults() {
	d := config.Defaults()
	if c.Metrics == nil {
		c.Metrics = metrics.New(metrics.Options{MntrOnly: true})
	}
	if c.ListenAddr == "" {
		c.ListenAddr = d.ClientAddr()
	}
	if c.DataDir == "" {
		c.DataDir = d.DataDir
	}
	if c.DataLogDir == "" {
		c.DataLogDir = c.DataDir
	}
	if c.TickTime <= 0 {
		c.TickTime = d.TickTime
	}
	minTimeout, maxTimeout := config.SessionTimeoutBounds(c.TickTime)
	if c.MinSessionTimeout <= 0 {
		c.MinSessionTimeout = minTimeout
	}
	if c.MaxSessionTimeout <= 0 {
		c.MaxSessionTimeout = maxTimeout
	}
	if c.SnapCount <= 1 {
		c.SnapCount = d.SnapCount
	}
	if c.PreAllocSize <= 0 {
		c.PreAllocSize = d.PreAllocSize
	}
	if c.JuteMaxBuffer <= 0 {
		c.JuteMaxBuffer = d.JuteMaxBuffer
	}
	if c.GlobalOutstandingLimit <= 0 {
		c.GlobalOutstandingLimit = d.GlobalOutstandingLimit
	}
	if c.MaxOutgoingBytes <= 0 {
		c.MaxOutgoingBytes = 64 << 20
	}
	if c.ContainerCheckInterval == 0 {
		c.ContainerCheckInterval = time.Duration(d.ContainerCheckIntervalMs) * time.Millisecond
	}
	if c.SnapRetainCount < d.SnapRetainCount {
		c.SnapRetainCount = d.SnapRetainCount
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 10 * time.Second
	}
	if c.FsyncWarningThreshold == 0 {
		c.FsyncWarningThreshold = time.Duration(config.DefaultInt("fsync.warningthresholdms")) * time.Millisecond
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 30 * time.Second
	}
	if c.ServerID <= 0 {
		c.ServerID = 1
	}
	if c.InitLimit <= 0 {
		c.InitLimit = d.InitLimit
	}
	if c.SyncLimit <= 0 {
		c.SyncLimit = d.SyncLimit
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.FS == nil {
		c.FS = storage.OSFS{}
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x7a6b64))
	}
	if c.FourLetterWhitelist == nil {
		c.FourLetterWhitelist = d.FourLetterWhitelist
	}
}

// outstandingSlots is how many requests may be read and not yet answered: globalOutstandingLimit,
// or request_throttle_max_requests when that is smaller. zkd's readers wait for a slot
// before reading a request on, so the throttler's bound on requests in process and the
// connection-level bound are one semaphore: a request past the throttle waits unread (ZooKeeper
// reads it and holds it in the throttler), and one whose connection closes meanwhile is
// dropped unanswered, as ZooKeeper drops stale requests.
func (c *Config) outstandingSlots() int {
	if n := c.RequestThrottleMaxRequests; n > 0 && n < c.GlobalOutstandingLimit {
		return n
	}
	return c.GlobalOutstandingLimit
}

// Server is a standalone zkd server.
type Server struct {
	cfg Config
	log *slog.Logger
	// audit writes the audit log (audit.go); nil when it is off.
	audit *slog.Logger
	// audited: serverStart was logged, and serverStop is still to be.
	audited atomic.Bool
	clk     clock.Clock
	// bigReplies rate-limits the warning about replies over jute.maxbuffer (bigreply.go);
	// core-owned.
	bigReplies bigReplyLog
	// reading is the read request doRead is answering, for warnBigReply; core-owned.
	reading *request
	// ln is the client port's listener; a reconfig can replace it (clientport.go), so it is
	// read and written under lnMu once the server runs.
	ln        net.Listener
	lnMu      sync.Mutex
	closeOnce sync.Once
	// draining: Shutdown closed the listeners on purpose (the accept loops end quietly).
	draining atomic.Bool
	// lastSnapNanos is how long the last snapshot took to write, for Shutdown's deadline.
	lastSnapNanos atomic.Int64
	closeErr      error
	// secureLn is the secure client port's listener (TLS), nil when there is none.
	secureLn net.Listener
	start    time.Time

	events chan event
	// applyEvents is the event list each applied txn's events go into (core-owned).
	applyEvents []datatree.Event
	// watchHistory is the watch-resume extension's change history (watchresume.go), nil
	// without the extension; watchHistBuf is the buffer a txn's changes pass through.
	watchHistory *watch.History
	watchHistBuf []watch.Change
	stopping     chan struct{}
	// admin is what the server keeps for the observer surfaces (adminhttp.go).
	admin    adminState
	stopOnce sync.Once
	wg       sync.WaitGroup
	tokens   chan struct{}
	// fsyncSlow counts fsyncs of the txn log over FsyncWarningThreshold (ZooKeeper's
	// ServerStats fsyncThresholdExceedCount).
	fsyncSlow atomic.Int64
	fatal     chan error

	packetsReceived, packetsSent atomic.Int64
	counters                     counters
	responseSizes                responseSizes
	latency                      latencyStats
	// learnerQPs are the learner_handler_qp_* summaries by learner sid (learnerstats.go).
	learnerQPs learnerqueue.Set

	perIP   map[string]int
	perIPMu sync.Mutex

	// allConns lists every open connection, including those that never finish the
	// handshake (stat and cons show them).
	connsMu  sync.Mutex
	allConns map[*conn]struct{}
	// connsSwept is set, under connsMu, once stopping has closed every connection: a
	// connection accepted after that is closed at once (closeConnsOnStop).
	connsSwept bool

	// xidTokens numbers the 32-bit tokens of version-11 connections' xids (xid64.go).
	xidTokens atomic.Int32

	// core-owned
	tree       *datatree.Tree
	prep       *prep.Preparer
	watches    *watch.Manager
	watchConns map[watch.WatcherID]*conn
	// listViews are the views paged listings read, by zxid (listpage.go).
	listViews   map[int64]*listView
	nextWatcher watch.WatcherID
	sessions    map[int64]*clientSession
	tracker     *session.Tracker
	// grace is the session clock of the session-grace extension (grace.go); nil when off.
	grace *session.Grace
	// unserved: this ensemble member has not served since unservedAt (wall ms): it is
	// looking, or leading or following without a quorum yet (grace.go).
	unserved   bool
	unservedAt int64
	// ticks counts the core's ticks, for tests that step a fake clock; core-owned.
	ticks         int64
	ids           *session.IDGenerator
	conns         map[*conn]struct{}
	pending       []*pendingTxn
	lastProposed  int64
	txnsSinceSnap int
	snapThreshold int
	snappedZxid   atomic.Int64 // zxid of the newest complete snapshot (written or loaded)
	walk          *snapshotWalk
	rng           *rand.Rand
	startSnapshot bool // take a background snapshot once serving
	// damaged (core): this ensemble member lost txns to damage and votes with no zxid
	// until a leader has refilled it (persist.go's openLog, Server.electionZxid).
	damaged bool
	// dirLocks hold dataDir and dataLogDir for this process (storage.LockDir) until Close.
	dirLocks []io.Closer
	// digest is the per-txn digest check's state (digest.go).
	digest digestState
	// stepDown, when set, ends the leadership once the current event is handled.
	stepDown error

	// history keeps the last committed txns as proposed, for a new leader's DIFF syncs.
	history historyRing
	// role is what this server is now (standalone, looking, leader, follower, observer).
	role role

	persist
	ens   ensemble
	quota quotaState
	// secret holds the session secrets; read by the core, reloaded off it.
	secret sessionSecret
}

// New recovers the data directory and returns a server ready to Serve.
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	switch cfg.SnapshotCompression {
	case storage.SnapUncompressed, storage.SnapGzip, storage.SnapSnappy:
	default:
		// Caught here, not at the first background snapshot, which would only log it.
		return nil, fmt.Errorf("server: unknown snapshot compression %q", string(cfg.SnapshotCompression))
	}
	s := &Server{
		cfg:        cfg,
		log:        cfg.Logger,
		audit:      newAuditLogger(&cfg),
		clk:        cfg.Clock,
		events:     make(chan event, 1024),
		stopping:   make(chan struct{}),
		tokens:     make(chan struct{}, cfg.outstandingSlots()),
		fatal:      make(chan error, 1),
		perIP:      make(map[string]int),
		allConns:   make(map[*conn]struct{}),
		watches:    watch.New(),
		watchConns: make(map[watch.WatcherID]*conn),
		sessions:   make(map[int64]*clientSession),
		tracker:    session.NewTracker(int64(cfg.TickTime)),
		conns:      make(map[*conn]struct{}),
		rng:        cfg.Rand,
	}
	s.start = s.clk.Now()
	if cfg.Extensions.Has(ext.SessionGrace) {
		s.grace = newGrace(cfg.TickTime)
		s.grace.Observe(s.start.UnixMilli())
	}
	s.responseSizes.reset()
	s.admin.traceMask.Store(admin.DefaultTraceMask)
	s.ids = session.NewIDGenerator(cfg.ServerID, s.start.UnixMilli())
	if err := s.lockDirs(); err != nil {
		return nil, err
	}
	started := false
	defer func() {
		if !started {
			s.unlockDirs()
		}
	}()
	if err := s.loadSessionSecret(); err != nil {
		return nil, err
	}
	if s.ensembleMode() {
		// Before recovery, which fills /zookeeper/config from it.
		if err := s.initMembership(); err != nil {
			return nil, err
		}
	}
	loadStart := time.Now()
	if err := s.recover(); err != nil {
		return nil, err
	}
	cfg.Metrics.DBInit(time.Since(loadStart))
	s.resetSnapThreshold()
	s.role = &standaloneRole{s: s}
	if s.ensembleMode() {
		s.role = lookingRole{}
		if _, ok := s.peer(cfg.ServerID); !ok {
			s.txlog.Close()
			return nil, fmt.Errorf("server: server id %d is not among the %d server.N entries", cfg.ServerID, len(cfg.Peers))
		}
		if err := s.initEnsemble(); err != nil {
			s.txlog.Close()
			return nil, err
		}
	}
	started = true
	return s, nil
}

// Listen binds the client port. Serve must follow.
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w", s.cfg.ListenAddr, err)
	}
	if s.cfg.ClientPortUnification {
		if s.cfg.TLS == nil {
			ln.Close()
			return fmt.Errorf("server: client port unification configured without TLS settings")
		}
		ln = tlsconf.Unify(ln, s.cfg.TLS, s.cfg.TLSDetectTimeout)
	}
	s.setListener(ln)
	if err := s.listenSecure(); err != nil {
		ln.Close()
		s.setListener(nil)
		return err
	}
	return nil
}

func (s *Server) setListener(ln net.Listener) {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	s.ln = ln
}

func (s *Server) listener() net.Listener {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	return s.ln
}

// Addr is the address clients connect to.
func (s *Server) Addr() string { return s.listener().Addr().String() }

// Start listens (if needed) and serves in the background.
func (s *Server) Start() error {
	if s.listener() == nil {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	s.startPersist()
	if s.ensembleMode() {
		if s.cfg.ElectionTransport == nil {
			t, err := newTCPElectionTransport(s)
			if err != nil {
				return err
			}
			s.cfg.ElectionTransport = t
		}
		s.ens.transport = s.cfg.ElectionTransport
		// Nothing runs concurrently yet: the core is not started.
		s.startLooking("start-up")
	}
	// Read before the core starts: from then on only the core touches the tree.
	zxid := s.tree.LastZxid()
	if s.startSnapshot {
		s.startSnapshot = false
		s.startBackgroundSnapshot()
	}
	s.wg.Add(3)
	go s.run()
	go s.closeConnsOnStop()
	go s.acceptLoop(s.listener())
	if s.secureLn != nil {
		s.wg.Add(1)
		go s.acceptLoop(s.secureLn)
	}
	if s.secret.path != "" {
		s.wg.Add(1)
		go s.watchSessionSecret()
	}
	// Only now: a scrape's gathering is a step on the core, which runs from here on.
	s.cfg.Metrics.SetSource(dispatch.MetricsSource(adminBackend{s: s}))
	// Last, so that a failure leaves a started server that Close stops as usual.
	if err := s.startAdmin(); err != nil {
		return err
	}
	s.log.Info("zkd serving", "addr", s.Addr(), "dataDir", s.cfg.DataDir, "zxid", hex(zxid))
	if s.audit != nil {
		s.audited.Store(true)
		s.auditServer(auditOpStart, auditSuccess)
	}
	return nil
}

// Fatal reports an unrecoverable error (the log could not be written); the server has
// stopped serving when it fires.
func (s *Server) Fatal() <-chan error { return s.fatal }

func (s *Server) acceptLoop(ln net.Listener) {
	defer s.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-s.stopping:
				return
			default:
			}
			if s.replaced(ln) || s.draining.Load() {
				return // a reconfig moved the client port (clientport.go), or Shutdown
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.log.Error("accept failed", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		s.newConn(nc)
	}
}

func (s *Server) newConn(nc net.Conn) {
	raw := nc
	switch tc := nc.(type) {
	case *tls.Conn:
		raw = tc.NetConn()
	case *tlsconf.UnifiedConn:
		raw = tc.NetConn()
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	remote := nc.RemoteAddr().String()
	ip, _, err := net.SplitHostPort(remote)
	if err != nil {
		ip = remote
	}
	if max := s.cfg.MaxClientCnxns; max > 0 {
		s.perIPMu.Lock()
		if s.perIP[ip] >= max {
			s.perIPMu.Unlock()
			s.log.Warn("too many connections from one address", "ip", ip, "max", max)
			s.counters.add(cntConnectionRejected, 1)
			nc.Close()
			return
		}
		s.perIP[ip]++
		s.perIPMu.Unlock()
	}
	c := &conn{
		srv:         s,
		nc:          nc,
		remote:      remote,
		ip:          ip,
		established: make(chan bool, 1),
		wake:        make(chan struct{}, 1),
		done:        make(chan struct{}),
		accepted:    s.clk.Now(),
	}
	s.connsMu.Lock()
	if max, n := s.cfg.MaxCnxns, len(s.allConns); max > 0 && n >= max {
		// ServerCnxnFactory.limitTotalNumberOfCnxns: past zookeeper.maxCnxns the new
		// connection is closed at once (NIO's doAccept closes it; both count it rejected).
		s.connsMu.Unlock()
		s.log.Warn("too many connections", "connections", n, "max", max)
		s.counters.add(cntConnectionRejected, 1)
		c.close()
		return
	}
	swept := s.connsSwept
	s.allConns[c] = struct{}{}
	s.connsMu.Unlock()
	s.wg.Add(2)
	go c.readLoop()
	go c.writeLoop()
	if swept {
		c.close()
	}
}

// closeConnsOnStop closes every client connection when the server stops: one goroutine for
// all of them, where a watcher per connection would cost each idle session its stack.
func (s *Server) closeConnsOnStop() {
	defer s.wg.Done()
	<-s.stopping
	s.connsMu.Lock()
	s.connsSwept = true
	conns := make([]*conn, 0, len(s.allConns))
	for c := range s.allConns {
		conns = append(conns, c)
	}
	s.connsMu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// acquire takes an outstanding-request slot, blocking the connection's reader while the
// server is at globalOutstandingLimit.
func (s *Server) acquire(c *conn) bool {
	// Nearly always a slot is free: a one-case select is far cheaper than the full one.
	select {
	case s.tokens <- struct{}{}:
		return true
	default:
	}
	select {
	case s.tokens <- struct{}{}:
		return true
	case <-c.done:
		return false
	case <-s.stopping:
		return false
	}
}

func (s *Server) release() {
	select {
	case <-s.tokens:
	default:
	}
}

// Close stops serving at once: connections are closed, the log is synced and closed.
// Sessions are kept in the data directory and survive a restart.
func (s *Server) Close() error {
	return s.stop(time.Time{})
}

// Shutdown stops serving gracefully, as net/http's Server.Shutdown does: it stops
// accepting connections, waits until no request is in flight (or ctx ends), then stops as
// Close does. The final snapshot of a clean stop (see closePersist) is skipped when ctx's
// deadline leaves less than twice what the last snapshot took. It returns ctx's error when
// ctx ended the wait for requests in flight; the stop is complete either way.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	s.closeListeners()
	var drainErr error
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for len(s.tokens) > 0 && drainErr == nil {
		select {
		case <-ctx.Done():
			drainErr = ctx.Err()
		case <-s.stopping: // a storage failure stopped it meanwhile
			drainErr = errors.New("server: stopped while draining")
		case <-tick.C:
		}
	}
	deadline, _ := ctx.Deadline()
	return errors.Join(drainErr, s.stop(deadline))
}

// beginStop is the stop sequence's first step, the same for Close, Shutdown and a storage
// failure (failStop): nothing more is accepted and every goroutine is told to stop. It
// never blocks, as failStop needs.
func (s *Server) beginStop() {
	s.stopOnce.Do(func() {
		close(s.stopping)
		s.closeListeners()
	})
}

func (s *Server) closeListeners() {
	if ln := s.listener(); ln != nil {
		ln.Close()
	}
	if s.secureLn != nil {
		s.secureLn.Close()
	}
}

// stop is the rest of the sequence: the AdminServer, the goroutines, then the storage
// (closePersist; its final snapshot only if it fits before deadline, when one is set). A
// second call (a test's cleanup after its own) finds everything closed.
func (s *Server) stop(deadline time.Time) error {
	if s.audited.CompareAndSwap(true, false) {
		// As ZooKeeper's shutdown hook, when the stop begins.
		s.auditServer(auditOpStop, auditInvoked)
	}
	s.beginStop()
	s.admin.once.Do(s.stopAdmin)
	s.wg.Wait()
	s.closeOnce.Do(func() { s.closeErr = s.closePersist(deadline) })
	return s.closeErr
}

// query runs f on the core goroutine and waits for it; false when the server stops first
// (f may then still run). Observers go through the admin backend (adminbackend.go), which
// copies values on the core with it.
func (s *Server) query(f func()) bool {
	done := make(chan struct{})
	select {
	case s.events <- event{kind: evQuery, query: func() { f(); close(done) }}:
	case <-s.stopping:
		return false
	}
	select {
	case <-done:
		return true
	case <-s.stopping:
		return false
	}
}

func (s *Server) shutdownCore() {
	// The election port closes first, so that peers which notice the role's connections
	// closing find it refusing (zkd.fastElection decides without this member at once).
	if s.ens.transport != nil {
		s.ens.transport.Close()
	}
	s.role.stop()
	if s.walk != nil {
		s.walk.abort()
		s.walk = nil
	}
	for c := range s.conns {
		c.close()
	}
}

func hex(v int64) string { return "0x" + strconv.FormatUint(uint64(v), 16) }

// latencyStats accumulates request latencies in ms for the four-letter words.
type latencyStats struct {
	mu       sync.Mutex
	sum      admin.Summary
	last     int64
	lastResp int64
}

// processStart anchors lresp, which ZooKeeper reports on a monotonic clock.
var processStart = time.Now()

func (l *latencyStats) add(ms int64) {
	l.mu.Lock()
	l.sum.Add(ms)
	l.last = ms
	l.lastResp = time.Since(processStart).Milliseconds()
	l.mu.Unlock()
}

func (l *latencyStats) summary() admin.Summary {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sum
}

func (l *latencyStats) lastLatency() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

func (l *latencyStats) lastResponse() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastResp
}

func (l *latencyStats) reset() {
	l.mu.Lock()
	l.sum = admin.Summary{}
	l.last = 0
	l.mu.Unlock()
}

func (s *Server) recordLatency(c *conn, r *request) {
	if r.recv.IsZero() {
		return
	}
	d := time.Since(r.recv)
	ms := d.Milliseconds()
	s.latency.add(ms)
	c.stats.add(ms)
	s.cfg.Metrics.Request(r.hdr.Type, d)
}

// Mode is this server's role as srvr reports it (standalone, leader, follower or
// observer), or "" while it does not serve clients (looking for a leader, or syncing).
func (s *Server) Mode() string {
	var m string
	if !s.query(func() {
		if s.role.serving() {
			m = s.role.mode()
		}
	}) {
		return ""
	}
	return m
}
