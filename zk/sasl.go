package zk

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/jcmturner/gokrb5/v8/client"

	"github.com/zkd-io/zkd/internal/sasl"
	"github.com/zkd-io/zkd/internal/sasl/gssapi"
	"github.com/zkd-io/zkd/jute"
)

// SASLClient is the client side of one SASL exchange, for one connection (see WithSASL).
type SASLClient interface {
	// Step takes the server's token (nil for the first call, which returns the token that
	// opens the exchange) and returns the token to send, nil for none. An error ends the
	// session with StateAuthFailed.
	Step(challenge []byte) (response []byte, err error)
	// Complete reports whether the client side has finished successfully.
	Complete() bool
}

// WithSASL authenticates every connection with SASL, as ZooKeeper's Java client does when a
// JAAS "Client" section is configured: right after the handshake, before anything else is
// sent on the connection, the client runs the exchange in sasl requests (opcode 102);
// requests issued meanwhile wait, as they do while disconnected. newClient is called once
// per connection with the server's "host:port"; mechanism names it in logs and errors.
//
// StateConnected is announced only once the exchange succeeded. When the server rejects the
// credentials (AUTHFAILED) or the mechanism fails, the session ends with StateAuthFailed and
// every call fails with an error matching ErrAuthFailed (Connect too, on the first
// connection); a connection lost during the exchange is retried like any other.
func WithSASL(mechanism string, newClient func(server string) (SASLClient, error)) Option {
	return func(c *config) { c.saslMech, c.sasl = mechanism, newClient }
}

// WithDigestSASL authenticates with SASL DIGEST-MD5 as username (the JAAS "Client" section's
// DigestLoginModule username and password). The server's sasl ACL scheme then knows the
// session as username.
func WithDigestSASL(username, password string) Option {
	return WithSASL(sasl.DigestMD5, func(string) (SASLClient, error) {
		return sasl.NewClient(sasl.DigestMD5, username, password, sasl.ClientService, sasl.ClientHost)
	})
}

// WithKerberosSASL authenticates with SASL GSSAPI (Kerberos V5) as krb's principal; krb is a
// gokrb5 client from client.NewWithKeytab or client.NewWithPassword, which gets and renews
// its tickets itself.
//
// servicePrincipal is the server's principal without realm. A name without "/" is the
// service name and the host of the server address each connection goes to is appended, as
// Java's client builds zookeeper.sasl.client.username + "/" + host (without
// canonicalising the host name); "" means "zookeeper", so a server reached as
// localhost:2181 is asked for a ticket to zookeeper/localhost.
func WithKerberosSASL(krb *client.Client, servicePrincipal string) Option {
	if servicePrincipal == "" {
		servicePrincipal = "zookeeper"
	}
	return WithSASL(sasl.GSSAPI, func(server string) (SASLClient, error) {
		svc := servicePrincipal
		if !strings.Contains(svc, "/") {
			host, _, err := net.SplitHostPort(server)
			if err != nil {
				return nil, fmt.Errorf("server address %q: %w", server, err)
			}
			svc += "/" + host
		}
		return gssapi.NewClient(gssapi.ClientConfig{Kerberos: krb, Service: svc})
	})
}

// maxSASLRounds bounds an exchange; DIGEST-MD5 takes 3 and GSSAPI at most 4.
const maxSASLRounds = 16

// saslLogin runs the SASL exchange on a connection that has just been handshaken, before
// its reader and writer start (nothing else is in flight on it, so every reply is the
// exchange's). A returned error matching ErrAuthFailed is final; any other is a failed
// connection attempt.
func (c *Conn) saslLogin(w *wire) error {
	// The exchange gets a read timeout's worth of time; Close interrupts it.
	if err := w.nc.SetDeadline(time.Now().Add(w.readTimeout)); err != nil {
		return err
	}
	stop := context.AfterFunc(c.ctx, func() { w.nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	mech, err := c.cfg.sasl(w.addr)
	if err != nil {
		return c.saslFailed(fmt.Errorf("start: %w", err))
	}
	tok, err := mech.Step(nil)
	if err != nil {
		return c.saslFailed(err)
	}
	for range maxSASLRounds {
		if tok == nil {
			// The server takes a null token as a broken request and hangs up.
			tok = []byte{}
		}
		challenge, err := c.saslRoundTrip(w, tok)
		if err != nil {
			return err
		}
		if mech.Complete() {
			// The server's answer to the client's last token (GSSAPI's final packet).
			break
		}
		if tok, err = mech.Step(challenge); err != nil {
			return c.saslFailed(err)
		}
		if mech.Complete() && tok == nil {
			break
		}
	}
	if !mech.Complete() {
		return c.saslFailed(fmt.Errorf("no result after %d rounds", maxSASLRounds))
	}
	if err := w.nc.SetDeadline(time.Time{}); err != nil {
		return err
	}
	c.log.Debug("zk: SASL authenticated", "server", w.addr, "mechanism", c.cfg.saslMech)
	return nil
}

func (c *Conn) saslFailed(err error) error {
	return fmt.Errorf("%w: SASL %s: %w", ErrAuthFailed, c.cfg.saslMech, err)
}

// saslRoundTrip sends one sasl request, with the next xid as Java's client does, and returns
// the server's token.
func (c *Conn) saslRoundTrip(w *wire, tok []byte) ([]byte, error) {
	c.mu.Lock()
	xid := c.nextXidLocked(w)
	c.mu.Unlock()

	r := newRequest(jute.OpSASL, "", &jute.SASLToken{Token: tok}, nil, len(tok))
	r.setXid(xid, w.xid64)
	if _, err := w.nc.Write(r.frame); err != nil {
		return nil, fmt.Errorf("SASL: write to %s: %w", w.addr, err)
	}
	frame, err := w.readFrame()
	if err != nil {
		return nil, fmt.Errorf("SASL: read from %s: %w", w.addr, err)
	}
	return c.saslReply(w, frame, xid)
}

// saslReply decodes the answer to the sasl request xid: the server's token, or the error
// code with which it rejected the client (AUTHFAILED, or SESSIONCLOSEDREQUIRESASL).
func (c *Conn) saslReply(w *wire, frame []byte, xid int64) ([]byte, error) {
	d := jute.Decoder{B: frame}
	rh := w.decodeHeader(&d)
	if d.Err() != nil {
		return nil, fmt.Errorf("%w: short reply header", errProtocol)
	}
	if rh.Xid != xid {
		return nil, fmt.Errorf("%w: reply xid %d to sasl request %d", errProtocol, rh.Xid, xid)
	}
	if rh.Err != jute.OK {
		if rh.Err == ErrAuthFailed {
			return nil, c.saslFailed(errors.New("server rejected credentials"))
		}
		return nil, c.saslFailed(fmt.Errorf("server answered %w", rh.Err))
	}
	var t jute.SASLToken
	t.Decode(&d)
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("%w: bad sasl reply: %w", errProtocol, err)
	}
	return t.Token, nil
}
