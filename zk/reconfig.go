package zk

import (
	"context"
	"strings"

	"github.com/zkd-io/zkd/jute"
)

// Reconfig replaces the ensemble's membership with members (ZooKeeperAdmin.reconfigure with
// newMembers; a non-incremental reconfig): one "server.N=host:quorumPort:electionPort[:participant|observer];[clientHost:]clientPort"
// entry per member, plus group.N=sid:sid and weight.N=W entries for a hierarchical quorum.
// The change applies only if the ensemble's configuration version is fromConfig (-1: any).
// It returns the new configuration, as GetConfig would, and ConfigNode's Stat, whose Mzxid
// is the new version.
//
// The server answers ErrReconfigDisabled unless started with reconfigEnabled=true,
// ErrUnimplemented when standalone, ErrNoAuth when the session may not write ConfigNode
// (by default only the super user may), ErrBadVersion when fromConfig is stale,
// ErrReconfigInProgress while another reconfig is being committed, ErrNewConfigNoQuorum
// when the new configuration's participants connected to the leader are not a quorum of
// it, and ErrBadArguments for a configuration it cannot use.
func (c *Conn) Reconfig(ctx context.Context, members []string, fromConfig int64) ([]byte, *Stat, error) {
	nm := strings.Join(members, ",")
	return c.reconfig(ctx, nil, nil, &nm, fromConfig)
}

// IncrementalReconfig adds (or updates) the joining servers, each
// "server.N=host:quorumPort:electionPort[:participant|observer];[clientHost:]clientPort",
// and removes the leaving ones (server ids, as decimal strings), if the ensemble's
// configuration version is fromConfig (-1: any). Either list may be nil. The ensemble must
// use majority quorums (ErrBadArguments otherwise). It returns what Reconfig returns, with
// the same errors.
func (c *Conn) IncrementalReconfig(ctx context.Context, joining, leaving []string, fromConfig int64) ([]byte, *Stat, error) {
	return c.reconfig(ctx, joinList(joining), joinList(leaving), nil, fromConfig)
}

// joinList is StringUtils.joinStrings: nil stays null on the wire.
func joinList(l []string) *string {
	if l == nil {
		return nil
	}
	s := strings.Join(l, ",")
	return &s
}

func (c *Conn) reconfig(ctx context.Context, joining, leaving, newMembers *string, fromConfig int64) ([]byte, *Stat, error) {
	data, st, _, err := c.getData(ctx, reconfigSpec(joining, leaving, newMembers, fromConfig))
	return data, st, err
}

func reconfigSpec(joining, leaving, newMembers *string, fromConfig int64) spec {
	size := 3*4 + 8
	for _, s := range []*string{joining, leaving, newMembers} {
		if s != nil {
			size += len(*s)
		}
	}
	body := &jute.ReconfigRequest{JoiningServers: joining, LeavingServers: leaving, NewMembers: newMembers, CurConfigID: fromConfig}
	return spec{op: jute.OpReconfig, raw: true, body: record(body), size: size}
}
