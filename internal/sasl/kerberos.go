package sasl

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// KerberosName is a principal split as ZooKeeper's KerberosName splits it:
// service[/host]@realm, or a simple name without '@' (which may hold '/': it is then all
// Service).
type KerberosName struct {
	Service  string
	Host     string
	Realm    string
	HasHost  bool
	HasRealm bool
}

// ErrKerberosName matches a name that is not a valid principal (KerberosName's
// IllegalArgumentException) and a name no auth_to_local rule applies to (NoMatchingRule).
var ErrKerberosName = errors.New("sasl: kerberos name")

var kerberosNameRE = regexp.MustCompile(`^([^/@]*)(/([^/@]*))?@([^/@]*)$`)

// ParseKerberosName splits name; a name with '@' that is not service[/host]@realm is an
// error.
func ParseKerberosName(name string) (KerberosName, error) {
	m := kerberosNameRE.FindStringSubmatchIndex(name)
	if m == nil {
		if strings.Contains(name, "@") {
			return KerberosName{}, fmt.Errorf("%w: malformed Kerberos name %q", ErrKerberosName, name)
		}
		return KerberosName{Service: name}, nil
	}
	k := KerberosName{Service: name[m[2]:m[3]], Realm: name[m[8]:m[9]], HasRealm: true}
	if m[6] >= 0 {
		k.Host, k.HasHost = name[m[6]:m[7]], true
	}
	return k, nil
}

// String puts the name back together.
func (k KerberosName) String() string {
	s := k.Service
	if k.HasHost {
		s += "/" + k.Host
	}
	if k.HasRealm {
		s += "@" + k.Realm
	}
	return s
}

// ValidID is SASLAuthenticationProvider.isValid: whether id parses as a Kerberos name.
func ValidID(id string) bool {
	_, err := ParseKerberosName(id)
	return err == nil
}

// Rule is one auth_to_local rule (zookeeper.security.auth_to_local): DEFAULT, or
// RULE:[n:format](match)s/from/to/g. Patterns are Go regular expressions (RE2), which
// agree with Java's on the patterns such rules use (no back-references or look-around).
type Rule struct {
	isDefault  bool
	components int
	format     string
	match      *regexp.Regexp // anchored: Java's matches()
	from       *regexp.Regexp
	to         string // in regexp.Expand's syntax
	repeat     bool
	text       string
}

func (r Rule) String() string { return r.text }

var ruleRE = regexp.MustCompile(`^\s*((DEFAULT)|(RULE:\[(\d*):([^\]]*)\](\(([^)]*)\))?(s/([^/]*)/([^/]*)/(g)?)?))`)

// ParseRules parses an auth_to_local value as KerberosName.parseRules does.
func ParseRules(s string) ([]Rule, error) {
	var rules []Rule
	rest := strings.TrimSpace(s)
	for rest != "" {
		m := ruleRE.FindStringSubmatch(rest)
		if m == nil {
			return nil, fmt.Errorf("%w: invalid auth_to_local rule %q", ErrKerberosName, rest)
		}
		r := Rule{text: strings.TrimSpace(m[0])}
		if m[2] != "" {
			r.isDefault = true
		} else {
			n, err := strconv.Atoi(m[4])
			if err != nil {
				return nil, fmt.Errorf("%w: auth_to_local rule %q: component count: %w", ErrKerberosName, r.text, err)
			}
			r.components, r.format = n, m[5]
			if m[6] != "" {
				if r.match, err = regexp.Compile(`^(?:` + m[7] + `)$`); err != nil {
					return nil, fmt.Errorf("%w: auth_to_local rule %q: %w", ErrKerberosName, r.text, err)
				}
			}
			if m[8] != "" {
				if r.from, err = regexp.Compile(m[9]); err != nil {
					return nil, fmt.Errorf("%w: auth_to_local rule %q: %w", ErrKerberosName, r.text, err)
				}
				r.to, r.repeat = javaReplacement(m[10]), m[11] == "g"
			}
		}
		rules = append(rules, r)
		rest = rest[len(m[0]):]
	}
	return rules, nil
}

