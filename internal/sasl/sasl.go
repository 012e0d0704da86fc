package sasl

import (
	"errors"
	"fmt"
	"io"
)

// Mechanism names, as SASL spells them.
const (
	DigestMD5 = "DIGEST-MD5"
	GSSAPI    = "GSSAPI"
)

// Service and host names ZooKeeper gives the DIGEST-MD5 mechanism: on the client port
// (ZooKeeperSaslServer, ZooKeeperSaslClient) and between quorum peers
// (SaslQuorumAuthServer, SaslQuorumAuthLearner). The host is also the realm.
const (
	ClientService = "zookeeper"
	ClientHost    = "zk-sasl-md5"
	QuorumService = "zookeeper-quorum"
	QuorumHost    = "zk-quorum-sasl-md5"
)

// Server is one connection's side of a SASL exchange, driven by the server's SASL request
// handling: each client token in, the token to send back out.
type Server interface {
	// Step takes the client's token (empty at the start of DIGEST-MD5) and returns the
	// token to send back. An error means authentication failed (the server answers
	// AUTHFAILED and closes).
	Step(response []byte) (challenge []byte, err error)
	Complete() bool
	AuthorizationID() string // valid once Complete
}

// Client is the connecting side of a SASL exchange.
type Client interface {
	// Step takes the server's token (nil for the first call, which yields the token that
	// opens the exchange) and returns the token to send, nil when there is nothing to send.
	Step(challenge []byte) (response []byte, err error)
	Complete() bool
}

// ServerConfig configures a server mechanism.
type ServerConfig struct {
	// Service and Host name the server (digest-uri "Service/Host"; Host is the realm). ""
	// means ClientService and ClientHost.
	Service, Host string
	// Users maps DIGEST-MD5 user names to passwords (JAAS user_NAME="password", see
	// JAAS.ServerUsers). ZooKeeper's client port also lets the system property
	// zookeeper.SASLAuthenticationProvider.superPassword replace the password of "super",
	// but only when the section has a user_super entry: the caller applies that.
	Users map[string]string
	// Authorize decides, once the password checked out, whether authnID may act as
	// authzID (the client's authzid, or authnID when it sent none) and returns the
	// authorization id the connection gets. nil means the client port's rule,
	// KerberosNames{}.Authorize.
	Authorize func(authnID, authzID string) (string, error)
	// Rand is the source of nonces; nil means crypto/rand.
	Rand io.Reader
}

// ErrAuth matches (errors.Is) every authentication failure a mechanism reports: the peer
// is not who it claims, or its token is malformed.
var ErrAuth = errors.New("sasl: authentication failed")

// ErrMechanism matches an unsupported mechanism name.
var ErrMechanism = errors.New("sasl: unsupported mechanism")

// NewServer returns a server for mech; DIGEST-MD5 is the only mechanism of this package.
func NewServer(mech string, cfg ServerConfig) (Server, error) {
	switch mech {
	case DigestMD5:
		return newDigestServer(cfg), nil
	}
	return nil, fmt.Errorf("%w: %q", ErrMechanism, mech)
}

// NewClient returns a client for mech logging in as username with password, to the
// server named service/host (ClientService, ClientHost for ZooKeeper's client port;
// QuorumService, QuorumHost between peers). As ZooKeeper's clients do, it asks to act as
// username (authzid = username).
func NewClient(mech, username, password, service, host string) (Client, error) {
	switch mech {
	case DigestMD5:
		return &digestClient{user: username, pass: password, service: service, host: host}, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrMechanism, mech)
}

// QuorumDigestAuthorize is the authorisation rule of a quorum server for DIGEST-MD5
// learners (SaslQuorumServerCallbackHandler): a learner may act only as itself.
func QuorumDigestAuthorize(authnID, authzID string) (string, error) {
	if authnID != authzID {
		return "", fmt.Errorf("%w: %q is not authorized to act as %q", ErrAuth, authnID, authzID)
	}
	return authzID, nil
}

func authErr(format string, args ...any) error {
	return fmt.Errorf("%w: DIGEST-MD5: %s", ErrAuth, fmt.Sprintf(format, args...))
}
