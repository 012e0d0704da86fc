package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

const serverFormat = "want host:quorumPort:electionPort[:participant|observer][;[clientHost:]clientPort]"

// parseServer reads the value of a server.N key the way ZooKeeper 3.8's QuorumServer does,
// minus name resolution. Several '|'-separated addresses are parsed here; validate refuses
// them unless multiAddress.enabled (quorumshape.go).
func parseServer(id, v string) (Member, error) {
	var s Member
	n, err := strconv.Atoi(id)
	if err != nil || n < 0 {
		return s, fmt.Errorf("server id %q is not a non-negative integer", id)
	}
	s.ID = int64(n)
	serverPart, clientPart, hasClient := strings.Cut(v, ";")
	if strings.Contains(clientPart, ";") {
		return s, errors.New(serverFormat)
	}
	var role string
	for i, addr := range strings.Split(serverPart, "|") {
		a, r, err := parseServerAddr(addr)
		if err != nil {
			return s, err
		}
		if i > 0 && r != "" && role != "" && r != role {
			return s, fmt.Errorf("multiple addresses should have similar roles: %s vs %s", role, r)
		}
		if role == "" {
			role = r
		}
		if i == 0 {
			s.Host, s.QuorumPort, s.ElectionPort = a.Host, a.QuorumPort, a.ElectionPort
		} else {
			s.MoreAddrs = append(s.MoreAddrs, a)
		}
	}
	s.Observer = role == "observer"
	if hasClient && clientPart != "" {
		chost, cfields, err := splitHostPorts(clientPart)
		if err != nil {
			return s, err
		}
		port := chost // a lone port parses as a host without ports
		switch len(cfields) {
		case 0:
		case 1:
			s.ClientHost, port = chost, cfields[0]
		default:
			return s, errors.New(serverFormat)
		}
		if s.ClientPort, err = parsePort(port); err != nil {
			return s, fmt.Errorf("client port: %w", err)
		}
	}
	return s, s.validate()
}

// parseServerAddr reads one host:quorumPort:electionPort[:participant|observer]; role is ""
// when the address names none.
func parseServerAddr(v string) (a MemberAddr, role string, err error) {
	host, fields, err := splitHostPorts(v)
	if err != nil {
		return a, "", err
	}
	if len(fields) < 2 || len(fields) > 3 {
		return a, "", errors.New(serverFormat)
	}
	a.Host = host
	if a.QuorumPort, err = parsePort(fields[0]); err != nil {
		return a, "", fmt.Errorf("quorum port: %w", err)
	}
	if a.ElectionPort, err = parsePort(fields[1]); err != nil {
		return a, "", fmt.Errorf("election port: %w", err)
	}
	if len(fields) == 3 {
		switch role = strings.ToLower(strings.TrimSpace(fields[2])); role {
		case "participant", "observer":
		default:
			return a, "", fmt.Errorf("unrecognised peer type %q", fields[2])
		}
	}
	return a, role, nil
}

// splitHostPorts splits "host:a:b" or "[v6addr]:a:b" into the host and the fields after it.
func splitHostPorts(s string) (host string, fields []string, err error) {
	if rest, ok := strings.CutPrefix(s, "["); ok {
		host, rest, ok = strings.Cut(rest, "]")
		if !ok {
			return "", nil, fmt.Errorf("%q: missing ']' after IPv6 address", s)
		}
		if rest == "" {
			return host, nil, nil
		}
		after, ok := strings.CutPrefix(rest, ":")
		if !ok {
			return "", nil, fmt.Errorf("%q: expected ':' after ']'", s)
		}
		return host, strings.Split(after, ":"), nil
	}
	parts := strings.Split(s, ":")
	return parts[0], parts[1:], nil
}

func parsePort(v string) (int, error) {
	p, err := javaParseInt(v)
	if err != nil {
		return 0, err
	}
	if p < 1 || p > 65535 {
		return 0, fmt.Errorf("port %d out of range", p)
	}
	return p, nil
}

func (s Member) validate() error {
	switch {
	case s.ID < 0:
		return fmt.Errorf("server id %d is negative", s.ID)
	}
	if err := (MemberAddr{Host: s.Host, QuorumPort: s.QuorumPort, ElectionPort: s.ElectionPort}).validate(); err != nil {
		return err
	}
	switch {
	case s.ClientPort < 0 || s.ClientPort > 65535:
		return fmt.Errorf("client port %d out of range", s.ClientPort)
	case s.ClientPort == 0 && s.ClientHost != "":
		return errors.New("client host without a client port")
	case strings.ContainsAny(s.ClientHost, " \t"):
		return fmt.Errorf("bad client host %q", s.ClientHost)
	}
	for _, a := range s.MoreAddrs {
		if err := a.validate(); err != nil {
			return err
		}
	}
	return nil
}
