package gssapi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana/chksumtype"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// ClientConfig is what a GSSAPI client needs.
type ClientConfig struct {
	// Kerberos is a gokrb5 client logged in (or able to log in) as the user: from
	// client.NewWithKeytab or client.NewWithPassword.
	Kerberos *client.Client
	// Service is the server's principal without realm, "zookeeper/localhost" for ZooKeeper's
	// default zookeeper.sasl.client.username and a server reached as localhost.
	Service string
	// AuthzID is the authorization id to send; empty (as Java's ZooKeeper client) means the
	// client principal.
	AuthzID string
	// Mutual asks the server to prove its identity with an AP-REP.
	Mutual bool
}

// Client is the client side of one SASL GSSAPI exchange; the first Step takes an empty
// challenge and returns the initial response.
type Client struct {
	cfg     ClientConfig
	stage   clientStage
	auth    types.Authenticator
	session types.EncryptionKey
	key     wrapKey
	sendSeq uint64
}

type clientStage int

const (
	clientStart clientStage = iota
	clientSentReq
	clientWaitOffer
	clientComplete
	clientFailed
)

// NewClient starts an exchange.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.Kerberos == nil {
		return nil, errors.New("gssapi: no Kerberos client")
	}
	if cfg.Service == "" {
		return nil, errors.New("gssapi: no service principal")
	}
	return &Client{cfg: cfg}, nil
}

// Complete reports whether the exchange succeeded.
func (c *Client) Complete() bool { return c.stage == clientComplete }

// AuthorizationID is the id the client asked for: its AuthzID, or its principal.
func (c *Client) AuthorizationID() string {
	if c.cfg.AuthzID != "" {
		return c.cfg.AuthzID
	}
	cr := c.cfg.Kerberos.Credentials
	return cr.CName().PrincipalNameString() + "@" + cr.Domain()
}

// Step takes the server's challenge and returns the client's next message. An error means
// the exchange failed.
func (c *Client) Step(challenge []byte) (response []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			response, err = nil, fmt.Errorf("gssapi: malformed token: %v", r)
		}
		if err != nil {
			c.stage = clientFailed
		}
	}()
	switch c.stage {
	case clientStart:
		if len(challenge) != 0 {
			return nil, errors.New("gssapi: the client speaks first")
		}
		return c.start()
	case clientSentReq:
		return c.checkRep(challenge)
	case clientWaitOffer:
		return c.answerOffer(challenge)
	case clientComplete:
		return nil, errors.New("gssapi: exchange already complete")
	default:
		return nil, errors.New("gssapi: exchange already failed")
	}
}

// start gets a service ticket and sends the AP-REQ.
func (c *Client) start() ([]byte, error) {
	kc := c.cfg.Kerberos
	if err := kc.AffirmLogin(); err != nil {
		return nil, fmt.Errorf("gssapi: kerberos login: %w", err)
	}
	tkt, session, err := kc.GetServiceTicket(c.cfg.Service)
	if err != nil {
		return nil, fmt.Errorf("gssapi: service ticket for %s: %w", c.cfg.Service, err)
	}
	auth, err := types.NewAuthenticator(kc.Credentials.Domain(), kc.Credentials.CName())
	if err != nil {
		return nil, fmt.Errorf("gssapi: authenticator: %w", err)
	}
	et, err := crypto.GetEtype(session.KeyType)
	if err != nil {
		return nil, fmt.Errorf("gssapi: %w", err)
	}
	// A fresh subkey for the context, as Java's and MIT's initiators send.
	if err := auth.GenerateSeqNumberAndSubKey(session.KeyType, et.GetKeyByteSize()); err != nil {
		return nil, fmt.Errorf("gssapi: authenticator: %w", err)
	}
	gssFlags := gssapi.ContextFlagInteg | gssapi.ContextFlagConf
	if c.cfg.Mutual {
		gssFlags |= gssapi.ContextFlagMutual
	}
	cksum := make([]byte, 24)
	binary.LittleEndian.PutUint32(cksum[:4], 16) // length of the (absent) channel bindings hash
	binary.LittleEndian.PutUint32(cksum[20:], uint32(gssFlags))
	auth.Cksum = types.Checksum{CksumType: chksumtype.GSSAPI, Checksum: cksum}
	req, err := messages.NewAPReq(tkt, session, auth)
	if err != nil {
		return nil, fmt.Errorf("gssapi: AP-REQ: %w", err)
	}
	if c.cfg.Mutual {
		types.SetFlag(&req.APOptions, flags.APOptionMutualRequired)
	}
	msg, err := req.Marshal()
	if err != nil {
		return nil, fmt.Errorf("gssapi: AP-REQ: %w", err)
	}
	c.auth, c.session = auth, session
	c.key = wrapKey{key: auth.SubKey}
	c.sendSeq = uint64(auth.SeqNumber)
	if c.cfg.Mutual {
		c.stage = clientSentReq
	} else {
		c.stage = clientWaitOffer
	}
	return frameToken(tokAPReq, msg), nil
}

// checkRep verifies the server's AP-REP: it could decrypt our authenticator.
func (c *Client) checkRep(token []byte) ([]byte, error) {
	tokID, msg, err := parseToken(token)
	if err != nil {
		return nil, err
	}
	if tokID == tokKRBError {
		var ke messages.KRBError
		if err := ke.Unmarshal(msg); err != nil {
			return nil, fmt.Errorf("gssapi: server sent a malformed KRB-ERROR: %w", err)
		}
		return nil, fmt.Errorf("gssapi: server refused the AP-REQ: %s", ke.Error())
	}
	if tokID != tokAPRep {
		return nil, fmt.Errorf("gssapi: server token has TOK_ID %x, want an AP-REP (0200)", tokID)
	}
	var rep messages.APRep
	if err := rep.Unmarshal(msg); err != nil {
		return nil, fmt.Errorf("gssapi: AP-REP: %w", err)
	}
	plain, err := crypto.DecryptEncPart(rep.EncPart, c.session, keyusage.AP_REP_ENCPART)
	if err != nil {
		return nil, fmt.Errorf("gssapi: AP-REP does not decrypt with the session key: %w", err)
	}
	var part messages.EncAPRepPart
	if err := part.Unmarshal(plain); err != nil {
		return nil, fmt.Errorf("gssapi: AP-REP: %w", err)
	}
	if !part.CTime.Equal(c.auth.CTime.Truncate(time.Second)) || part.Cusec != c.auth.Cusec {
		return nil, errors.New("gssapi: AP-REP does not echo the authenticator's time")
	}
	if len(part.Subkey.KeyValue) > 0 {
		c.key = wrapKey{key: part.Subkey, acceptorSubkey: true}
	}
	c.stage = clientWaitOffer
	return []byte{}, nil
}

// answerOffer reads the server's security layers and chooses none.
func (c *Client) answerOffer(token []byte) ([]byte, error) {
	payload, _, err := unwrap(token, c.key, true)
	if err != nil {
		return nil, err
	}
	offer, err := parseLayerMessage(payload)
	if err != nil {
		return nil, err
	}
	if len(payload) != 4 {
		return nil, fmt.Errorf("gssapi: server's security layer offer is %d bytes, want 4", len(payload))
	}
	if offer.layers&layerNone == 0 {
		return nil, fmt.Errorf("gssapi: server requires a security layer (offers %#02x), which this client does not support", offer.layers)
	}
	out, err := wrap(layerMessage{layers: layerNone, authzID: c.cfg.AuthzID}.marshal(), c.key, false, c.sendSeq)
	if err != nil {
		return nil, err
	}
	c.sendSeq++
	c.stage = clientComplete
	return out, nil
}
