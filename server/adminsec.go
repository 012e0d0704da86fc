package server

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/zkd-io/zkd/internal/admin"
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

// adminVerdict is the outcome of adminAuthorize.
type adminVerdict int

const (
	adminAllowed adminVerdict = iota
	// adminNoPerms: the ids lack a permission on "/"; ZooKeeper refuses them too.
	adminNoPerms
	// adminNoIdentity: ZooKeeper would let the ids in (through world:anyone, or an ip
	// entry); zkd wants an identity the server can vouch for.
	adminNoIdentity
)

// adminNeedsIdentityMsg is the error of an adminNoIdentity refusal: it says how to enable
// the commands, since with / at its default ACL nobody but a super user or an x509 client
// can call them.
const adminNeedsIdentityMsg = "Not authorized: " + adminNeedsIdentityHint

const adminNeedsIdentityHint = "snapshot, restore and console writes need a real identity " +
	"(world:anyone and ip do not count): set zookeeper.DigestAuthenticationProvider.superDigest and send " +
	"\"Authorization: digest super:<password>\", present an x509 client certificate over HTTPS " +
	"(\"Authorization: x509\"), or give a digest identity ADMIN (or ALL) on / " +
	"(setAcl / digest:<user>:<hash>:cdrwa,...) and send \"Authorization: digest <user>:<password>\""

// adminAuthorize decides whether ids may run snapshot or restore, or write through the
// console. ok is false when the server stopped.
func (s *Server) adminAuthorize(ids []jute.ID) (v adminVerdict, ok bool) {
	var acls []jute.ACL
	ok = s.coreQuery(func() {
		if root := s.tree.Get("/"); root != nil {
			acls = s.tree.ACL(root.ACL)
		}
	})
	if !ok {
		return adminNoPerms, false
	}
	if slices.ContainsFunc(ids, func(id jute.ID) bool { return id.Scheme == auth.SchemeSuper }) {
		return adminAllowed, true
	}
	// Commands.handleAuthorization: every bit of ALL, checked one by one, so that the bits
	// may come from different entries. skipACL turns ACLs off, as for clients, but not
	// the identity rule below: restore replaces what no client could.
	if !s.cfg.SkipACL {
		for bit := int32(1); bit <= jute.PermAll; bit <<= 1 {
			if jute.PermAll&bit != 0 && !s.cfg.AuthProviders.Check(acls, bit, ids) {
				return adminNoPerms, true
			}
		}
	}
	if vouched(acls, ids) {
		return adminAllowed, true
	}
	return adminNoIdentity, true
}

// vouched reports whether ids hold an identity the server can vouch for (super ids are
// handled before): an x509 id (adminX509 returns one only for a chain the truststore
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

// adminHostCheck guards the AdminServer against DNS rebinding: a web page the operator's
// browser opens can have its own name resolve to 127.0.0.1 and then talk to a
// loopback-bound AdminServer as a same-origin page (the browser sends Host and Origin with
// the attacker's name, so comparing them proves nothing). A browser always sends the name
// it resolved, so a request naming anything but a loopback name or address, or a name the
// operator listed (zkd.admin.allowedHosts), did not come from a page of this server.
type adminHostCheck struct {
	on bool
	// anyIP accepts any IP literal: a page whose URL names an address has that address
	// as its origin, so it cannot be a rebinding page. Only for a server bound to a
	// non-loopback address (a loopback-bound one is reached at loopback addresses only).
	anyIP   bool
	allowed []string // lower case, no port
}

// newAdminHostCheck builds the check for an AdminServer bound to bind (host:port; "" when
// the handler is served without a listener of its own). It is on when bind is a loopback
// address or name, or when names are listed.
func newAdminHostCheck(bind string, names []string) adminHostCheck {
	c := adminHostCheck{}
	for _, n := range names {
		if n = normHost(n); n != "" {
			c.allowed = append(c.allowed, n)
		}
	}
	host, _, err := net.SplitHostPort(bind)
	loopback := err == nil && isLoopbackHost(normHost(host))
	c.on = loopback || len(c.allowed) > 0
	c.anyIP = !loopback
	return c
}

// normHost is a Host header's or a listed name's host, lower case, without port, brackets
// or a trailing dot.
func normHost(h string) string {
	h = strings.TrimSpace(h)
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Unmap().IsLoopback()
}

// allows reports whether a request naming host (a Host header, or an Origin's host) may
// be served.
func (c adminHostCheck) allows(host string) bool {
	h := normHost(host)
	switch {
	case h == "":
		return false
	case isLoopbackHost(h), slices.Contains(c.allowed, h):
		return true
	}
	_, err := netip.ParseAddr(h)
	return c.anyIP && err == nil
}

// refuse answers 403 and returns true when r names a host the check does not allow, in its
// Host header or its Origin (a cross-origin request from a page elsewhere is refused too,
// whatever it asks).
func (c adminHostCheck) refuse(w http.ResponseWriter, r *http.Request) bool {
	if !c.on {
		return false
	}
	bad := ""
	if !c.allows(r.Host) {
		bad = "Host " + r.Host
	} else if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !c.allows(u.Host) {
			bad = "Origin " + o
		}
	}
	if bad == "" {
		return false
	}
	writeAdminJSON(w, http.StatusForbidden, admin.Object{{Key: "error", Value: "request refused: " + bad +
		" is not a loopback name or address, nor a name zkd.admin.allowedHosts lists (DNS rebinding guard)"}})
	return true
}
