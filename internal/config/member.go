package config

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// Member is one member of an ensemble: a
// `server.N=host:quorumPort:electionPort[:participant|observer][;[clientHost:]clientPort]`
// line. It is zkd's one membership type: the parsed zoo.cfg, the quorum configurations of
// reconfiguration (Dynamic) and the running server (server.Config.Peers) all hold Members.
// A member's weight and group, for hierarchical quorums, are the configuration's Hierarchy.
type Member struct {
	ID           int64
	Host         string
	QuorumPort   int
	ElectionPort int
	Observer     bool   // an observer rather than a participant
	ClientHost   string // "" when the line gives no client address (or only a port)
	ClientPort   int    // 0 when the line has no client part
	// MoreAddrs are the addresses after the first ('|'-separated, multiAddress.enabled):
	// the member listens on all of them and the others dial them in turn after the first.
	// Host, QuorumPort and ElectionPort are the first.
	MoreAddrs []MemberAddr
}

// MemberAddr is one host:quorumPort:electionPort of a server.N line.
type MemberAddr struct {
	Host         string
	QuorumPort   int
	ElectionPort int
}

// String renders the member in zoo.cfg syntax (the value of the server.N key), as
// QuorumServer.toString does: several addresses are sorted by host.
func (s Member) String() string { return s.render(true) }

// render is String; unsorted keeps the addresses in the order written, so that the first
// stays first when the line is read back.
func (s Member) render(sorted bool) string {
	role := "participant"
	if s.Observer {
		role = "observer"
	}
	out := s.addrsString(sorted) + ":" + role
	switch {
	case s.ClientPort != 0 && s.ClientHost != "":
		out += fmt.Sprintf(";%s:%d", bracketHost(s.ClientHost), s.ClientPort)
	case s.ClientPort != 0:
		out += fmt.Sprintf(";%d", s.ClientPort)
	}
	return out
}

func bracketHost(h string) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]"
	}
	return h
}

func (a MemberAddr) String() string {
	return fmt.Sprintf("%s:%d:%d", bracketHost(a.Host), a.QuorumPort, a.ElectionPort)
}

func (a MemberAddr) validate() error {
	switch {
	case a.Host == "" || strings.ContainsAny(a.Host, " \t"):
		return fmt.Errorf("bad host %q", a.Host)
	case a.QuorumPort < 1 || a.QuorumPort > 65535:
		return fmt.Errorf("quorum port %d out of range", a.QuorumPort)
	case a.ElectionPort < 1 || a.ElectionPort > 65535:
		return fmt.Errorf("election port %d out of range", a.ElectionPort)
	case a.QuorumPort == a.ElectionPort:
		return errors.New("quorum and election port must be different")
	}
	return nil
}

// Addrs is every address of the member, the first one first, then the others as written.
func (s Member) Addrs() []MemberAddr {
	return append([]MemberAddr{{s.Host, s.QuorumPort, s.ElectionPort}}, s.MoreAddrs...)
}

// QuorumAddr and ElectionAddr are the first address's quorum and election host:port.
func (s Member) QuorumAddr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.QuorumPort)) }
func (s Member) ElectionAddr() string {
	return net.JoinHostPort(s.Host, strconv.Itoa(s.ElectionPort))
}

// QuorumAddrs and ElectionAddrs are every address's quorum and election host:port, the first
// first.
func (s Member) QuorumAddrs() []string {
	var out []string
	for _, a := range s.Addrs() {
		out = append(out, net.JoinHostPort(a.Host, strconv.Itoa(a.QuorumPort)))
	}
	return out
}

func (s Member) ElectionAddrs() []string {
	var out []string
	for _, a := range s.Addrs() {
		out = append(out, net.JoinHostPort(a.Host, strconv.Itoa(a.ElectionPort)))
	}
	return out
}

// sortedAddrs is Addrs in the order ZooKeeper keeps them: sorted by host, then port.
func (s Member) sortedAddrs() []MemberAddr {
	addrs := s.Addrs()
	slices.SortStableFunc(addrs, func(a, b MemberAddr) int {
		return cmp.Or(strings.Compare(a.Host, b.Host), a.QuorumPort-b.QuorumPort)
	})
	return addrs
}

// addrsString is the address part of QuorumServer.toString, joined with '|': sorted by
// host when asked, as ZooKeeper (which keeps them in a set) prints them.
func (s Member) addrsString(sorted bool) string {
	addrs := s.Addrs()
	if sorted {
		addrs = s.sortedAddrs()
	}
	parts := make([]string, len(addrs))
	for i, a := range addrs {
		parts[i] = a.String()
	}
	return strings.Join(parts, "|")
}
