package sasl

import (
	"bytes"
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Bounds on what a peer may send.
const (
	// MaxDigestToken is the largest DIGEST-MD5 token accepted (the JDK server's
	// MAX_RESPONSE_LENGTH; RFC 2831 allows 2048 for a challenge, 4096 for a response).
	MaxDigestToken = 4096
	// maxDirectives bounds the directives of one token (the RFC defines 16 kinds).
	maxDirectives = 64
	// rawNonceSize is the JDK's RAW_NONCE_SIZE: 30 random bytes, 40 in base64.
	rawNonceSize = 30
	// defaultMaxbuf is the JDK's DEFAULT_MAXBUF, which its client always sends.
	defaultMaxbuf = 65536
)

// directives is a parsed token: lower-case key to value; realms collects repeated realm
// directives where they are allowed.
type directives struct {
	vals   map[string][]byte
	realms [][]byte
}

func (d directives) get(k string) ([]byte, bool) { v, ok := d.vals[k]; return v, ok }

func asciiLower(b []byte) string {
	out := []byte(string(b))
	for i, c := range out {
		if c >= 'A' && c <= 'Z' {
			out[i] = c + 'a' - 'A'
		}
	}
	return string(out)
}

// isLWS is the JDK's isLws: space, tab, CR, LF.
func isLWS(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }

func skipLWS(buf []byte, i int) int {
	for i < len(buf) && isLWS(buf[i]) {
		i++
	}
	return i
}

// parseDirectives reads a DIGEST-MD5 token as the JDK's DigestMD5Base.parseDirectives
// does; multiRealm allows several realm directives (a server's challenge).
func parseDirectives(buf []byte, multiRealm bool) (directives, error) {
	d := directives{vals: map[string][]byte{}}
	if len(buf) > MaxDigestToken {
		return d, authErr("token of %d bytes, at most %d", len(buf), MaxDigestToken)
	}
	count := 0
	add := func(key, value []byte) error {
		count++
		if count > maxDirectives {
			return authErr("more than %d directives", maxDirectives)
		}
		// Only the ASCII keys of RFC 2831 are looked up; lower-casing bytes, not runes,
		// leaves other keys as they came.
		k := asciiLower(key)
		if k == "realm" && multiRealm {
			d.realms = append(d.realms, value)
			return nil
		}
		if _, dup := d.vals[k]; dup {
			return authErr("peer sent more than one %s directive", k)
		}
		d.vals[k] = value
		return nil
	}
	var key, value []byte
	gettingKey, quoted, expectSep := true, false, false
	i := skipLWS(buf, 0)
	for i < len(buf) {
		b := buf[i]
		switch {
		case gettingKey:
			switch {
			case b == ',':
				if len(key) != 0 {
					return d, authErr("directive key contains a ','")
				}
				i = skipLWS(buf, i+1)
			case b == '=':
				if len(key) == 0 {
					return d, authErr("empty directive key")
				}
				gettingKey = false
				i = skipLWS(buf, i+1)
				if i >= len(buf) {
					return d, authErr("valueless directive %q", key)
				}
				if buf[i] == '"' {
					quoted = true
					i++
				}
			case isLWS(b):
				i = skipLWS(buf, i+1)
				if i >= len(buf) || buf[i] != '=' {
					return d, authErr("'=' expected after key %q", key)
				}
			default:
				key = append(key, b)
				i++
			}
		case quoted:
			switch b {
			case '\\':
				i++
				if i >= len(buf) {
					return d, authErr("unmatched quote in directive %q", key)
				}
				value = append(value, buf[i])
				i++
			case '"':
				i++
				quoted, expectSep = false, true
			default:
				value = append(value, b)
				i++
			}
		case isLWS(b) || b == ',':
			if err := add(key, value); err != nil {
				return d, err
			}
			key, value = nil, nil
			gettingKey, expectSep = true, false
			i = skipLWS(buf, i+1)
		case expectSep:
			return d, authErr("expecting comma or linear white space after quoted string")
		default:
			value = append(value, b)
			i++
		}
	}
	if quoted {
		return d, authErr("unmatched quote in directive %q", key)
	}
	if len(key) > 0 {
		if err := add(key, value); err != nil {
			return d, err
		}
	}
	return d, nil
}

// writeQuoted appends "value" with the JDK's escapes (writeQuotedStringValue).
func writeQuoted(out *bytes.Buffer, key string, value []byte) {
	out.WriteString(key)
	out.WriteString(`="`)
	for _, b := range value {
		if b == '"' || b == '\\' || b == 127 || (b <= 31 && b != 13 && b != 9 && b != 10) {
			out.WriteByte('\\')
		}
		out.WriteByte(b)
	}
	out.WriteByte('"')
}

// latin1OrUTF8 is the JDK's stringToByte_8859_1 with charset=utf-8: ISO 8859-1 when every
// character fits, else UTF-8. latin1 false (no charset negotiated) always takes 8859-1,
// as the JDK does (characters above U+00FF become '?').
func latin1OrUTF8(s string, utf8Charset bool) []byte {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			if utf8Charset {
				return []byte(s)
			}
			r = '?'
		}
		out = append(out, byte(r))
	}
	return out
}

