// Package compat holds zkd's differential compatibility tests against Apache ZooKeeper 3.8:
// the same client sessions (raw frames, go-zookeeper, kazoo) run against both servers and
// every reply, Stat and watch notification is compared; data directories written by one
// server are opened by the other. The package has no code of its own; everything is in its
// tests, which skip when the reference server (internal/refzk) or kazoo is not installed, or
// fail with ZKD_REQUIRE_TOOLS set (internal/needs).
//
// It also runs clients' own test suites against ensembles of zkd processes built from the
// tree: kazoo's TestReconfig and TestReadOnlyMode through pytest (testdata/kazoo_zkd.py
// makes kazoo's harness start zkd where it starts ZooKeeper's JVM), and go-zookeeper's
// reconfig tests, ported.
//
// Environment:
//   - ZKD_REQUIRE_TOOLS: fail instead of skipping when ZooKeeper or kazoo is missing.
//   - ZKD_COMPAT_VERBOSE: log ZooKeeper's whole transcript of every script group, and the
//     output of the zkd processes the client suites ran against.
package compat
