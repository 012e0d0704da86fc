// Package httpadmin serves ZooKeeper's AdminServer over HTTP and HTTPS: routing and method
// rules, the header limit, the Host check against DNS rebinding, the identity rule of the
// snapshot and restore commands (which the console's writes share), those two commands'
// handling (rate limits, streaming, body caps), and the TLS listener. It asks the server
// only through Backend; the commands' answers come from internal/admin/dispatch.
package httpadmin
