package server_test

import (
	"fmt"
	"testing"

	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
)

// TestMixedLocalSessions runs the local session sequence through every member of mixed
// zkd + ZooKeeper ensembles, led by either kind, with and without upgrading: the members
// must answer alike whatever their kind.
func TestMixedLocalSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	for _, upgrading := range []bool{true, false} {
		for _, leads := range []string{"zkd", "ZooKeeper"} {
			t.Run(fmt.Sprintf("%s leads, upgrading %v", leads, upgrading), func(t *testing.T) {
				zkdIDs := map[int64]bool{3: true}
				order := []int64{1, 3, 2}
				if leads == "ZooKeeper" {
					zkdIDs = map[int64]bool{1: true, 2: true}
					order = []int64{3, 1, 2}
				}
				members := startMixedWith(t, zkdIDs, order, func(c *server.Config) {
					c.LocalSessions, c.LocalSessionsUpgrading = true, upgrading
				}, []string{"localSessionsEnabled=true", fmt.Sprintf("localSessionsUpgradingEnabled=%v", upgrading)})
				if m := members[2].mode(t); m != "leader" {
					t.Fatalf("sid 3 (%s) is %q", leads, m)
				}
				checkMixedLocalSessions(t, members, upgrading)
			})
		}
	}
}

func checkMixedLocalSessions(t *testing.T, members []*mixedMember, upgrading bool) {
	kind := func(m *mixedMember) string {
		if m.zkd != nil {
			return "zkd " + m.mode(t)
		}
		return "ZooKeeper " + m.mode(t)
	}
	for i, m := range members {
		c, resp := handshake(t, m.addr, 0, nil, 30000)
		c.Session = resp.SessionID
		if resp.SessionID>>56 != m.id {
			t.Fatalf("%s %d: session id %#x", kind(m), m.id, resp.SessionID)
		}
		p := fmt.Sprintf("/p%d", m.id)
		if h := c.Call(jute.OpCreate, &jute.CreateRequest{Path: p, ACL: openACL}, &jute.CreateResponse{}); h.Err != jute.OK {
			t.Fatalf("%s %d: persistent create on a local session: %v", kind(m), m.id, h.Err)
		}
		e := fmt.Sprintf("/e%d", m.id)
		var cr jute.Create2Response
		h := c.Call(jute.OpCreate2, &jute.CreateRequest{Path: e, ACL: openACL, Flags: jute.FlagEphemeral}, &cr)
		switch {
		case upgrading && (h.Err != jute.OK || cr.Stat.EphemeralOwner != c.Session):
			t.Fatalf("%s %d: ephemeral create: %v, owner %#x; want OK, %#x", kind(m), m.id, h.Err, cr.Stat.EphemeralOwner, c.Session)
		case !upgrading && h.Err != jute.ErrEphemeralOnLocalSession:
			t.Fatalf("%s %d: ephemeral create: %v, want %v", kind(m), m.id, h.Err, jute.ErrEphemeralOnLocalSession)
		case !upgrading:
			// A follower's leader does not know the session; sid 3 is the leader (the
			// caller checked; srvr can fail under load).
			want := jute.ErrSessionExpired
			if m.id == 3 {
				want = jute.ErrEphemeralOnLocalSession
			}
			checkMultiFailed(t, c, &jute.MultiRequest{Ops: []jute.MultiOp{
				{Type: jute.OpCreate, Body: &jute.CreateRequest{Path: e + "m", ACL: openACL}},
				{Type: jute.OpCreate, Body: &jute.CreateRequest{Path: e + "m/e", ACL: openACL, Flags: jute.FlagEphemeral}},
			}}, want)
		}
		// What every member sees of it.
		for _, o := range members {
			r := rawzk.Connect(t, o.addr)
			if h := r.Call(jute.OpSync, &jute.PathRequest{Path: "/"}, &jute.SyncResponse{}); h.Err != jute.OK {
				t.Fatalf("sync on %s %d: %v", kind(o), o.id, h.Err)
			}
			var st jute.StatResponse
			h := r.Call(jute.OpExists, &jute.PathWatchRequest{Path: e}, &st)
			if upgrading && (h.Err != jute.OK || st.Stat.EphemeralOwner != c.Session) {
				t.Fatalf("%s %d sees %s: %v, owner %#x", kind(o), o.id, e, h.Err, st.Stat.EphemeralOwner)
			}
			if !upgrading && h.Err != jute.ErrNoNode {
				t.Fatalf("%s %d sees %s of a failed create: %v", kind(o), o.id, e, h.Err)
			}
			r.Call(jute.OpCloseSession, nil, nil)
		}
		// A fresh local session is unknown to the next member.
		l, lr := handshake(t, m.addr, 0, nil, 30000)
		l.NC.Close()
		next := members[(i+1)%len(members)]
		if _, r := handshake(t, next.addr, lr.SessionID, lr.Passwd, 30000); r.SessionID != 0 {
			t.Fatalf("%s %d took %s %d's local session: %+v", kind(next), next.id, kind(m), m.id, r)
		}
		if h := c.Call(jute.OpCloseSession, nil, nil); h.Err != jute.OK {
			t.Fatalf("%s %d: closeSession: %v", kind(m), m.id, h.Err)
		}
	}
}
