package peer

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/zkd-io/zkd/internal/sasl"
)

// Quorum SASL (ZooKeeper's server/quorum/auth): QuorumAuthPacket records exchanged right after
// a connection is set up, on the election port after the connection header and on the quorum
// port before the learner's first packet.

// QuorumAuthMagic starts every QuorumAuthPacket (QUORUM_AUTH_MAGIC_NUMBER). ZooKeeper writes
// it as -0xa0dbcafecafe1234L, and its comment calls it negative, but that hex literal is
// itself a negative long, so the value is positive: 0x5f2435013501edcc. A server tells an auth
// packet from a learner's first QuorumPacket (whose first 8 bytes are a small type and the top
// of a zxid) or, on the election port after the header, from a message (a length of at most
// 512 KiB and the start of a notification) by it.
const QuorumAuthMagic int64 = 0x5f2435013501edcc

// AuthStatus is a QuorumAuthPacket's status (QuorumAuth.Status).
type AuthStatus int32

// The statuses ZooKeeper defines.
const (
	AuthInProgress AuthStatus = 0
	AuthSuccess    AuthStatus = 1
	AuthError      AuthStatus = -1
)

func (s AuthStatus) String() string {
	switch s {
	case AuthInProgress:
		return "IN_PROGRESS"
	case AuthSuccess:
		return "SUCCESS"
	case AuthError:
		return "ERROR"
	}
	return fmt.Sprintf("AuthStatus(%d)", int32(s))
}

// MaxAuthToken bounds the token of a QuorumAuthPacket read from a peer. DIGEST-MD5 tokens are
// a few hundred bytes; ZooKeeper bounds them by jute.maxbuffer, whose default is this.
const MaxAuthToken = 1<<20 - 1

// ErrAuthPacket matches a malformed QuorumAuthPacket.
var ErrAuthPacket = errors.New("peer: bad quorum auth packet")

// ErrQuorumAuth matches every quorum SASL failure: the peer did not authenticate, failed to,
// or refused us.
var ErrQuorumAuth = errors.New("peer: quorum SASL authentication failed")

// AuthPacket is a QuorumAuthPacket. A nil Token is written as jute's null buffer (-1).
type AuthPacket struct {
	Magic  int64
	Status AuthStatus
	Token  []byte
}

// AppendAuthPacket appends p in jute's encoding.
func AppendAuthPacket(b []byte, p AuthPacket) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(p.Magic))
	b = binary.BigEndian.AppendUint32(b, uint32(p.Status))
	if p.Token == nil {
		return binary.BigEndian.AppendUint32(b, 0xffffffff)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(p.Token)))
	return append(b, p.Token...)
}

// ReadAuthPacket reads one QuorumAuthPacket. As ZooKeeper, it does not check the magic (the
// caller peeked it, or is the learner reading the server's answer); a token longer than
// MaxAuthToken or of a negative length other than -1 is an error.
func ReadAuthPacket(r io.Reader) (AuthPacket, error) {
	var h [16]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return AuthPacket{}, fmt.Errorf("%w: %w", ErrAuthPacket, err)
	}
	p := AuthPacket{
		Magic:  int64(binary.BigEndian.Uint64(h[:8])),
		Status: AuthStatus(binary.BigEndian.Uint32(h[8:12])),
	}
	n := int32(binary.BigEndian.Uint32(h[12:16]))
	switch {
	case n == -1:
		return p, nil
	case n < 0 || n > MaxAuthToken:
		return AuthPacket{}, fmt.Errorf("%w: token of %d bytes", ErrAuthPacket, n)
	}
	p.Token = make([]byte, n)
	if _, err := io.ReadFull(r, p.Token); err != nil {
		return AuthPacket{}, fmt.Errorf("%w: %w", ErrAuthPacket, err)
	}
	return p, nil
}

// NextIsAuth peeks at r's next 8 bytes and reports whether they are QuorumAuthMagic
// (QuorumAuth.nextPacketIsAuth). Nothing is consumed.
func NextIsAuth(r *bufio.Reader) (bool, error) {
	b, err := r.Peek(8)
	if err != nil {
		return false, err
	}
	return int64(binary.BigEndian.Uint64(b)) == QuorumAuthMagic, nil
}