// javaReplacement rewrites a java.util.regex replacement ($n group references, backslash
// escapes) into regexp.Expand's template syntax.
func javaReplacement(to string) string {
	var sb strings.Builder
	for i := 0; i < len(to); i++ {
		switch c := to[i]; {
		case c == '\\' && i+1 < len(to):
			i++
			if to[i] == '$' {
				sb.WriteString("$$")
			} else {
				sb.WriteByte(to[i])
			}
		case c == '$':
			j := i + 1
			for j < len(to) && to[j] >= '0' && to[j] <= '9' {
				j++
			}
			if j == i+1 {
				sb.WriteString("$$")
				continue
			}
			sb.WriteString("${" + to[i+1:j] + "}")
			i = j - 1
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

// replaceParameters substitutes $n in format by params[n] (Rule.replaceParameters).
func replaceParameters(format string, params []string) (string, error) {
	var sb strings.Builder
	for i := 0; i < len(format); {
		j := strings.IndexByte(format[i:], '$')
		if j < 0 {
			sb.WriteString(format[i:])
			break
		}
		sb.WriteString(format[i : i+j])
		i += j + 1
		k := i
		for k < len(format) && format[k] >= '0' && format[k] <= '9' {
			k++
		}
		n, err := strconv.Atoi(format[i:k])
		if err != nil {
			return "", fmt.Errorf("%w: bad format in username mapping %q", ErrKerberosName, format)
		}
		if n < 0 || n >= len(params) {
			return "", fmt.Errorf("%w: index %d from %q is outside of the valid range 0 to %d",
				ErrKerberosName, n, format, len(params)-1)
		}
		sb.WriteString(params[n])
		i = k
	}
	return sb.String(), nil
}

// apply returns the short name, or ok false when the rule does not apply.
func (r Rule) apply(params []string, defaultRealm string) (string, bool, error) {
	var result string
	ok := false
	if r.isDefault {
		if params[0] == defaultRealm {
			result, ok = params[1], true
		}
	} else if len(params)-1 == r.components {
		base, err := replaceParameters(r.format, params)
		if err != nil {
			return "", false, err
		}
		if r.match == nil || r.match.MatchString(base) {
			result, ok = base, true
			if r.from != nil {
				result = replaceRE(base, r.from, r.to, r.repeat)
			}
		}
	}
	if ok && strings.ContainsAny(result, "/@") {
		return "", false, fmt.Errorf("%w: non-simple name %q after auth_to_local rule %s", ErrKerberosName, result, r)
	}
	return result, ok, nil
}

func replaceRE(base string, from *regexp.Regexp, to string, all bool) string {
	if all {
		return from.ReplaceAllString(base, to)
	}
	m := from.FindStringSubmatchIndex(base)
	if m == nil {
		return base
	}
	out := base[:m[0]]
	out = string(from.ExpandString([]byte(out), to, base, m))
	return out + base[m[1]:]
}

// KerberosNames holds the settings that turn an authenticated SASL name into the id of the
// "sasl" ACL scheme (SaslServerCallbackHandler.handleAuthorizeCallback).
type KerberosNames struct {
	RemoveHost   bool   // kerberos.removeHostFromPrincipal
	RemoveRealm  bool   // kerberos.removeRealmFromPrincipal
	Rules        []Rule // zookeeper.security.auth_to_local; nil means DEFAULT
	DefaultRealm string // krb5.conf's default_realm; "" when there is none, as ZooKeeper
}

// ShortName is KerberosName.getShortName: a simple name is itself; otherwise the first
// rule that applies maps it.
func (n KerberosNames) ShortName(k KerberosName) (string, error) {
	if !k.HasHost && !k.HasRealm {
		return k.Service, nil
	}
	params := []string{k.Realm, k.Service}
	if k.HasHost {
		params = append(params, k.Host)
	}
	rules := n.Rules
	if rules == nil {
		rules = []Rule{{isDefault: true, text: "DEFAULT"}}
	}
	for _, r := range rules {
		s, ok, err := r.apply(params, n.DefaultRealm)
		if err != nil {
			return "", err
		}
		if ok {
			return s, nil
		}
	}
	return "", fmt.Errorf("%w: no rules applied to %s", ErrKerberosName, k)
}

// AuthorizationID is the sasl ACL id ZooKeeper gives the authenticated name authnID: its
// short name, then "/host" unless RemoveHost, then "@realm" unless RemoveRealm.
func (n KerberosNames) AuthorizationID(authnID string) (string, error) {
	k, err := ParseKerberosName(authnID)
	if err != nil {
		return "", err
	}
	s, err := n.ShortName(k)
	if err != nil {
		return "", err
	}
	if k.HasHost && !n.RemoveHost {
		s += "/" + k.Host
	}
	if k.HasRealm && !n.RemoveRealm {
		s += "@" + k.Realm
	}
	return s, nil
}

// Authorize is the client port's authorisation (ServerConfig.Authorize): every
// authenticated client is authorised, under AuthorizationID(authnID) whatever authzid it
// asked for.
//
// One deliberate difference: when no auth_to_local rule applies, ZooKeeper logs the error
// and leaves the id the client asked for (its authzid, which it chooses freely). zkd keeps
// that only when the client asked for its own name, and refuses otherwise.
func (n KerberosNames) Authorize(authnID, authzID string) (string, error) {
	id, err := n.AuthorizationID(authnID)
	if err == nil {
		return id, nil
	}
	var noRule bool
	if k, perr := ParseKerberosName(authnID); perr == nil {
		_, serr := n.ShortName(k)
		noRule = serr != nil
	}
	if noRule && authzID == authnID {
		return authzID, nil
	}
	return "", err
}

// Matches is SASLAuthenticationProvider.matches: whether a connection authenticated as id
// matches the ACL id aclExpr of the sasl scheme. "super" matches everything; so does every
// id when aclExpr is letAnySaslUserDoX (zookeeper.letAnySaslUserDoX; "" means unset).
func Matches(id, aclExpr, letAnySaslUserDoX string) bool {
	if id == "super" || id == aclExpr {
		return true
	}
	return letAnySaslUserDoX != "" && aclExpr == letAnySaslUserDoX
}

// IsSuperUser is ZooKeeperServer.isSaslSuperUser: whether the authorization id is one of
// the super users (the values of zookeeper.superUser and zookeeper.superUser.*), in which
// case the connection also gets the super id.
func IsSuperUser(id string, superUsers ...string) bool {
	if id == "" {
		return false
	}
	for _, s := range superUsers {
		if s == id {
			return true
		}
	}
	return false
}
