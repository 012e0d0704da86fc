// Package recipe owns the coordination recipes built on the zk client: the ones from
// ZooKeeper's recipes guide and paper, done the way Curator, kazoo and etcd's concurrency
// package do them. It uses only zk's public API, so every recipe works against zkd and
// against Apache ZooKeeper alike.
//
//   - Configuration: ConfigWatcher keeps the latest value of a node.
//   - Group membership: Group (Join, Members, Watch).
//   - Locks: Mutex, RWMutex (shared locks), revocation (WithRevocation, Revoke), Semaphore.
//   - Barriers: Barrier and DoubleBarrier.
//   - Queues: Queue (FIFO) and PriorityQueue.
//   - Leader election: Election (Campaign, Resign, Leader, Observe, Done).
//   - Two-phase commit: Tx.
//   - Counter (a compare-and-set loop) and Lease (a time-limited exclusive right).
//
// # Nodes and names
//
// Each recipe works in a directory (its base path) that it creates, with persistent parents,
// when it first needs it. Nodes that a client creates to take part in a lock, an election or
// a semaphore are ephemeral and sequential, named "_c_<guid>-<kind><sequence>" as Curator's
// "protected" nodes are: the guid lets the client find the node it created when the reply to
// the create was lost.
//
// # Errors
//
// Every recipe survives ErrConnectionLoss: reads and idempotent writes are retried (the
// client holds requests until it reconnects), creates are checked by their guid before they
// are retried, and updates whose outcome cannot be known are reported as ErrIndeterminate.
// ErrSessionExpired and ErrClosed end a recipe cleanly: the session's ephemeral nodes, and
// with them its locks, memberships and candidacies, are gone, and the error is returned
// (wrapped: test it with errors.Is). A call whose context ends returns the context's error
// after removing any node it had created.
//
// Recipes never read zk.Conn.Events, which belongs to the application: session loss reaches
// them through their requests and watches (zk.EventNotWatching).
package recipe
