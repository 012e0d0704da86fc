// Package auth owns ZooKeeper's ACL schemes: turning auth packets into session ids
// (digest), validating and rewriting the ACLs of create/setACL (PrepRequestProcessor.fixupACL),
// deciding access (ZooKeeperServer.checkACL), and the presentation helpers for getACL and
// whoAmI. It is pure: addresses are parsed from strings, nothing touches the network.
//
// The provider set is ZooKeeper's default one, ip and digest. Ids of the sasl and x509
// schemes are understood where they can only have come from such a provider (they count as
// authenticated ids and match exactly), but ACL entries naming them are rejected as
// ZooKeeper does when those providers are not configured.
package auth

import (
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/zkd-io/zkd/jute"
)

// Scheme names.
const (
	SchemeWorld  = "world"
	SchemeAuth   = "auth"
	SchemeDigest = "digest"
	SchemeIP     = "ip"
	SchemeSuper  = "super"
	SchemeSASL   = "sasl"
	SchemeX509   = "x509"
)

// Super is the pseudo id that bypasses every ACL.
var Super = jute.ID{Scheme: SchemeSuper, ID: ""}

// Digest returns the digest id for an auth packet's "user:password" text, exactly as
// DigestAuthenticationProvider.generateDigest: the part before the first ':' (or the whole
// text when there is none), ':', and BASE64(SHA1(whole text)).
func Digest(idPassword string) string {
	user, _, _ := strings.Cut(idPassword, ":")
	sum := sha1.Sum([]byte(idPassword))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// DigestID returns the ACL id for user and password: user:BASE64(SHA1("user:password")).
// It is Digest(user + ":" + password), so a user name containing ':' gets the id ZooKeeper
// would give it (only the text before the first ':' is kept as the name).
func DigestID(user, password string) string {
	return Digest(user + ":" + password)
}

// Authenticate handles an auth packet (opcode 100) and returns the ids the session gains, in
// the order ZooKeeper adds them. superDigest is the configured
// zookeeper.DigestAuthenticationProvider.superDigest ("super:<base64 sha1>"), "" for none.
//
//   - "digest" always succeeds for non-null auth data: the digest id, preceded by Super when
//     the computed id equals superDigest. Text without ':' is accepted too (ZooKeeper digests
//     it whole: "bob" becomes "bob:BASE64(SHA1(bob))"). Null auth data fails, as the Java
//     provider throws on it.
//   - "ip" succeeds and adds nothing: ZooKeeper adds ip:<client address>, which every
//     connection already holds from connect time (and duplicates are ignored).
//   - any other scheme fails.
//
// Failures wrap jute.ErrAuthFailed; the server answers AUTHFAILED and closes the connection.
func Authenticate(scheme string, auth []byte, superDigest string) ([]jute.ID, error) {
	switch scheme {
	case SchemeDigest:
		if auth == nil {
			return nil, fmt.Errorf("auth: digest with null auth data: %w", jute.ErrAuthFailed)
		}
		id := Digest(javaString(auth))
		if superDigest != "" && id == superDigest {
			return []jute.ID{Super, {Scheme: SchemeDigest, ID: id}}, nil
		}
		return []jute.ID{{Scheme: SchemeDigest, ID: id}}, nil
	case SchemeIP:
		return nil, nil
	}
	return nil, fmt.Errorf("auth: unknown scheme %q: %w", scheme, jute.ErrAuthFailed)
}

// javaString mirrors new String(bytes) under UTF-8: invalid sequences become U+FFFD, as many
// as the JDK makes of them.
func javaString(b []byte) string { return jute.JavaString(b) }

// IsAuthenticated reports whether ids of scheme stand for an authenticated identity, i.e.
// whether `auth` ACL entries expand to them (AuthenticationProvider.isAuthenticated): digest,
// sasl and x509 do; ip does not; super has no provider and does not either.
func IsAuthenticated(scheme string) bool {
	switch scheme {
	case SchemeDigest, SchemeSASL, SchemeX509:
		return true
	}
	return false
}

// ValidDigestID reports whether id is a well-formed digest ACL id, exactly as
// DigestAuthenticationProvider.isValid: Java's id.split(":") must yield two parts, and that
// split drops trailing empty strings ("a:b:" is valid, "a:" and "a:b:c" are not).
func ValidDigestID(id string) bool {
	parts := strings.Split(id, ":")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return len(parts) == 2
}

// ValidID reports whether an explicit ACL id (not world:anyone, not auth) names a scheme
// with a provider and is well-formed for it.
func ValidID(id jute.ID) bool {
	switch id.Scheme {
	case SchemeDigest:
		return ValidDigestID(id.ID)
	case SchemeIP:
		return ValidIPID(id.ID)
	}
	return false
}

// FixupACL validates and rewrites the ACL of a create or setACL request the way
// PrepRequestProcessor.fixupACL does, given the caller's session ids:
//
//   - exact duplicates are removed, keeping the first occurrence; an empty list is invalid;
//   - world:anyone is kept; any other world id is invalid (world has no provider);
//   - each auth entry (whatever its id) is replaced by one entry with its perms for every
//     authenticated id of the caller (see IsAuthenticated), in session order; none is
//     invalid. The expansion is not de-duplicated again, as in ZooKeeper;
//   - digest and ip entries must be well-formed; any other scheme is invalid;
//   - perms are not checked.
//
// The error is jute.ErrInvalidACL. The input slice is not modified.
func FixupACL(acls []jute.ACL, authIDs []jute.ID) ([]jute.ACL, error) {
	return Providers{}.FixupACL(acls, authIDs)
}

// FixupACL is FixupACL with p's providers: sasl and x509 entries are valid when their
// provider is configured.
func (p Providers) FixupACL(acls []jute.ACL, authIDs []jute.ID) ([]jute.ACL, error) {
	uniq := make([]jute.ACL, 0, len(acls))
	for _, a := range acls {
		if !containsACL(uniq, a) {
			uniq = append(uniq, a)
		}
	}
	if len(uniq) == 0 {
		return nil, jute.ErrInvalidACL
	}
	out := make([]jute.ACL, 0, len(uniq))
	for _, a := range uniq {
		switch {
		case a.ID == jute.WorldAnyone:
			out = append(out, a)
		case a.ID.Scheme == SchemeAuth:
			found := false
			for _, id := range authIDs {
				if IsAuthenticated(id.Scheme) {
					found = true
					out = append(out, jute.ACL{Perms: a.Perms, ID: id})
				}
			}
			if !found {
				return nil, jute.ErrInvalidACL
			}
		default:
			if !p.ValidID(a.ID) {
				return nil, jute.ErrInvalidACL
			}
			out = append(out, a)
		}
	}
	return out, nil
}

func containsACL(list []jute.ACL, a jute.ACL) bool {
	for _, b := range list {
		if a == b {
			return true
		}
	}
	return false
}

// Check reports whether a caller holding ids may perform an operation needing perm on a node
// with acls (ZooKeeperServer.checkACL without skipACL): an empty list allows everything, a
// super id allows everything, otherwise some entry must share a bit with perm and be
// world:anyone or match one of the caller's ids of the same scheme (ip by prefix under its
// mask, every other scheme by exact id). getACL passes READ|ADMIN: any one bit suffices.
func Check(acls []jute.ACL, perm int32, ids []jute.ID) bool {
	return Providers{}.Check(acls, perm, ids)
}

// Check is Check with p's providers' matching rules: a sasl id "super" matches every sasl
// entry (SASLAuthenticationProvider.matches), and X509SuperUser every x509 entry.
func (p Providers) Check(acls []jute.ACL, perm int32, ids []jute.ID) bool {
	if len(acls) == 0 {
		return true
	}
	for _, id := range ids {
		if id.Scheme == SchemeSuper {
			return true
		}
	}
	for _, a := range acls {
		if a.Perms&perm == 0 {
			continue
		}
		if a.ID == jute.WorldAnyone {
			return true
		}
		for _, id := range ids {
			if id.Scheme != a.ID.Scheme {
				continue
			}
			switch id.Scheme {
			case SchemeIP:
				if IPMatches(a.ID.ID, id.ID) {
					return true
				}
			case SchemeWorld:
				// Only world:anyone means anything; no session holds a world id.
			case SchemeSASL:
				if id.ID == a.ID.ID || id.ID == "super" {
					return true
				}
			case SchemeX509:
				if id.ID == a.ID.ID || (p.X509SuperUser != "" && id.ID == p.X509SuperUser) {
					return true
				}
			default:
				if id.ID == a.ID.ID {
					return true
				}
			}
		}
	}
	return false
}

// MaskDigests returns a copy of acls with each digest id's hash hidden, as getACL answers a
// caller without ADMIN on the node: Java's id.replaceAll(":.*", ":x"), so "user:hash" becomes
// "user:x". Other entries are copied unchanged.
func MaskDigests(acls []jute.ACL) []jute.ACL {
	if acls == nil {
		return nil
	}
	out := make([]jute.ACL, len(acls))
	for i, a := range acls {
		if a.ID.Scheme == SchemeDigest {
			a.ID.ID = maskDigest(a.ID.ID)
		}
		out[i] = a
	}
	return out
}

// maskDigest applies replaceAll(":.*", ":x"). In a Java regex '.' stops at line terminators,
// so each line's tail from its first ':' is replaced separately.
func maskDigest(s string) string {
	if !strings.Contains(s, ":") {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], ':')
		if j < 0 {
			sb.WriteString(s[i:])
			break
		}
		sb.WriteString(s[i : i+j])
		sb.WriteString(":x")
		i += j + 1
		// Skip to the next line terminator; the outer loop copies it.
		for i < len(s) {
			r, n := utf8.DecodeRuneInString(s[i:])
			if isJavaLineTerminator(r) {
				break
			}
			i += n
		}
	}
	return sb.String()
}

func isJavaLineTerminator(r rune) bool {
	switch r {
	case '\n', '\r', '\u0085', '\u2028', '\u2029':
		return true
	}
	return false
}

// ClientInfo answers whoAmI (AuthUtil.getClientInfos): one entry per session id with the
// scheme and the provider's user name: for digest the text before the first ':', for ip,
// sasl and x509 the id itself, and "" for schemes without a provider (super).
func ClientInfo(ids []jute.ID) []jute.ClientInfo {
	out := make([]jute.ClientInfo, 0, len(ids))
	for _, id := range ids {
		var user string
		switch id.Scheme {
		case SchemeDigest:
			user, _, _ = strings.Cut(id.ID, ":")
		case SchemeIP, SchemeSASL, SchemeX509:
			user = id.ID
		}
		out = append(out, jute.ClientInfo{AuthScheme: id.Scheme, User: user})
	}
	return out
}

// javaParseInt accepts what Integer.parseInt accepts for ASCII input: an optional sign
// and decimal digits that fit in 32 bits.
func javaParseInt(s string) (int, bool) {
	v, err := strconv.ParseInt(s, 10, 32)
	return int(v), err == nil
}
