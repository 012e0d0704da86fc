package sasl

import (
	"errors"
	"fmt"
	"strings"
)

// JAAS login configuration, the file Java names with -Djava.security.auth.login.config and
// ZooKeeper reads its SASL users, client credentials and keytabs from:
//
//	// comment, /* comment */
//	Server {
//	    org.apache.zookeeper.server.auth.DigestLoginModule required
//	    user_super="adminsecret"
//	    user_bob="bobsecret";
//	    com.sun.security.auth.module.Krb5LoginModule optional useKeyTab=true keyTab="/k";
//	};
//
// Tokens as Java's ConfigFile reads them with a StreamTokenizer: words (letters, '$', '_',
// '*', then also digits, '.' and '-'), strings in double quotes (with Java's backslash
// escapes; a string also ends at the end of its line), and the characters { } ; =; '/'
// not followed by '*' starts a comment to the end of the line. Single-quoted strings
// are tokens Java refuses as names and values. A token starting with a digit, '.' or
// '-' is a number, which Java refuses where a name or value is expected, and so does zkd.
// Flags are required, requisite, sufficient or optional in any case. A section named twice
// is an error; an option given twice keeps the last value; a section without modules is
// as good as absent (Java's getAppConfigurationEntry returns null for it). Java expands ${property} in
// option values from its system properties; zkd has none and keeps values as written.

// Login module classes ZooKeeper's sections name.
const (
	DigestLoginModule = "org.apache.zookeeper.server.auth.DigestLoginModule"
	Krb5LoginModule   = "com.sun.security.auth.module.Krb5LoginModule"
)

// MaxJAASSize bounds a JAAS file.
const MaxJAASSize = 1 << 20

// JAAS is a parsed login configuration.
type JAAS struct {
	Sections map[string][]LoginModule
	Order    []string // section names in file order
}

// LoginModule is one entry of a section.
type LoginModule struct {
	Class   string
	Flag    string // REQUIRED, REQUISITE, SUFFICIENT or OPTIONAL
	Options map[string]string
}

// ErrJAAS matches every error about a JAAS file's contents.
var ErrJAAS = errors.New("sasl: JAAS configuration")

type jaasTok struct {
	kind byte // 'w' word, 's' string, 'n' number, or the character itself
	text string
	line int
}

func isJAASWordStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0xa0 || c == '$' || c == '_' || c == '*'
}

func isJAASNumeric(c byte) bool { return c >= '0' && c <= '9' || c == '.' || c == '-' }