// QuorumSASL is a server's quorum SASL setting (quorum.auth.enableSasl and the keys around
// it): both sides of the exchange, as ZooKeeper's SaslQuorumAuthServer and
// SaslQuorumAuthLearner. A nil *QuorumSASL is quorum.auth.enableSasl=false: its methods do
// nothing (NullQuorumAuthServer, NullQuorumAuthLearner).
//
// The exchange, every packet a QuorumAuthPacket with QuorumAuthMagic, DIGEST-MD5 shown:
//
//	learner (connecting side)                  server (accepting side)
//	IN_PROGRESS ""                         ->
//	                                       <-  IN_PROGRESS realm=...,nonce=...
//	IN_PROGRESS username=...,response=...  ->
//	                                       <-  SUCCESS rspauth=...
//	                                           (or ERROR "" when it failed)
//
// Rolling upgrade runs enableSasl with both requirements off (nobody authenticates, servers
// accept both), then learnerRequireSasl (learners authenticate), then serverRequireSasl
// (servers refuse learners that do not).
type QuorumSASL struct {
	// LearnerRequired (quorum.auth.learnerRequireSasl): this server authenticates when it
	// connects to another; without it, it never does.
	LearnerRequired bool
	// ServerRequired (quorum.auth.serverRequireSasl): a connecting server that does not
	// authenticate, or fails to, is refused; without it, it is let through.
	ServerRequired bool
	// NewServer starts the accepting side of one exchange (the JAAS QuorumServer section's
	// users, service sasl.QuorumService, host sasl.QuorumHost).
	NewServer func() (sasl.Server, error)
	// NewClient starts the connecting side of one exchange (the JAAS QuorumLearner
	// section's username and password). Needed only with LearnerRequired.
	NewClient func() (sasl.Client, error)
	// Timeout bounds a whole exchange; 0 means 5 s. The caller's deadlines on the
	// connection are cleared when the exchange ends.
	Timeout time.Duration
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// maxServerSteps bounds the responses a server evaluates before giving up (MAX_RETRIES).
const maxServerSteps = 5

func (q *QuorumSASL) logger() *slog.Logger {
	if q.Logger != nil {
		return q.Logger
	}
	return slog.Default()
}

func (q *QuorumSASL) deadline(nc net.Conn) error {
	d := q.Timeout
	if d <= 0 {
		d = 5 * time.Second
	}
	return nc.SetDeadline(time.Now().Add(d))
}

// Authenticate is the accepting side (SaslQuorumAuthServer.authenticate), run on a new
// connection from another server once its first message (the election header, or nothing on
// the quorum port) has been read. r must be the connection's reader: the bytes it peeked at
// stay in it for the caller. A nil error means the connection may be used: the peer
// authenticated, or authentication is not required (a peer that failed is then let through
// too, as ZooKeeper does: it hangs up itself).
//
// Unlike ZooKeeper, a peer that sends nothing (or hangs up) before authenticating is taken
// as not authenticating rather than as an error when authentication is not required, so the
// election's "connect back" still happens for a smaller sid that hung up after its header.
func (q *QuorumSASL) Authenticate(nc net.Conn, r *bufio.Reader) (err error) {
	if q == nil {
		return nil
	}
	log := q.logger().With("remote", nc.RemoteAddr().String())
	if err := q.deadline(nc); err != nil {
		return err
	}
	defer func() {
		if derr := nc.SetDeadline(time.Time{}); err == nil && derr != nil {
			err = derr
		}
	}()
	auth, perr := NextIsAuth(r)
	if !auth {
		if q.ServerRequired {
			if perr != nil {
				return fmt.Errorf("%w: learner not trying to authenticate and authentication is required: %w", ErrQuorumAuth, perr)
			}
			return fmt.Errorf("%w: learner not trying to authenticate and authentication is required", ErrQuorumAuth)
		}
		return nil
	}
	authzID, err := q.serve(nc, r)
	if err != nil {
		if q.ServerRequired {
			return err
		}
		log.Warn("quorum SASL authentication failed; keeping the connection since quorum.auth.serverRequireSasl is false", "err", err)
		return nil
	}
	log.Info("quorum learner authenticated with SASL", "id", authzID)
	return nil
}

func (q *QuorumSASL) serve(nc net.Conn, r io.Reader) (string, error) {
	fail := func(err error) (string, error) {
		// Tell the learner, as ZooKeeper does; the write error matters less than why.
		nc.Write(AppendAuthPacket(nil, AuthPacket{Magic: QuorumAuthMagic, Status: AuthError, Token: []byte{}}))
		return "", fmt.Errorf("%w: %w", ErrQuorumAuth, err)
	}
	p, err := ReadAuthPacket(r)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrQuorumAuth, err)
	}
	if q.NewServer == nil {
		return fail(errors.New("no quorum SASL server configured"))
	}
	ss, err := q.NewServer()
	if err != nil {
		return fail(err)
	}
	for steps := 1; ; steps++ {
		challenge, err := ss.Step(p.Token)
		if err != nil {
			return fail(err)
		}
		if ss.Complete() {
			if challenge == nil {
				challenge = []byte{}
			}
			_, err := nc.Write(AppendAuthPacket(nil, AuthPacket{Magic: QuorumAuthMagic, Status: AuthSuccess, Token: challenge}))
			if err != nil {
				return "", fmt.Errorf("%w: %w", ErrQuorumAuth, err)
			}
			return ss.AuthorizationID(), nil
		}
		if steps >= maxServerSteps {
			return fail(fmt.Errorf("exchange not complete after %d responses", steps))
		}
		if _, err := nc.Write(AppendAuthPacket(nil, AuthPacket{Magic: QuorumAuthMagic, Status: AuthInProgress, Token: challenge})); err != nil {
			return "", fmt.Errorf("%w: %w", ErrQuorumAuth, err)
		}
		if p, err = ReadAuthPacket(r); err != nil {
			return "", fmt.Errorf("%w: %w", ErrQuorumAuth, err)
		}
	}
}

