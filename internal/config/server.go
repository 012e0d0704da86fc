package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

const serverFormat = "want host:quorumPort:electionPort[:participant|observer][;[clientHost:]clientPort]"

// parseServer reads the value of a server.N key the way ZooKeeper 3.8's QuorumServer does,
// minus name resolution. Multiple addresses per server ('|') are off by default in ZooKeeper
// and not supported by zkd.
func parseServer(id, v string) (ServerSpec, error) {
	var s ServerSpec
	n, err := strconv.Atoi(id)
	if err != nil || n < 0 {
		return s, fmt.Errorf("server id %q is not a non-negative integer", id)
	}
	s.ID = n
	serverPart, clientPart, hasClient := strings.Cut(v, ";")
	if strings.Contains(clientPart, ";") {
		return s, errors.New(serverFormat)
	}
	if strings.Contains(serverPart, "|") {
		return s, errors.New("multiple addresses per server are not supported")
	}
	host, fields, err := splitHostPorts(serverPart)
	if err != nil {
		return s, err
	}
	if len(fields) < 2 || len(fields) > 3 {
		return s, errors.New(serverFormat)
	}
	s.Host = host
	if s.QuorumPort, err = parsePort(fields[0]); err != nil {
		return s, fmt.Errorf("quorum port: %w", err)
	}
	if s.ElectionPort, err = parsePort(fields[1]); err != nil {
		return s, fmt.Errorf("election port: %w", err)
	}
	if len(fields) == 3 {
		switch strings.ToLower(fields[2]) {
		case "participant":
		case "observer":
			s.Observer = true
		default:
			return s, fmt.Errorf("unrecognised peer type %q", fields[2])
		}
	}
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

func (s ServerSpec) validate() error {
	switch {
	case s.ID < 0:
		return fmt.Errorf("server id %d is negative", s.ID)
	case s.Host == "" || strings.ContainsAny(s.Host, " \t"):
		return fmt.Errorf("bad host %q", s.Host)
	case s.QuorumPort < 1 || s.QuorumPort > 65535:
		return fmt.Errorf("quorum port %d out of range", s.QuorumPort)
	case s.ElectionPort < 1 || s.ElectionPort > 65535:
		return fmt.Errorf("election port %d out of range", s.ElectionPort)
	case s.QuorumPort == s.ElectionPort:
		return errors.New("quorum and election port must be different")
	case s.ClientPort < 0 || s.ClientPort > 65535:
		return fmt.Errorf("client port %d out of range", s.ClientPort)
	case s.ClientPort == 0 && s.ClientHost != "":
		return errors.New("client host without a client port")
	case strings.ContainsAny(s.ClientHost, " \t"):
		return fmt.Errorf("bad client host %q", s.ClientHost)
	}
	return nil
}
