package gssapi

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/gssapi"
	"github.com/jcmturner/gokrb5/v8/iana"
	"github.com/jcmturner/gokrb5/v8/iana/asnAppTag"
	"github.com/jcmturner/gokrb5/v8/iana/chksumtype"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/msgtype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/service"
	"github.com/jcmturner/gokrb5/v8/types"
)

// DefaultMaxClockSkew is Kerberos' usual tolerance between the client's and the server's
// clocks (MIT's clockskew, Java's sun.security.krb5 default).
const DefaultMaxClockSkew = 5 * time.Minute

// ServerConfig is what a GSSAPI server needs: the service's keys.
type ServerConfig struct {
	// Keytab holds the service principal's keys (the keyTab of ZooKeeper's JAAS Server
	// section).
	Keytab *keytab.Keytab
	// Principal is the service principal, e.g. "zookeeper/localhost@EXAMPLE.COM" (the
	// principal of the JAAS Server section). Tickets for any other principal are refused. Empty
	// accepts a ticket for any principal the keytab has keys for.
	Principal string
	// MaxClockSkew is the tolerance for ticket times and the authenticator's time; 0 means
	// DefaultMaxClockSkew.
	MaxClockSkew time.Duration
	// ClientAddr is the client connection's address. When a ticket lists addresses (MIT's
	// noaddresses = false) it must be one of them; tickets that list addresses are refused
	// when ClientAddr is nil.
	ClientAddr net.IP
}

// Server is the server side of one SASL GSSAPI exchange. It is not safe for concurrent use
// (one exchange is one connection's sequence of SetSASL requests).
type Server struct {
	cfg       ServerConfig
	principal types.PrincipalName
	realm     string

	stage     serverStage
	key       wrapKey
	sendSeq   uint64
	peer      string // the client principal, name@REALM
	peerName  types.PrincipalName
	peerRealm string
}

type serverStage int

const (
	serverAccept    serverStage = iota // waiting for the AP-REQ
	serverSentRep                      // sent the AP-REP, waiting for an empty response
	serverSentOffer                    // sent the layer offer, waiting for the client's choice
	serverComplete
	serverFailed
)

// NewServer starts an exchange. It fails only for a configuration without keys.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Keytab == nil || len(cfg.Keytab.Entries) == 0 {
		return nil, errors.New("gssapi: server keytab has no keys")
	}
	if cfg.MaxClockSkew <= 0 {
		cfg.MaxClockSkew = DefaultMaxClockSkew
	}
	s := &Server{cfg: cfg}
	if cfg.Principal != "" {
		s.principal, s.realm = types.ParseSPNString(cfg.Principal)
		if s.realm == "" {
			return nil, fmt.Errorf("gssapi: server principal %q has no realm", cfg.Principal)
		}
	}
	return s, nil
}

// Complete reports whether the client is authenticated.
func (s *Server) Complete() bool { return s.stage == serverComplete }

// AuthorizationID is the authenticated client principal, "name@REALM" (e.g.
// "client@EXAMPLE.COM", "svc/host@EXAMPLE.COM"), once Complete.
func (s *Server) AuthorizationID() string {
	if s.stage != serverComplete {
		return ""
	}
	return s.peer
}

// Principal returns the authenticated client principal's name components and realm, once
// Complete: for "svc/host@EXAMPLE.COM", ["svc", "host"] and "EXAMPLE.COM". ZooKeeper's
// zookeeper.kerberos.removeHostFromPrincipal and removeRealmFromPrincipal drop the second
// component and the realm.
func (s *Server) Principal() (components []string, realm string) {
	if s.stage != serverComplete {
		return nil, ""
	}
	return append([]string(nil), s.peerName.NameString...), s.peerRealm
}

// Step takes the client's next message and returns the server's answer. A nil challenge
// with Complete true ends the exchange. An error means authentication failed; the exchange
// then refuses every further step.
func (s *Server) Step(response []byte) (challenge []byte, err error) {
	defer func() {
		// gokrb5's ASN.1 decoding of untrusted input must not take the server down.
		if r := recover(); r != nil {
			challenge, err = nil, fmt.Errorf("gssapi: malformed token: %v", r)
		}
		if err != nil {
			s.stage = serverFailed
		}
	}()
	switch s.stage {
	case serverAccept:
		return s.accept(response)
	case serverSentRep:
		if len(response) != 0 {
			return nil, errors.New("gssapi: client answered the AP-REP with data, want an empty message")
		}
		return s.offer()
	case serverSentOffer:
		return s.finish(response)
	case serverComplete:
		return nil, errors.New("gssapi: exchange already complete")
	default:
		return nil, errors.New("gssapi: exchange already failed")
	}
}

