package server_test

import (
	"errors"
	"testing"

	"github.com/zkd-io/zkd/internal/auth"
	"github.com/zkd-io/zkd/internal/testing/rawzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// toySASL is a two-step mechanism: "hello" is answered "who?", then a name completes the
// exchange with that name as the authorization id; "bad" fails either step.
type toySASL struct {
	step  int
	authz string
}

func (x *toySASL) Step(tok []byte) ([]byte, error) {
	if string(tok) == "bad" || x.step > 1 {
		return nil, errors.New("toy: refused")
	}
	x.step++
	if x.step == 1 {
		return []byte("who?"), nil
	}
	x.authz = string(tok)
	return nil, nil
}
func (x *toySASL) Complete() bool          { return x.authz != "" }
func (x *toySASL) AuthorizationID() string { return x.authz }

func saslServer(t *testing.T, more func(*server.Config)) *zktest.Server {
	return zktest.Start(t, zktest.WithConfig(func(c *server.Config) {
		c.NewSASLServer = func() (server.SASLServer, error) { return &toySASL{}, nil }
		c.SASLSuperUsers = []string{"root"}
		c.AuthProviders.SASL = true
		if more != nil {
			more(c)
		}
	}))
}

func saslCall(t *testing.T, c *rawzk.Client, tok string) (jute.ReplyHeader, []byte) {
	t.Helper()
	var resp jute.SASLToken
	h := c.Call(jute.OpSASL, &jute.SASLToken{Token: []byte(tok)}, &resp)
	return h, resp.Token
}

// TestSASLExchangeAddsID: a completed exchange adds sasl:<authorization id> to the
// connection, which ACLs then match (whoAmI shows it); a super user's id adds super.
func TestSASLExchangeAddsID(t *testing.T) {
	srv := saslServer(t, nil)
	c := rawzk.Connect(t, srv.Addr())
	if h, tok := saslCall(t, c, "hello"); h.Err != jute.OK || string(tok) != "who?" {
		t.Fatalf("first step: err %v token %q", h.Err, tok)
	}
	if h, tok := saslCall(t, c, "bob"); h.Err != jute.OK || tok != nil {
		t.Fatalf("last step: err %v token %q", h.Err, tok)
	}
	acl := []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "sasl", ID: "bob"}}}
	if h := c.Call(jute.OpCreate, &jute.CreateRequest{Path: "/bob", Data: []byte("x"), ACL: acl}, &jute.CreateResponse{}); h.Err != jute.OK {
		t.Fatalf("create with sasl ACL: %v", h.Err)
	}
	if h := c.Call(jute.OpGetData, &jute.GetDataRequest{Path: "/bob"}, &jute.GetDataResponse{}); h.Err != jute.OK {
		t.Fatalf("read by bob: %v", h.Err)
	}
	other := rawzk.Connect(t, srv.Addr())
	if h := other.Call(jute.OpGetData, &jute.GetDataRequest{Path: "/bob"}, &jute.GetDataResponse{}); h.Err != jute.ErrNoAuth {
		t.Fatalf("read by an unauthenticated client: %v, want NOAUTH", h.Err)
	}
	root := rawzk.Connect(t, srv.Addr())
	saslCall(t, root, "hello")
	saslCall(t, root, "root")
	if h := root.Call(jute.OpGetData, &jute.GetDataRequest{Path: "/bob"}, &jute.GetDataResponse{}); h.Err != jute.OK {
		t.Fatalf("read by the SASL super user: %v", h.Err)
	}
}

// TestSASLFailureCloses: a failed step is AUTHFAILED and the connection closed, nothing else
// affected; with sasl enforced it is SESSIONCLOSEDREQUIRESASLAUTH; allowSaslFailedClients
// keeps the connection when sasl is not enforced.
func TestSASLFailureCloses(t *testing.T) {
	for _, tc := range []struct {
		name     string
		more     func(*server.Config)
		want     jute.Code
		survives bool
	}{
		{"plain", nil, jute.ErrAuthFailed, false},
		{"enforced", func(c *server.Config) { c.EnforceAuthSchemes = []string{"sasl"} }, jute.ErrSessionClosedRequireSASL, false},
		{"allowFailed", func(c *server.Config) { c.AllowSASLFailedClients = true }, jute.OK, true},
		{"allowFailedButEnforced", func(c *server.Config) {
			c.AllowSASLFailedClients = true
			c.EnforceAuthSchemes = []string{"sasl"}
		}, jute.ErrSessionClosedRequireSASL, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := saslServer(t, tc.more)
			bystander := rawzk.Connect(t, srv.Addr())
			saslCall(t, bystander, "hello")
			saslCall(t, bystander, "carol")
			c := rawzk.Connect(t, srv.Addr())
			h, err := c.Reply(c.Send(jute.OpSASL, &jute.SASLToken{Token: []byte("bad")}), nil)
			if err != nil || h.Err != tc.want {
				t.Fatalf("failed step: err %v, reply %v, want %v", err, h.Err, tc.want)
			}
			if tc.survives {
				if h := c.Call(jute.OpExists, &jute.ExistsRequest{Path: "/"}, &jute.ExistsResponse{}); h.Err != jute.OK {
					t.Fatalf("kept connection: exists: %v", h.Err)
				}
			} else if !c.Closed() {
				t.Fatal("connection not closed after a failed SASL step")
			}
			if h := bystander.Call(jute.OpExists, &jute.ExistsRequest{Path: "/"}, &jute.ExistsResponse{}); h.Err != jute.OK {
				t.Fatalf("bystander: exists: %v", h.Err)
			}
		})
	}
}

// TestSASLACLNeedsProvider: without the SASL provider a sasl ACL entry is INVALIDACL, as in
// ZooKeeper; with it, a malformed Kerberos name is.
func TestSASLACLNeedsProvider(t *testing.T) {
	for _, tc := range []struct {
		providers auth.Providers
		id        string
		want      jute.Code
	}{
		{auth.Providers{}, "bob", jute.ErrInvalidACL},
		{auth.Providers{SASL: true}, "bob", jute.OK},
		{auth.Providers{SASL: true}, "zookeeper/host@EXAMPLE.COM", jute.OK},
		{auth.Providers{SASL: true}, "a@b@c", jute.ErrInvalidACL},
	} {
		srv := zktest.Start(t, zktest.WithConfig(func(c *server.Config) { c.AuthProviders = tc.providers }))
		c := rawzk.Connect(t, srv.Addr())
		acl := []jute.ACL{{Perms: jute.PermAll, ID: jute.ID{Scheme: "sasl", ID: tc.id}}}
		if h := c.Call(jute.OpCreate, &jute.CreateRequest{Path: "/n", ACL: acl}, &jute.CreateResponse{}); h.Err != tc.want {
			t.Errorf("providers %+v, sasl:%s: %v, want %v", tc.providers, tc.id, h.Err, tc.want)
		}
	}
}
