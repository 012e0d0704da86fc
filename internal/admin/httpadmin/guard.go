package httpadmin

import (
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/zkd-io/zkd/internal/auth"
	"github.com/zkd-io/zkd/jute"
)

// The AdminServer's guards beyond ZooKeeper's: who may run snapshot and restore (and the
// console's writes), and which Host a request may name.
//
// ZooKeeper 3.9 authorises snapshot and restore with AuthRequest(ALL, "/"): each permission
// bit is checked with checkACL against the ids of the Authorization header. A digest header
// "authenticates" whatever user and password it carries (the id is computed from them,
// nothing is verified), so with / left at world:anyone:cdrwa anybody reads the whole tree,
// ACL-protected nodes included, and anybody replaces it. zkd keeps ZooKeeper's check and
// adds one: the caller must also hold an identity something vouches for. A super id is
// vouched for by superDigest (or X509AuthenticationProvider.superUser), an x509 id by the
// truststore its certificate chain was checked against, and a digest id only by the root
// ACL naming it, with ADMIN, explicitly. world:anyone vouches for nobody, and an ip id is
// an address, not an identity (a browser on the operator's machine has 127.0.0.1).

// Verdict is the outcome of Guard.Authorize.
type Verdict int

const (
	Allowed Verdict = iota
	// NoPerms: the ids lack a permission on "/"; ZooKeeper refuses them too.
	NoPerms
	// NoIdentity: ZooKeeper would let the ids in (through world:anyone, or an ip entry);
	// zkd wants an identity the server can vouch for.
	NoIdentity
)

// needsIdentityMsg is the error of a NoIdentity refusal: it says how to enable the
// commands, since with / at its default ACL nobody but a super user or an x509 client can
// call them.
const needsIdentityMsg = "Not authorized: " + NeedsIdentityHint

// NeedsIdentityHint says what a NoIdentity refusal wants.
const NeedsIdentityHint = "snapshot, restore and console writes need a real identity " +
	"(world:anyone and ip do not count): set zookeeper.DigestAuthenticationProvider.superDigest and send " +
	"\"Authorization: digest super:<password>\", present an x509 client certificate over HTTPS " +
	"(\"Authorization: x509\"), or give a digest identity ADMIN (or ALL) on / " +
	"(setAcl / digest:<user>:<hash>:cdrwa,...) and send \"Authorization: digest <user>:<password>\""

// Auth is what the identity rule needs of the server's settings.
type Auth struct {
	// SuperDigest is zookeeper.DigestAuthenticationProvider.superDigest.
	SuperDigest string
	// Providers are the authentication providers configured (authProvider.N).
	Providers auth.Providers
	// SkipACL is zookeeper.skipACL: the ACL check is off, the identity rule is not.
	SkipACL bool
	// VerifyX509 checks an HTTPS client's certificate chain (TLS.VerifyX509); nil: the
	// x509 scheme authenticates nobody.
	VerifyX509 func(chain []*x509.Certificate) error
	// X509ID is the x509 scheme's id for a certificate.
	X509ID func(cert *x509.Certificate) (string, error)
}

// Guard decides who may run snapshot and restore, and write through the console.
type Guard struct {
	auth Auth
	b    Backend
	log  *slog.Logger
}

// NewGuard makes the Guard of the server b answers for.
func NewGuard(a Auth, b Backend, log *slog.Logger) *Guard { return &Guard{auth: a, b: b, log: log} }

// Authorize decides whether ids may run snapshot or restore, or write through the console.
// ok is false when the server stopped.
func (g *Guard) Authorize(ids []jute.ID) (v Verdict, ok bool) {
	acls, ok := g.b.RootACL()
	if !ok {
		return NoPerms, false
	}
	if slices.ContainsFunc(ids, func(id jute.ID) bool { return id.Scheme == auth.SchemeSuper }) {
		return Allowed, true
	}
	// Commands.handleAuthorization: every bit of ALL, checked one by one, so that the bits
	// may come from different entries. skipACL turns ACLs off, as for clients, but not
	// the identity rule below: restore replaces what no client could.
	if !g.auth.SkipACL {
		for bit := int32(1); bit <= jute.PermAll; bit <<= 1 {
			if jute.PermAll&bit != 0 && !g.auth.Providers.Check(acls, bit, ids) {
				return NoPerms, true
			}
		}
	}
	if vouched(acls, ids) {
		return Allowed, true
	}
	return NoIdentity, true
}

