package server

import (
	"slices"

	"github.com/zkd-io/zkd/jute"
)

// SASLServer is one connection's server side of a SASL exchange (internal/sasl implements
// it): each sasl request's token in, the answer out, as ZooKeeperServer.processSasl drives
// javax.security.sasl.SaslServer.
type SASLServer interface {
	// Step takes the client's token and returns the one to answer with (nil for none). An
	// error means authentication failed.
	Step(response []byte) (challenge []byte, err error)
	Complete() bool
	AuthorizationID() string // valid once Complete
}

// saslResult is what a connection's reader computed for one sasl request: the step is
// taken on the reader's goroutine (a Kerberos ticket's decryption or a digest has no
// place on the core), the result applied on the core, in the request's turn.
type saslResult struct {
	token []byte
	err   error
	authz string // the authorization id, when this step completed the exchange
}

// saslStep runs one step of the connection's exchange. Reader-owned.
func (c *conn) saslStep(token []byte) *saslResult {
	if c.saslx == nil {
		x, err := c.srv.cfg.NewSASLServer()
		if err != nil {
			return &saslResult{err: err}
		}
		c.saslx = x
	}
	out, err := c.saslx.Step(token)
	res := &saslResult{token: out, err: err}
	if err == nil && c.saslx.Complete() {
		res.authz = c.saslx.AuthorizationID()
	}
	return res
}

// doSASL applies a sasl request's step: ZooKeeperServer.processSasl.
func (s *Server) doSASL(c *conn, r *request) {
	res := r.sasl
	if res.err != nil {
		required := slices.Contains(s.cfg.EnforceAuthSchemes, "sasl")
		s.log.Warn("client failed to SASL authenticate", "session", hex(c.sess.id), "remote", c.remote, "err", res.err)
		if s.cfg.AllowSASLFailedClients && !required {
			s.log.Warn("maintaining client connection despite SASL authentication failure (allowSaslFailedClients)",
				"session", hex(c.sess.id))
			c.send(outMsg{hdr: jute.ReplyHeader{Xid: r.hdr.Xid, Zxid: 0}, body: &jute.SASLToken{}})
			return
		}
		code := jute.ErrAuthFailed
		if required {
			code = jute.ErrSessionClosedRequireSASL
		}
		c.sendAndClose(&outMsg{hdr: jute.ReplyHeader{Xid: r.hdr.Xid, Zxid: 0, Err: code}, body: &jute.SASLToken{}})
		return
	}
	if res.authz != "" {
		s.log.Info("adding SASL authorization", "session", hex(c.sess.id), "authorizationID", res.authz)
		c.addAuthID(jute.ID{Scheme: "sasl", ID: res.authz})
		if slices.Contains(s.cfg.SASLSuperUsers, res.authz) {
			s.log.Info("authenticated SASL id as super user", "session", hex(c.sess.id), "id", res.authz)
			c.addAuthID(jute.ID{Scheme: "super", ID: ""})
		}
	}
	c.send(outMsg{hdr: jute.ReplyHeader{Xid: r.hdr.Xid, Zxid: 0}, body: &jute.SASLToken{Token: res.token}})
}

// addAuthID adds an id to the connection's, once (ServerCnxn.addAuthInfo). Core-owned.
func (c *conn) addAuthID(id jute.ID) {
	if !slices.Contains(c.authIDs, id) {
		c.authIDs = append(c.authIDs, id)
	}
}
