package config

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"strconv"
	"strings"

	"github.com/zkd-io/zkd/jute"
)

// ReconfigError is a reconfig request the leader refuses, with the code ZooKeeper's
// PrepRequestProcessor answers it with. It matches (errors.Is) ErrReconfig and its Code, so
// errors.Is(err, jute.ErrNewConfigNoQuorum) works.
type ReconfigError struct {
	Code jute.Code
	Msg  string
}

// ErrReconfig matches every ReconfigError.
var ErrReconfig = errors.New("config: reconfig refused")

func (e *ReconfigError) Error() string { return fmt.Sprintf("reconfig: %v: %s", e.Code, e.Msg) }

// Is matches ErrReconfig and the error's Code.
func (e *ReconfigError) Is(target error) bool {
	if target == ErrReconfig {
		return true
	}
	var c jute.Code
	return errors.As(target, &c) && c == e.Code
}

func reconfigErr(code jute.Code, format string, args ...any) error {
	return &ReconfigError{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// CheckReconfigStart is the leader's first checks on a reconfig request, after the
// reconfigEnabled one (RECONFIGDISABLED) and before ApplyReconfig: no other reconfig may be
// in flight (the last proposed configuration is the committed one; RECONFIGINPROGRESS), and
// fromConfig, unless -1, must be the last proposed version (BADVERSION).
func CheckReconfigStart(committedVersion, lastSeenVersion, fromConfig int64) error {
	if lastSeenVersion != committedVersion {
		return reconfigErr(jute.ErrReconfigInProgress, "reconfig in progress: version %x proposed, %x committed",
			lastSeenVersion, committedVersion)
	}
	if fromConfig != -1 && fromConfig != lastSeenVersion {
		return reconfigErr(jute.ErrBadVersion, "Reconfiguration from version %d failed -- last seen version is %d",
			fromConfig, lastSeenVersion)
	}
	return nil
}

// ReconfigOptions is what the leader knows beyond the request.
type ReconfigOptions struct {
	// Version is the new configuration's version: the zxid of the reconfig transaction.
	Version int64
	// StandaloneEnabled is the standaloneEnabled setting: with it, the new configuration
	// needs two participants, without it one.
	StandaloneEnabled bool
	// Synced reports whether a server is connected to the leader and synced (the leader
	// itself counts). The new configuration's synced participants must form a quorum of it
	// (Leader.isQuorumSynced), or the request fails with NEWCONFIGNOQUORUM. nil skips that
	// check.
	Synced func(sid int64) bool
}

// ApplyReconfig computes the configuration a reconfig request asks for from the last
// proposed one (cur), as ZooKeeper's PrepRequestProcessor does, with its checks and error
// codes (a *ReconfigError). newMembers is nil for an incremental reconfig (the request's
// newMembers string was null): joining ("server.N=host:quorumPort:electionPort[:role];[host:]clientPort",
// comma separated, replacing a member with the same id) and leaving (ids, comma separated)
// then change cur, which must use majority quorums. Otherwise *newMembers is the whole new
// configuration, its lines separated by commas or newlines, group.N and weight.N included.
//
// Where ZooKeeper fails with an unchecked exception (a number that does not parse, an
// invalid participant count), the code is MARSHALLINGERROR, which is what ZooKeeper answers.
func ApplyReconfig(cur Dynamic, joining, leaving string, newMembers *string, o ReconfigOptions) (Dynamic, error) {
	var next Dynamic
	if newMembers != nil {
		text := strings.ReplaceAll(*newMembers, ",", "\n")
		d, err := ParseDynamicStandalone([]byte(text), o.StandaloneEnabled)
		if err != nil {
			var de *DynamicError
			if errors.As(err, &de) && de.Exception == ConfigException {
				return Dynamic{}, reconfigErr(jute.ErrBadArguments, "%s", de.Msg)
			}
			return Dynamic{}, reconfigErr(jute.ErrMarshallingError, "%v", err)
		}
		next = d
	} else {
		if cur.Hierarchy.Hierarchical() {
			return Dynamic{}, reconfigErr(jute.ErrBadArguments,
				"Incremental reconfiguration requested but last configuration seen has a non-majority quorum system")
		}
		servers := maps.Clone(cur.Servers)
		if servers == nil {
			servers = map[int]Member{}
		}
		for _, l := range javaSplit(leaving, ",") {
			sid, err := strconv.ParseInt(l, 10, 64)
			if err != nil {
				return Dynamic{}, reconfigErr(jute.ErrMarshallingError, "leaving server %q is not a number", l)
			}
			if int64(int(sid)) == sid {
				delete(servers, int(sid))
			}
		}
		for _, j := range javaSplit(joining, ",") {
			s, err := parseJoiner(j)
			if err != nil {
				return Dynamic{}, err
			}
			for _, other := range servers {
				if other.ID == s.ID {
					continue
				}
				if err := checkAddressDuplicate(s, other); err != nil {
					return Dynamic{}, err
				}
			}
			servers[int(s.ID)] = s
		}
		next = Dynamic{Servers: servers}
	}
	next.Version = o.Version

	voters := next.Voters()
	switch {
	case o.StandaloneEnabled && len(voters) < 2:
		return Dynamic{}, reconfigErr(jute.ErrBadArguments, "Reconfig failed - new configuration must include at least 2 followers")
	case len(voters) < 1:
		return Dynamic{}, reconfigErr(jute.ErrBadArguments, "Reconfig failed - new configuration must include at least 1 follower")
	}
	if o.Synced != nil {
		qv, err := next.Verifier()
		if err != nil {
			return Dynamic{}, reconfigErr(jute.ErrBadArguments, "%v", err)
		}
		synced := map[int64]bool{}
		for _, sid := range voters {
			if o.Synced(sid) {
				synced[sid] = true
			}
		}
		if !qv.IsQuorum(synced) {
			return Dynamic{}, reconfigErr(jute.ErrNewConfigNoQuorum,
				"Reconfig failed - there must be a connected and synced quorum in new configuration")
		}
	}
	return next, nil
}

// parseJoiner reads one joining server as PrepRequestProcessor does: "key=spec", the id
// after the key's last '.', and a spec with all three ports.
func parseJoiner(j string) (Member, error) {
	parts := javaSplit(j, "=")
	if len(parts) != 2 {
		return Member{}, reconfigErr(jute.ErrBadArguments, "Wrong format of server string")
	}
	id := parts[0][strings.LastIndexByte(parts[0], '.')+1:]
	sid, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return Member{}, reconfigErr(jute.ErrMarshallingError, "server id %q is not a number", id)
	}
	s, err := parseServer(strconv.FormatInt(sid, 10), parts[1])
	if err != nil {
		// ZooKeeper logs the ConfigException and answers a generic message.
		return Member{}, reconfigErr(jute.ErrBadArguments, "Reconfiguration failed: %v", err)
	}
	if s.ClientPort == 0 {
		return Member{}, reconfigErr(jute.ErrBadArguments,
			"Wrong format of server string - each server should have 3 ports specified")
	}
	return s, nil
}

// checkAddressDuplicate is QuorumServer.checkAddressDuplicate: no address of the joining
// server may be one of another member's, wildcard and loopback addresses aside. ZooKeeper
// compares resolved addresses; zkd compares hosts as written.
func checkAddressDuplicate(s, other Member) error {
	type hp struct {
		host string
		port int
	}
	addrs := func(x Member) []hp {
		var out []hp
		for _, a := range x.Addrs() {
			out = append(out, hp{a.Host, a.QuorumPort}, hp{a.Host, a.ElectionPort})
		}
		if x.ClientPort != 0 {
			h := x.ClientHost
			if h == "" {
				h = "0.0.0.0"
			}
			out = append(out, hp{h, x.ClientPort})
		}
		var kept []hp
		for _, a := range out {
			if !specialHost(a.host) {
				kept = append(kept, a)
			}
		}
		return kept
	}
	theirs := addrs(other)
	for _, my := range addrs(s) {
		for _, o := range theirs {
			if strings.EqualFold(my.host, o.host) && my.port == o.port {
				return reconfigErr(jute.ErrBadArguments, "%s:%d of server.%d conflicts %s:%d of server.%d",
					my.host, my.port, s.ID, o.host, o.port, other.ID)
			}
		}
	}
	return nil
}

// specialHost is a wildcard or loopback host, which checkAddressDuplicate ignores.
func specialHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && (a.IsUnspecified() || a.IsLoopback())
}

// javaSplit is ZooKeeper's StringUtils.split: split on sep, trim, drop empty parts.
func javaSplit(s, sep string) []string {
	var out []string
	for part := range strings.SplitSeq(s, sep) {
		if part = javaTrim(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
