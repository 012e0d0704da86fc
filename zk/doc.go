// Package zk is a Go client for zkd and for Apache ZooKeeper 3.5 and later. It owns the
// client side of the ZooKeeper protocol: the session (handshake, heartbeats, reconnects to any
// server of the ensemble, expiry), request pipelining, watches, authentication, and the
// choice of server. It speaks only the public wire protocol, so it needs nothing from the
// server that Apache ZooKeeper does not offer.
//
// # Connecting
//
// Connect returns once a session is established:
//
//	c, err := zk.Connect(ctx, "zk1:2181,zk2:2181,zk3:2181/myapp",
//		zk.WithSessionTimeout(10*time.Second))
//	defer c.Close()
//
// The connection string lists the servers (port 2181 by default) and may end with a chroot:
// every path in requests, replies (created names), watch events and errors is then relative
// to it. The server grants a session timeout between its minimum and maximum (SessionTimeout).
// SessionID and SessionPassword identify the session; WithSession resumes it from another
// client or process.
//
// # Operations
//
// Every operation the server offers is one method that takes a context.Context and returns
// when the reply arrives or the context ends: Create, Create2, CreateContainer, CreateTTL,
// Delete, Exists, Get, Set, GetACL, SetACL, Children, AllChildrenNumber, Ephemerals, Sync,
// Multi (and the Txn builder), MultiRead, AddWatch, CheckWatches, RemoveWatches, WhoAmI,
// AddAuth, Reconfig and IncrementalReconfig, and GetConfig (GetConfigW watches the
// configuration). Requests from any number of goroutines are pipelined on one connection
// and answered in the order they were issued. Go starts an operation and returns once its
// request is queued, with a Pending to wait for its results, so that one goroutine can
// pipeline requests in an order of its choosing:
//
//	set := zk.Go(ctx, func(ctx context.Context) (*zk.Stat, error) { return c.Set(ctx, "/n", data, -1) })
//	data, _, err := c.Get(ctx, "/n") // sent after the set: reads its data
//	st, err := set.Wait(ctx)
//
// Errors are *OpError values (operation, path, cause) that errors.Is matches against the
// error codes: ErrNoNode, ErrNodeExists, ErrBadVersion, ErrNotEmpty, ErrNoAuth, ... These are
// the jute.Code values the server sends, so errors.Is(err, zk.ErrNoNode) and errors.Is(err,
// jute.ErrNoNode) both hold. A failed Multi returns a *MultiError naming the failing
// operation. When a context ends first, the call returns the context's error; the request may
// still be applied.
//
// # Connection loss and expiry
//
// The client pings when it has sent nothing for a third of the session timeout and gives a
// server up when it has received nothing for two thirds of it, then tries the next server.
// Requests in flight on a lost connection fail with ErrConnectionLoss (they may or may not
// have been applied); requests issued while disconnected wait for the next connection, for at
// most a session timeout. The session survives if the client reconnects within the timeout; if
// the server has expired it, the client reports StateExpired, fails everything with
// ErrSessionExpired and ends every watch. It never creates a new session by itself: make a
// new Conn.
//
// Events delivers the session's state changes: StateConnected (or StateConnectedReadOnly) on
// each connection, before any watch event the connection causes; StateDisconnected; and a final
// StateExpired, StateAuthFailed or StateClosed.
//
// # Watches
//
// GetW, ExistsW and ChildrenW set one-time watches and return a channel that receives exactly
// one event and is then closed: the change, or EventNotWatching if the session ends first.
// AddWatch sets a persistent (AddWatchPersistent) or persistent recursive
// (AddWatchPersistentRecursive) watch, a *Watcher whose Events channel stays open until
// Remove, Stop or the end of the session. Delivery never blocks the connection: events wait
// in unbounded per-watch queues until the application reads them.
//
// After a reconnect the client re-registers its watches with setWatches from the last zxid it
// saw, so a one-time watch whose node changed meanwhile fires at once and no change is missed.
// As in ZooKeeper, persistent watches are re-armed but not replayed: changes made while the
// client was disconnected are not reported to them. On a zkd server with the watch-resume
// extension, AddWatchSince's watches are: the client resumes them from the last zxid it saw.
//
// # Servers
//
// The server list is shuffled and tried round robin, with an exponential, jittered backoff
// after each full round (WithReconnectBackoff); names are resolved again on every attempt.
// UpdateServerList changes the list and moves clients with ZooKeeper's probabilistic
// rebalancing: when 3 servers become 5, each client moves with probability 0.4, to a new
// server, so every server ends up with a fifth of the clients; clients of removed servers
// always move. With WithConfigWatch the client does that by itself after every
// reconfiguration, taking the client addresses of the ensemble's new configuration.
//
// # Authentication and ACLs
//
// AddAuth adds credentials (e.g. "digest", "user:password"), re-sent after every reconnect.
// OpenACL, ReadACL, CreatorAllACL, WorldACL, DigestACL (with the server's password hashing,
// see DigestID) and IPACL build ACLs. WithDigestSASL and WithKerberosSASL (or WithSASL with
// any mechanism) authenticate every connection with SASL DIGEST-MD5 or GSSAPI right after its
// handshake, before any other request goes out on it; the server then knows the session by
// the "sasl" ACL scheme.
//
// # Compatibility notes
//
// ZooKeeper 3.8 and older cannot check or remove persistent watches by type (they answer
// ErrMarshallingError; Watcher.Remove works around it), and their addWatch changes the mode
// of the session's other watches on the same path (ZOOKEEPER-4466): avoid mixing one-time and
// persistent watches on one path with those servers.
//
// The client logs through log/slog (WithLogger): connects, disconnects and expiry at Info;
// failed connection attempts at Warn, the first per server at once and then at most one per
// server every 5 s (with the count of those not logged), so a Connect that finds no server
// says so; details at Debug.
package zk
