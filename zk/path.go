package zk

import (
	"net"
	"strconv"
	"strings"
	"unicode/utf8"
)

// parsedConnString is a parsed connection string: "host1:2181,host2:2181/app/chroot".
type parsedConnString struct {
	servers []string // "host:port", deduplicated, in the order given
	chroot  string   // "" or a valid path other than "/"
}

// parseConnString splits a connection string the way ZooKeeper's ConnectStringParser does:
// everything from the first '/' is the chroot, the rest is a comma-separated server list
// whose entries default to port 2181.
func parseConnString(s string) (parsedConnString, error) {
	var cs parsedConnString
	hosts := s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		hosts, cs.chroot = s[:i], s[i:]
		if cs.chroot == "/" {
			cs.chroot = ""
		} else if err := validatePath(cs.chroot, false); err != nil {
			return cs, badArgs("chroot %q: %v", cs.chroot, err)
		}
	}
	seen := map[string]bool{}
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		addr, err := normalizeHost(h)
		if err != nil {
			return cs, badArgs("server %q: %v", h, err)
		}
		if !seen[addr] {
			seen[addr] = true
			cs.servers = append(cs.servers, addr)
		}
	}
	if len(cs.servers) == 0 {
		return cs, badArgs("no servers in %q", s)
	}
	return cs, nil
}

// normalizeHost returns host:port, adding the default port.
func normalizeHost(h string) (string, error) {
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		// No port: a bare name, IPv4 address, or bracketed / bare IPv6 address.
		host = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
		port = strconv.Itoa(DefaultPort)
		if strings.Contains(host, ":") && net.ParseIP(host) == nil {
			return "", err
		}
	}
	if host == "" {
		return "", errString("empty host")
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p > 65535 {
		return "", errString("bad port " + port)
	}
	return net.JoinHostPort(host, port), nil
}

type errString string

func (e errString) Error() string { return string(e) }

// validatePath applies ZooKeeper's path rules (PathUtils.validatePath). A sequential create
// may end in '/', since the server appends the sequence number before checking.
func validatePath(p string, sequential bool) error {
	if p == "" {
		return errString("path is empty")
	}
	if p[0] != '/' {
		return errString("path must start with /")
	}
	if len(p) == 1 {
		return nil
	}
	if p[len(p)-1] == '/' && !sequential {
		return errString("path must not end with /")
	}
	prev := '/'
	for i, w := 1, 0; i < len(p); i += w {
		r, size := utf8.DecodeRuneInString(p[i:])
		w = size
		switch {
		case r == utf8.RuneError && size == 1:
			return errString("path is not valid UTF-8")
		case r == 0:
			return errString("null character in path")
		case r == '/' && prev == '/':
			return errString("empty node name in path")
		case r == '.' && prev == '/':
			// "." and ".." are not allowed as whole segments.
			rest := p[i:]
			if j := strings.IndexByte(rest, '/'); j >= 0 {
				rest = rest[:j]
			}
			if rest == "." || rest == ".." {
				return errString("relative path segment in path")
			}
		case r > 0 && r <= 0x1f, r >= 0x7f && r <= 0x9f,
			r >= 0xd800 && r <= 0xf8ff, r >= 0xfff0 && r <= 0xffff:
			return errString("invalid character in path")
		}
		prev = r
	}
	return nil
}

// chroot maps client paths to server paths and back; the zero value is no chroot. Every
// path sent or received goes through it, so it is the one place the prefix is applied.
type chroot string

// toServer validates a client path and prefixes the chroot.
func (c chroot) toServer(p string, sequential bool) (string, error) {
	if err := validatePath(p, sequential); err != nil {
		return "", badArgs("path %q: %v", p, err)
	}
	return c.join(p), nil
}

func (c chroot) join(p string) string {
	if c == "" {
		return p
	}
	if p == "/" {
		return string(c)
	}
	return string(c) + p
}

// toClient strips the chroot from a server path; ok is false for paths outside it.
func (c chroot) toClient(p string) (string, bool) {
	if c == "" {
		return p, true
	}
	if p == string(c) {
		return "/", true
	}
	if len(p) > len(c) && strings.HasPrefix(p, string(c)) && p[len(c)] == '/' {
		return p[len(c):], true
	}
	return p, false
}

// strip is toClient for server replies, which can only name paths inside the chroot.
func (c chroot) strip(p string) string {
	s, _ := c.toClient(p)
	return s
}

// parent returns the parent of a valid path; the root's parent is "".
func parent(p string) string {
	if p == "/" {
		return ""
	}
	i := strings.LastIndexByte(p, '/')
	if i == 0 {
		return "/"
	}
	return p[:i]
}