// vouched reports whether ids hold an identity the server can vouch for (super ids are
// handled before): an x509 id (x509IDs returns one only for a chain the truststore
// accepted) or a digest id that an entry of /'s ACL names with ADMIN.
func vouched(acls []jute.ACL, ids []jute.ID) bool {
	for _, id := range ids {
		switch id.Scheme {
		case auth.SchemeX509:
			return true
		case auth.SchemeDigest:
			for _, a := range acls {
				if a.ID == id && a.Perms&jute.PermAdmin != 0 {
					return true
				}
			}
		}
	}
	return false
}

// Authenticate is Commands.handleAuthentication: the Authorization header holds a
// scheme and, for digest, "user:password", separated by one space. digest and ip are always
// there; x509 needs its provider (authProvider.N) and takes its id from the client
// certificate of an HTTPS request (admin.needClientAuth asks for one), checked against the
// client port's truststore first, as X509AuthenticationProvider does. Any other scheme
// fails as ZooKeeper fails a scheme without a provider.
func (g *Guard) Authenticate(header string, r *http.Request) ([]jute.ID, error) {
	parts := strings.Split(header, " ")
	for len(parts) > 0 && parts[len(parts)-1] == "" { // Java's split drops trailing empties
		parts = parts[:len(parts)-1]
	}
	if len(parts) != 1 && len(parts) != 2 {
		return nil, errors.New("auth info is not \"<scheme> [<auth>]\"")
	}
	var data []byte
	if len(parts) == 2 {
		data = []byte(parts[1])
	}
	switch parts[0] {
	case auth.SchemeIP:
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			return nil, fmt.Errorf("client address %q: %w", r.RemoteAddr, err)
		}
		return []jute.ID{{Scheme: auth.SchemeIP, ID: host}}, nil
	case auth.SchemeDigest:
		return auth.Authenticate(parts[0], data, g.auth.SuperDigest)
	case auth.SchemeX509:
		if !g.auth.Providers.X509 {
			break
		}
		return g.x509IDs(r)
	}
	return nil, fmt.Errorf("no authentication provider for scheme %q", parts[0])
}

// x509IDs is X509AuthenticationProvider.handleAuthentication for an HTTPS request: the
// x509 id of the client certificate (and super, for X509AuthenticationProvider.superUser).
func (g *Guard) x509IDs(r *http.Request) ([]jute.ID, error) {
	st := ConnState(r)
	if st == nil {
		return nil, errors.New("x509: the request did not come over HTTPS")
	}
	if len(st.PeerCertificates) == 0 {
		return nil, errors.New("x509: no client certificate (admin.needClientAuth=true asks for one)")
	}
	verify := g.auth.VerifyX509
	if verify == nil || g.auth.X509ID == nil {
		return nil, errors.New("x509: no truststore to check the certificate against (ssl.trustStore.location)")
	}
	if err := verify(st.PeerCertificates); err != nil {
		return nil, fmt.Errorf("x509: %w", err)
	}
	id, err := g.auth.X509ID(st.PeerCertificates[0])
	if err != nil {
		return nil, err
	}
	var ids []jute.ID
	if su := g.auth.Providers.X509SuperUser; su != "" && su == id {
		ids = append(ids, jute.ID{Scheme: auth.SchemeSuper, ID: id})
	}
	ids = append(ids, jute.ID{Scheme: auth.SchemeX509, ID: id})
	g.log.Info("admin x509 authentication", "remote", r.RemoteAddr, "id", id)
	return ids, nil
}
