// Package dispatch answers the observer commands from an admin.Backend: the four-letter
// words, the AdminServer's JSON commands (but snapshot and restore, which stream) and the
// Prometheus source. It decides which backend queries a command takes, which ones are
// rationed, and adds what belongs to the process rather than to the server (environment,
// file descriptors, directory sizes); internal/admin writes the bytes. It never imports the
// server: the server answers the Backend, with copies.
package dispatch