func jaasTokens(data []byte) ([]jaasTok, error) {
	var toks []jaasTok
	line := 1
	for i := 0; i < len(data); {
		c := data[i]
		switch {
		case c == '\n':
			line++
			i++
		case c <= ' ':
			i++
		case c == '/':
			if i+1 < len(data) && data[i+1] == '*' {
				end := strings.Index(string(data[i+2:]), "*/")
				if end < 0 {
					return nil, fmt.Errorf("%w: line %d: unterminated /* comment", ErrJAAS, line)
				}
				line += strings.Count(string(data[i:i+2+end]), "\n")
				i += 2 + end + 2
				continue
			}
			// "//" and, as StreamTokenizer's comment character, a lone '/'.
			for i < len(data) && data[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'':
			s, n := jaasString(data[i:])
			kind := byte('s')
			if c == '\'' {
				// StreamTokenizer reads it as a string, but ConfigFile takes only
				// double-quoted ones: keep it apart so the parser refuses it.
				kind = '\''
			}
			toks = append(toks, jaasTok{kind, s, line})
			i += n
		case isJAASWordStart(c):
			j := i
			for j < len(data) && (isJAASWordStart(data[j]) || isJAASNumeric(data[j])) {
				j++
			}
			toks = append(toks, jaasTok{'w', string(data[i:j]), line})
			i = j
		case isJAASNumeric(c):
			j := i
			for j < len(data) && (isJAASWordStart(data[j]) || isJAASNumeric(data[j])) {
				j++
			}
			toks = append(toks, jaasTok{'n', string(data[i:j]), line})
			i = j
		default:
			toks = append(toks, jaasTok{c, string(c), line})
			i++
		}
	}
	return toks, nil
}

// jaasString reads a quoted string at the start of data as StreamTokenizer does (it ends
// at the closing quote, or at the end of the line); n is the bytes consumed.
func jaasString(data []byte) (s string, n int) {
	q := data[0]
	var sb strings.Builder
	i := 1
	for i < len(data) && data[i] != q && data[i] != '\n' && data[i] != '\r' {
		c := data[i]
		i++
		if c != '\\' || i >= len(data) {
			sb.WriteByte(c)
			continue
		}
		c = data[i]
		i++
		switch c {
		case 'a':
			sb.WriteByte(7)
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'v':
			sb.WriteByte('\v')
		default:
			if c >= '0' && c <= '7' {
				v := int(c - '0')
				max := 2
				if c > '3' {
					max = 1
				}
				for k := 0; k < max && i < len(data) && data[i] >= '0' && data[i] <= '7'; k++ {
					v = v*8 + int(data[i]-'0')
					i++
				}
				sb.WriteByte(byte(v))
			} else {
				sb.WriteByte(c)
			}
		}
	}
	if i < len(data) && data[i] == q {
		i++
	}
	return sb.String(), i
}

// ParseJAAS parses a JAAS login configuration file.
func ParseJAAS(data []byte) (JAAS, error) {
	j := JAAS{Sections: map[string][]LoginModule{}}
	if len(data) > MaxJAASSize {
		return j, fmt.Errorf("%w: %d bytes, at most %d", ErrJAAS, len(data), MaxJAASSize)
	}
	toks, err := jaasTokens(data)
	if err != nil {
		return j, err
	}
	p := 0
	lastLine := 1
	if len(toks) > 0 {
		lastLine = toks[len(toks)-1].line
	}
	next := func(want string) (jaasTok, error) {
		if p >= len(toks) {
			return jaasTok{}, fmt.Errorf("%w: line %d: expected %s, found end of file", ErrJAAS, lastLine, want)
		}
		t := toks[p]
		p++
		return t, nil
	}
	name := func(want string) (string, error) {
		t, err := next(want)
		if err != nil {
			return "", err
		}
		if t.kind != 'w' && t.kind != 's' {
			return "", fmt.Errorf("%w: line %d: expected %s, found %q", ErrJAAS, t.line, want, t.text)
		}
		return t.text, nil
	}
	punct := func(c byte) error {
		t, err := next(string(c))
		if err != nil {
			return err
		}
		if t.kind != c {
			return fmt.Errorf("%w: line %d: expected %q, found %q", ErrJAAS, t.line, c, t.text)
		}
		return nil
	}
	peek := func(c byte) bool { return p < len(toks) && toks[p].kind == c }
	for p < len(toks) {
		section, err := name("section name")
		if err != nil {
			return j, err
		}
		line := toks[p-1].line
		if err := punct('{'); err != nil {
			return j, err
		}
		var modules []LoginModule
		for !peek('}') {
			class, err := name("login module class")
			if err != nil {
				return j, err
			}
			flag, err := name("control flag")
			if err != nil {
				return j, err
			}
			m := LoginModule{Class: class, Flag: strings.ToUpper(flag), Options: map[string]string{}}
			switch m.Flag {
			case "REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL":
			default:
				return j, fmt.Errorf("%w: line %d: invalid control flag %q", ErrJAAS, toks[p-1].line, flag)
			}
			for !peek(';') {
				key, err := name("option key")
				if err != nil {
					return j, err
				}
				if err := punct('='); err != nil {
					return j, err
				}
				val, err := name("option value")
				if err != nil {
					return j, err
				}
				m.Options[key] = val
			}
			p++ // ';'
			modules = append(modules, m)
		}
		p++ // '}'
		if err := punct(';'); err != nil {
			return j, err
		}
		if _, dup := j.Sections[section]; dup {
			return j, fmt.Errorf("%w: line %d: section %q given twice", ErrJAAS, line, section)
		}
		j.Sections[section] = modules
		j.Order = append(j.Order, section)
	}
	return j, nil
}

// Section returns the login modules of a section; a section without any is an error, as
// a missing one.
func (j JAAS) Section(name string) ([]LoginModule, error) {
	m := j.Sections[name]
	if len(m) == 0 {
		return nil, fmt.Errorf("%w: no section %q", ErrJAAS, name)
	}
	return m, nil
}

const userPrefix = "user_"

// ServerUsers returns the DIGEST-MD5 users of the client port's server section
// (sasl.serverconfig, "Server"): every user_NAME="password" option of every module of the
// section, as ServerCnxnFactory.getDigestMd5Credentials collects them.
func (j JAAS) ServerUsers(section string) (map[string]string, error) {
	return j.users(section, false)
}

// QuorumUsers returns the DIGEST-MD5 users of a quorum server section
// (quorum.auth.server.saslLoginContext, "QuorumServer"): the user_NAME options of its
// DigestLoginModule entries only, as SaslQuorumServerCallbackHandler collects them.
func (j JAAS) QuorumUsers(section string) (map[string]string, error) {
	return j.users(section, true)
}

func (j JAAS) users(section string, digestOnly bool) (map[string]string, error) {
	mods, err := j.Section(section)
	if err != nil {
		return nil, err
	}
	users := map[string]string{}
	for _, m := range mods {
		if digestOnly && m.Class != DigestLoginModule {
			continue
		}
		for k, v := range m.Options {
			if name, ok := strings.CutPrefix(k, userPrefix); ok {
				users[name] = v
			}
		}
	}
	return users, nil
}

// DigestClient returns the username and password of a client section's
// DigestLoginModule ("Client" for ZooKeeper's client, quorum.auth.learner.saslLoginContext
// "QuorumLearner" for a learner).
func (j JAAS) DigestClient(section string) (username, password string, err error) {
	mods, err := j.Section(section)
	if err != nil {
		return "", "", err
	}
	for _, m := range mods {
		if m.Class != DigestLoginModule {
			continue
		}
		u, uok := m.Options["username"]
		pw, pok := m.Options["password"]
		if !uok || !pok {
			return "", "", fmt.Errorf("%w: section %q: DigestLoginModule needs username and password", ErrJAAS, section)
		}
		return u, pw, nil
	}
	return "", "", fmt.Errorf("%w: section %q has no %s", ErrJAAS, section, DigestLoginModule)
}

// Krb5Options are the Krb5LoginModule options the GSSAPI mechanism uses.
type Krb5Options struct {
	Principal      string
	KeyTab         string
	UseKeyTab      bool
	StoreKey       bool
	UseTicketCache bool
	DoNotPrompt    bool
	Options        map[string]string // every option, as written
}

// Krb5 returns the options of a section's Krb5LoginModule. Booleans are true when written
// "true" in any case, as the module reads them.
func (j JAAS) Krb5(section string) (Krb5Options, error) {
	mods, err := j.Section(section)
	if err != nil {
		return Krb5Options{}, err
	}
	for _, m := range mods {
		if m.Class != Krb5LoginModule {
			continue
		}
		b := func(k string) bool { return strings.EqualFold(m.Options[k], "true") }
		return Krb5Options{
			Principal: m.Options["principal"], KeyTab: m.Options["keyTab"],
			UseKeyTab: b("useKeyTab"), StoreKey: b("storeKey"), UseTicketCache: b("useTicketCache"),
			DoNotPrompt: b("doNotPrompt"), Options: m.Options,
		}, nil
	}
	return Krb5Options{}, fmt.Errorf("%w: section %q has no %s", ErrJAAS, section, Krb5LoginModule)
}

// HasModule reports whether the section names the login module class.
func (j JAAS) HasModule(section, class string) bool {
	for _, m := range j.Sections[section] {
		if m.Class == class {
			return true
		}
	}
	return false
}
