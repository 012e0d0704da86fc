// Package compat holds zkd's differential compatibility tests against Apache ZooKeeper 3.8:
// the same scripted client sessions run against both servers and every reply, Stat and watch
// notification is compared; data directories written by one server are opened by the other.
// The package has no code of its own; everything is in its tests, which skip when the
// reference server (internal/refzk) is not installed.
package compat
