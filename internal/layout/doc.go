// Package layout states zkd's import rules and checks them (deps_test.go), so that a
// change that breaks one fails the build's tests instead of eroding the design:
//
//   - The pure cores (internal/datatree, watch, session, election, zab, prep, auth, quorum)
//     import no net (net/netip's values excepted), os, syscall, time or sync: they do no
//     I/O, keep no clock and start no goroutines, so tests and the simulation drive them
//     deterministically. Within zkd they import only each other and jute.
//   - internal/admin and internal/storage never import server, directly or not: the
//     server depends on them, not the reverse.
//   - The client (zk and its packages) imports from zkd only jute, the client wire loop it
//     shares with the harnesses (internal/clientwire) and the SASL mechanisms
//     (internal/sasl): never server code.
//   - Product code never depends on the test harnesses under internal/testing/ (zktest,
//     the public harness, may).
//
// It holds no code: the rules live in the test, read from the source files' imports.
package layout