// decodeString turns a directive's bytes into a string as the JDK does: UTF-8 when
// charset=utf-8 was negotiated (invalid sequences become U+FFFD), ISO 8859-1 otherwise.
func decodeString(b []byte, utf8Charset bool) string {
	if utf8Charset {
		if utf8.Valid(b) {
			return string(b)
		}
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	var sb strings.Builder
	for _, c := range b {
		sb.WriteRune(rune(c))
	}
	return sb.String()
}

func md5hex(parts ...[]byte) []byte {
	h := md5.New()
	for _, p := range parts {
		h.Write(p)
	}
	out := make([]byte, hex.EncodedLen(md5.Size))
	hex.Encode(out, h.Sum(nil))
	return out
}

// digestInput is what both sides put into the response and rspauth values.
type digestInput struct {
	user, realm, pass string
	utf8              bool
	nonce, cnonce     []byte
	nc                string // "00000001"
	qop               string
	digestURI         string
	authzid           []byte // nil: not sent
}

// value computes the response directive (method "AUTHENTICATE") or rspauth (method "").
func (in digestInput) value(method string) []byte {
	colon := []byte{':'}
	h := md5.New()
	h.Write(latin1OrUTF8(in.user, in.utf8))
	h.Write(colon)
	h.Write(latin1OrUTF8(in.realm, in.utf8))
	h.Write(colon)
	h.Write(latin1OrUTF8(in.pass, in.utf8))
	a1 := append(h.Sum(nil), ':')
	a1 = append(append(append(a1, in.nonce...), ':'), in.cnonce...)
	if in.authzid != nil {
		a1 = append(append(a1, ':'), in.authzid...)
	}
	hexA1 := md5hex(a1)
	hexA2 := md5hex([]byte(method + ":" + in.digestURI))
	return md5hex(hexA1, colon, in.nonce, colon, []byte(in.nc), colon, in.cnonce, colon, []byte(in.qop), colon, hexA2)
}

func newNonce(r io.Reader) ([]byte, error) {
	if r == nil {
		r = rand.Reader
	}
	raw := make([]byte, rawNonceSize)
	if _, err := io.ReadFull(r, raw); err != nil {
		return nil, fmt.Errorf("sasl: DIGEST-MD5 nonce: %w", err)
	}
	out := make([]byte, base64.StdEncoding.EncodedLen(rawNonceSize))
	base64.StdEncoding.Encode(out, raw)
	return out, nil
}

const nonceCount = "00000001"

// digestServer is DIGEST-MD5's server side, as the JDK's DigestMD5Server with ZooKeeper's
// settings (no properties: qop auth, charset utf-8, realm = host).
type digestServer struct {
	cfg      ServerConfig
	step     int // 0: expect the opening token, 1: expect the response, 2: done, -1: failed
	nonce    []byte
	authzID  string
	complete bool
}

func newDigestServer(cfg ServerConfig) *digestServer {
	if cfg.Service == "" {
		cfg.Service = ClientService
	}
	if cfg.Host == "" {
		cfg.Host = ClientHost
	}
	if cfg.Authorize == nil {
		cfg.Authorize = KerberosNames{}.Authorize
	}
	return &digestServer{cfg: cfg}
}

func (s *digestServer) Complete() bool          { return s.complete }
func (s *digestServer) AuthorizationID() string { return s.authzID }

func (s *digestServer) Step(response []byte) ([]byte, error) {
	if len(response) > MaxDigestToken {
		s.step = -1
		return nil, authErr("response of %d bytes, at most %d", len(response), MaxDigestToken)
	}
	switch s.step {
	case 0:
		// A non-empty opening token would ask for subsequent authentication, which the
		// JDK does not support either: it answers with a fresh challenge.
		nonce, err := newNonce(s.cfg.Rand)
		if err != nil {
			s.step = -1
			return nil, err
		}
		s.nonce = nonce
		s.step = 1
		var out bytes.Buffer
		writeQuoted(&out, "realm", []byte(s.cfg.Host))
		out.WriteByte(',')
		writeQuoted(&out, "nonce", nonce)
		out.WriteString(",charset=utf-8,algorithm=md5-sess")
		return out.Bytes(), nil
	case 1:
		s.step = -1 // one response per nonce, right or wrong
		rspauth, authz, err := s.validate(response)
		if err != nil {
			return nil, err
		}
		s.step, s.complete, s.authzID = 2, true, authz
		return append([]byte("rspauth="), rspauth...), nil
	case 2:
		return nil, authErr("exchange already complete")
	}
	return nil, authErr("exchange already failed")
}

// validate checks the client's digest-response in the JDK's order and returns the
// rspauth value and the authorization id.
func (s *digestServer) validate(response []byte) (rspauth []byte, authz string, err error) {
	d, err := parseDirectives(response, false)
	if err != nil {
		return nil, "", err
	}
	if cs, ok := d.get("charset"); ok && string(cs) != "utf-8" {
		return nil, "", authErr("incompatible charset value %q", cs)
	}
	// The JDK's server decodes and hashes with its own charset (utf-8) whether or not the
	// client named it.
	const utf8Charset = true
	if mb, ok := d.get("maxbuf"); ok {
		if !isDecimal(mb) {
			return nil, "", authErr("bad maxbuf %q", mb)
		}
	}
	userB, ok := d.get("username")
	if !ok {
		return nil, "", authErr("missing username")
	}
	user := decodeString(userB, utf8Charset)
	realm := ""
	if r, ok := d.get("realm"); ok {
		realm = decodeString(r, utf8Charset)
	}
	if realm != s.cfg.Host {
		return nil, "", authErr("nonexistent realm %q", realm)
	}
	nonce, ok := d.get("nonce")
	if !ok {
		return nil, "", authErr("missing nonce")
	}
	if !bytes.Equal(nonce, s.nonce) {
		return nil, "", authErr("mismatched nonce")
	}
	cnonce, ok := d.get("cnonce")
	if !ok {
		return nil, "", authErr("missing cnonce")
	}
	if nc, ok := d.get("nc"); ok {
		if !isHexOne(nc) {
			return nil, "", authErr("nonce count does not match: %q", nc)
		}
	}
	qop := "auth"
	if q, ok := d.get("qop"); ok {
		qop = decodeString(q, utf8Charset)
	}
	switch qop {
	case "auth":
	case "auth-int", "auth-conf":
		return nil, "", authErr("server does not support qop %s", qop)
	default:
		return nil, "", authErr("invalid qop %q", qop)
	}
	want := s.cfg.Service + "/" + s.cfg.Host
	uriB, ok := d.get("digest-uri")
	uri := decodeString(uriB, utf8Charset)
	if !ok || !strings.EqualFold(uri, want) {
		return nil, "", authErr("mismatched digest-uri %q; expecting %q", uri, want)
	}
	resp, ok := d.get("response")
	if !ok {
		return nil, "", authErr("missing response")
	}
	authzB, hasAuthz := d.get("authzid")
	requested := user
	if hasAuthz {
		requested = decodeString(authzB, utf8Charset)
	}
	pass, known := s.cfg.Users[user]
	if !known {
		return nil, "", authErr("cannot acquire password for %q in realm %q", user, realm)
	}
	in := digestInput{user: user, realm: realm, pass: pass, utf8: utf8Charset, nonce: s.nonce,
		cnonce: cnonce, nc: nonceCount, qop: qop, digestURI: uri}
	if hasAuthz {
		in.authzid = authzB
	}
	if subtle.ConstantTimeCompare(resp, in.value("AUTHENTICATE")) != 1 {
		return nil, "", authErr("mismatched response")
	}
	authz, err = s.cfg.Authorize(user, requested)
	if err != nil {
		return nil, "", fmt.Errorf("%w: DIGEST-MD5: %w", ErrAuth, err)
	}
	return in.value(""), authz, nil
}

func isDecimal(b []byte) bool {
	if len(b) == 0 || len(b) > 10 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isHexOne reports whether b is a hex number equal to 1, as Integer.parseInt(nc, 16) == 1.
func isHexOne(b []byte) bool {
	s, _ := strings.CutPrefix(string(b), "+")
	return strings.TrimLeft(s, "0") == "1"
}

// digestClient is DIGEST-MD5's client side, as the JDK's DigestMD5Client with ZooKeeper's
// settings (authzid = username, qop auth).
type digestClient struct {
	user, pass, service, host string
	step                      int // 0: opening, 1: challenge, 2: rspauth, 3: done, -1: failed
	rspauth                   []byte
	complete                  bool
}

func (c *digestClient) Complete() bool { return c.complete }

func (c *digestClient) Step(challenge []byte) ([]byte, error) {
	switch c.step {
	case 0:
		c.step = 1
		return []byte{}, nil
	case 1:
		c.step = -1
		out, err := c.respond(challenge)
		if err != nil {
			return nil, err
		}
		c.step = 2
		return out, nil
	case 2:
		c.step = -1
		d, err := parseDirectives(challenge, false)
		if err != nil {
			return nil, err
		}
		got, ok := d.get("rspauth")
		if !ok {
			return nil, authErr("server's final challenge has no rspauth")
		}
		if subtle.ConstantTimeCompare(got, c.rspauth) != 1 {
			return nil, authErr("server's rspauth does not match: the server does not know the password")
		}
		c.step, c.complete = 3, true
		return nil, nil
	case 3:
		return nil, authErr("exchange already complete")
	}
	return nil, authErr("exchange already failed")
}

func (c *digestClient) respond(challenge []byte) ([]byte, error) {
	d, err := parseDirectives(challenge, true)
	if err != nil {
		return nil, err
	}
	nonce, ok := d.get("nonce")
	if !ok || len(nonce) == 0 {
		return nil, authErr("challenge has no nonce")
	}
	if alg, ok := d.get("algorithm"); !ok || string(alg) != "md5-sess" {
		return nil, authErr("challenge's algorithm is %q, not md5-sess", alg)
	}
	if q, ok := d.get("qop"); ok {
		offered := false
		for o := range strings.SplitSeq(string(q), ",") {
			if strings.TrimSpace(o) == "auth" {
				offered = true
			}
		}
		if !offered {
			return nil, authErr("server does not offer qop auth (offers %q)", q)
		}
	}
	utf8Charset := false
	if cs, ok := d.get("charset"); ok {
		if !strings.EqualFold(string(cs), "utf-8") {
			return nil, authErr("challenge's charset is %q", cs)
		}
		utf8Charset = true
	}
	realm := ""
	if len(d.realms) > 0 {
		realm = decodeString(d.realms[0], utf8Charset)
	}
	cnonce, err := newNonce(nil)
	if err != nil {
		return nil, err
	}
	enc := func(s string) []byte {
		if utf8Charset {
			return []byte(s)
		}
		return latin1OrUTF8(s, false)
	}
	in := digestInput{user: c.user, realm: realm, pass: c.pass, utf8: utf8Charset, nonce: nonce,
		cnonce: cnonce, nc: nonceCount, qop: "auth", digestURI: c.service + "/" + c.host, authzid: enc(c.user)}
	c.rspauth = in.value("")
	var out bytes.Buffer
	if utf8Charset {
		out.WriteString("charset=utf-8,")
	}
	writeQuoted(&out, "username", enc(c.user))
	if len(d.realms) > 0 {
		out.WriteByte(',')
		writeQuoted(&out, "realm", enc(realm))
	}
	out.WriteByte(',')
	writeQuoted(&out, "nonce", nonce)
	out.WriteString(",nc=" + nonceCount + ",")
	writeQuoted(&out, "cnonce", cnonce)
	out.WriteByte(',')
	writeQuoted(&out, "digest-uri", enc(in.digestURI))
	fmt.Fprintf(&out, ",maxbuf=%d,response=%s,qop=auth,", defaultMaxbuf, in.value("AUTHENTICATE"))
	writeQuoted(&out, "authzid", enc(c.user))
	return out.Bytes(), nil
}