// accept verifies the AP-REQ and answers with the AP-REP (mutual authentication) or the layer
// offer.
func (s *Server) accept(token []byte) ([]byte, error) {
	tokID, msg, err := parseToken(token)
	if err != nil {
		return nil, err
	}
	if tokID != tokAPReq {
		return nil, fmt.Errorf("gssapi: first token has TOK_ID %x, want an AP-REQ (0100)", tokID)
	}
	var req messages.APReq
	if err := req.Unmarshal(msg); err != nil {
		return nil, fmt.Errorf("gssapi: AP-REQ: %w", err)
	}
	if s.realm != "" && (!req.Ticket.SName.Equal(s.principal) || req.Ticket.Realm != s.realm) {
		return nil, fmt.Errorf("gssapi: ticket is for %s@%s, this server is %s",
			req.Ticket.SName.PrincipalNameString(), req.Ticket.Realm, s.cfg.Principal)
	}
	opts := []func(*service.Settings){service.MaxClockSkew(s.cfg.MaxClockSkew), service.DecodePAC(false)}
	if s.cfg.ClientAddr != nil {
		opts = append(opts, service.ClientAddress(types.HostAddressFromNetIP(s.cfg.ClientAddr)))
	}
	ok, creds, err := service.VerifyAPREQ(&req, service.NewSettings(s.cfg.Keytab, opts...))
	if err != nil {
		return nil, fmt.Errorf("gssapi: AP-REQ refused: %w", err)
	}
	if !ok || creds == nil {
		return nil, errors.New("gssapi: AP-REQ refused")
	}
	auth := req.Authenticator
	gssFlags, err := checksumFlags(auth.Cksum)
	if err != nil {
		return nil, err
	}
	s.peerName = auth.CName
	s.peerRealm = auth.CRealm
	s.peer = auth.CName.PrincipalNameString() + "@" + auth.CRealm

	s.key = wrapKey{key: req.Ticket.DecryptedEncPart.Key}
	if len(auth.SubKey.KeyValue) > 0 {
		s.key.key = auth.SubKey
	}
	mutual := types.IsFlagSet(&req.APOptions, flags.APOptionMutualRequired) || gssFlags&gssapi.ContextFlagMutual != 0
	if !mutual {
		// Without an AP-REP the acceptor's sequence numbers start where the initiator's do.
		s.sendSeq = uint64(auth.SeqNumber) & 0xffffffff
		return s.offer()
	}
	var seq [4]byte
	if _, err := rand.Read(seq[:]); err != nil {
		return nil, fmt.Errorf("gssapi: %w", err)
	}
	s.sendSeq = uint64(binary.BigEndian.Uint32(seq[:]) & 0x3fffffff)
	rep, err := makeAPRep(auth, req.Ticket.DecryptedEncPart.Key, int64(s.sendSeq))
	if err != nil {
		return nil, err
	}
	s.stage = serverSentRep
	return frameToken(tokAPRep, rep), nil
}

// checksumFlags checks the authenticator's GSS-API checksum (RFC 4121 section 4.1.1) and
// returns its context flags.
func checksumFlags(c types.Checksum) (int, error) {
	if c.CksumType != chksumtype.GSSAPI {
		return 0, fmt.Errorf("gssapi: authenticator checksum type %d, want the GSS-API checksum (%d)", c.CksumType, chksumtype.GSSAPI)
	}
	if len(c.Checksum) < 24 || binary.LittleEndian.Uint32(c.Checksum[:4]) != 16 {
		return 0, errors.New("gssapi: malformed GSS-API authenticator checksum")
	}
	return int(binary.LittleEndian.Uint32(c.Checksum[20:24])), nil
}

// encAPRepPart is EncAPRepPart (RFC 4120 section 5.5.2) without the optional subkey, which
// the server does not send.
type encAPRepPart struct {
	CTime          time.Time `asn1:"generalized,explicit,tag:0"`
	Cusec          int       `asn1:"explicit,tag:1"`
	SequenceNumber int64     `asn1:"explicit,tag:3"`
}

// makeAPRep builds the AP-REP proving the server could read the authenticator: its time,
// encrypted with the ticket's session key.
func makeAPRep(auth types.Authenticator, sessionKey types.EncryptionKey, seq int64) ([]byte, error) {
	part, err := asn1.Marshal(encAPRepPart{CTime: auth.CTime.UTC(), Cusec: auth.Cusec, SequenceNumber: seq})
	if err != nil {
		return nil, fmt.Errorf("gssapi: AP-REP: %w", err)
	}
	part = asn1tools.AddASNAppTag(part, asnAppTag.EncAPRepPart)
	ed, err := crypto.GetEncryptedData(part, sessionKey, keyusage.AP_REP_ENCPART, 0)
	if err != nil {
		return nil, fmt.Errorf("gssapi: AP-REP: %w", err)
	}
	rep, err := asn1.Marshal(messages.APRep{PVNO: iana.PVNO, MsgType: msgtype.KRB_AP_REP, EncPart: ed})
	if err != nil {
		return nil, fmt.Errorf("gssapi: AP-REP: %w", err)
	}
	return asn1tools.AddASNAppTag(rep, asnAppTag.APREP), nil
}

// offer sends the security layers the server supports: none.
func (s *Server) offer() ([]byte, error) {
	tok, err := wrap(layerMessage{layers: layerNone, maxSize: maxBufferSize}.marshal(), s.key, true, s.sendSeq)
	if err != nil {
		return nil, err
	}
	s.sendSeq++
	s.stage = serverSentOffer
	return tok, nil
}

// finish checks the client's layer choice and authorization id.
func (s *Server) finish(token []byte) ([]byte, error) {
	payload, _, err := unwrap(token, s.key, false)
	if err != nil {
		return nil, err
	}
	m, err := parseLayerMessage(payload)
	if err != nil {
		return nil, err
	}
	if m.layers != layerNone {
		return nil, fmt.Errorf("gssapi: client chose security layer %#02x, only none (0x01) is offered", m.layers)
	}
	if !utf8.ValidString(m.authzID) {
		return nil, errors.New("gssapi: authorization id is not UTF-8")
	}
	if m.authzID != "" && m.authzID != s.peer {
		return nil, fmt.Errorf("gssapi: %s may not act as %q", s.peer, strings.ToValidUTF8(m.authzID, "?"))
	}
	s.stage = serverComplete
	return nil, nil
}
