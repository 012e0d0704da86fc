package auth

import (
	"regexp"
	"strings"

	"github.com/zkd-io/zkd/jute"
)

// Providers says which of ZooKeeper's optional authentication providers are configured
// (authProvider.N naming SASLAuthenticationProvider or X509AuthenticationProvider; x509 is
// also there by default on a server with a secure client port, see
// config.Security.X509Registered). ip and digest are always there. The zero value is
// ZooKeeper's default provider set for a server without a secure client port.
type Providers struct {
	SASL bool
	X509 bool
	// X509SuperUser is X509AuthenticationProvider.superUser: that x509 id matches every x509
	// ACL entry.
	X509SuperUser string
}

// ValidID reports whether an explicit ACL id names a configured scheme and is well-formed
// for its provider (AuthenticationProvider.isValid).
func (p Providers) ValidID(id jute.ID) bool {
	switch id.Scheme {
	case SchemeSASL:
		return p.SASL && ValidKerberosName(id.ID)
	case SchemeX509:
		return p.X509 && ValidX500Name(id.ID)
	}
	return ValidID(id)
}

// kerberosName is KerberosName's nameParser: service[/host]@REALM.
var kerberosName = regexp.MustCompile(`^([^/@]*)(/([^/@]*))?@([^/@]*)$`)

// ValidKerberosName is SASLAuthenticationProvider.isValid: new KerberosName(id) does not
// throw, i.e. id has no '@' or is service[/host]@REALM.
func ValidKerberosName(id string) bool {
	return !strings.Contains(id, "@") || kerberosName.MatchString(id)
}

// x500Attr is an attribute type X500Principal accepts: a keyword or an OID.
var x500Attr = regexp.MustCompile(`^(?i:[a-z][a-z0-9-]*|(oid\.)?[0-9]+(\.[0-9]+)*)$`)

// ValidX500Name approximates X509AuthenticationProvider.isValid (new X500Principal(id) does
// not throw): a comma- (or semicolon-) separated list of type=value pairs, '+' joining
// pairs of one RDN, backslash escapes and quoted values; "" is the empty name.
func ValidX500Name(id string) bool {
	if strings.TrimSpace(id) == "" {
		return true
	}
	for _, rdn := range splitUnescaped(id, ",;") {
		for _, ava := range splitUnescaped(rdn, "+") {
			typ, _, ok := strings.Cut(ava, "=")
			if !ok || !x500Attr.MatchString(strings.TrimSpace(typ)) {
				return false
			}
		}
	}
	return true
}

// splitUnescaped splits s at any of seps outside quotes and not escaped by a backslash.
func splitUnescaped(s, seps string) []string {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && strings.IndexByte(seps, c) >= 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