// Learn is the connecting side (SaslQuorumAuthLearner.authenticate), run on a connection to
// another server once the first message (the election header, or nothing on the quorum port)
// has been sent. Without LearnerRequired it does nothing. It reads from nc unbuffered, so
// nothing after the exchange is consumed.
func (q *QuorumSASL) Learn(nc net.Conn) (err error) {
	if q == nil || !q.LearnerRequired {
		return nil
	}
	if err := q.deadline(nc); err != nil {
		return err
	}
	defer func() {
		if derr := nc.SetDeadline(time.Time{}); err == nil && derr != nil {
			err = derr
		}
	}()
	if q.NewClient == nil {
		return fmt.Errorf("%w: no quorum SASL learner configured", ErrQuorumAuth)
	}
	c, err := q.NewClient()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrQuorumAuth, err)
	}
	tok, err := c.Step(nil)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrQuorumAuth, err)
	}
	if tok == nil {
		tok = []byte{}
	}
	remote := nc.RemoteAddr().String()
	for {
		if _, err := nc.Write(AppendAuthPacket(nil, AuthPacket{Magic: QuorumAuthMagic, Status: AuthInProgress, Token: tok})); err != nil {
			return fmt.Errorf("%w: %w", ErrQuorumAuth, err)
		}
		p, err := ReadAuthPacket(nc)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrQuorumAuth, err)
		}
		switch p.Status {
		case AuthInProgress:
			if tok, err = c.Step(p.Token); err != nil {
				return fmt.Errorf("%w: %w", ErrQuorumAuth, err)
			}
			if tok == nil {
				tok = []byte{}
			}
			continue
		case AuthSuccess:
			if !c.Complete() {
				next, err := c.Step(p.Token)
				if err != nil {
					return fmt.Errorf("%w: %w", ErrQuorumAuth, err)
				}
				if next != nil {
					return fmt.Errorf("%w: protocol error: the server reported success but the exchange wants another token", ErrQuorumAuth)
				}
			}
			if !c.Complete() {
				return fmt.Errorf("%w: the server reported success before the exchange completed", ErrQuorumAuth)
			}
			q.logger().Info("authenticated to a quorum server with SASL", "remote", remote)
			return nil
		default:
			return fmt.Errorf("%w: refused by server %s (status %v)", ErrQuorumAuth, remote, p.Status)
		}
	}
}
