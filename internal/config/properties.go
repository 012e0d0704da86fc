package config

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// property is one key=value entry of a properties file, as java.util.Properties.load reads it.
type property struct {
	Key, Value string
	Line       int // 1-based line where the entry starts
}

// parseProperties reads the java.util.Properties text format, which is what ZooKeeper uses for
// zoo.cfg: '#' and '!' comment lines, key and value separated by '=', ':' or whitespace,
// backslash escapes and backslash line continuations. Properties.load(InputStream) decodes
// bytes as ISO-8859-1, so every byte becomes one rune; non-ASCII text in a zoo.cfg therefore
// means the same (mangled) thing to zkd as to ZooKeeper. Keys and values are trimmed the way
// QuorumPeerConfig trims them (String.trim: every char <= U+0020).
func parseProperties(data []byte) ([]property, error) { return parsePropertyLines(splitLines(data)) }

// parsePropertiesText is parseProperties for text that ZooKeeper reads with
// Properties.load(Reader), from a Java String rather than a file: configuration texts from
// /zookeeper/config, peers and reconfig requests, which travel as UTF-8 (bad bytes read as
// U+FFFD).
func parsePropertiesText(text []byte) ([]property, error) {
	return parsePropertyLines(splitRuneLines([]rune(string(text))))
}

func parsePropertyLines(lines []string) ([]property, error) {
	var props []property
	for i := 0; i < len(lines); i++ {
		start := i
		line := trimLeadingSpace(lines[i])
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue // comment lines are never continued
		}
		var logical strings.Builder
		for {
			cont := trailingBackslashes(line)%2 == 1
			if !cont {
				logical.WriteString(line)
				break
			}
			logical.WriteString(line[:len(line)-1])
			if i+1 >= len(lines) {
				break
			}
			i++
			line = trimLeadingSpace(lines[i])
			if line == "" {
				break // Java ends the logical line at an empty continuation line
			}
		}
		key, value, err := splitKeyValue(logical.String())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start+1, err)
		}
		props = append(props, property{Key: javaTrim(key), Value: javaTrim(value), Line: start + 1})
	}
	return props, nil
}

// splitLines splits on \n, \r and \r\n and decodes each byte as ISO-8859-1.
func splitLines(data []byte) []string {
	rs := make([]rune, len(data))
	for i, b := range data {
		rs[i] = rune(b)
	}
	return splitRuneLines(rs)
}

// splitRuneLines splits on \n, \r and \r\n.
func splitRuneLines(data []rune) []string {
	var lines []string
	var cur []rune
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '\r':
			if i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			fallthrough
		case '\n':
			lines = append(lines, string(cur))
			cur = cur[:0]
		default:
			cur = append(cur, rune(c))
		}
	}
	if len(cur) > 0 {
		lines = append(lines, string(cur))
	}
	return lines
}

func isPropSpace(c rune) bool { return c == ' ' || c == '\t' || c == '\f' }

func trimLeadingSpace(s string) string { return strings.TrimLeftFunc(s, isPropSpace) }

func trailingBackslashes(s string) int {
	n := 0
	for n < len(s) && s[len(s)-1-n] == '\\' {
		n++
	}
	return n
}

// splitKeyValue separates a logical line into its unescaped key and value. The key ends at the
// first unescaped '=', ':' or whitespace; whitespace and at most one '=' or ':' follow it.
func splitKeyValue(line string) (key, value string, err error) {
	rs := []rune(line)
	keyLen, valueStart := 0, len(rs)
	hasSep, escaped := false, false
	for ; keyLen < len(rs); keyLen++ {
		c := rs[keyLen]
		if !escaped && (c == '=' || c == ':') {
			valueStart, hasSep = keyLen+1, true
			break
		}
		if !escaped && isPropSpace(c) {
			valueStart = keyLen + 1
			break
		}
		escaped = c == '\\' && !escaped
	}
	for ; valueStart < len(rs); valueStart++ {
		c := rs[valueStart]
		if isPropSpace(c) {
			continue
		}
		if !hasSep && (c == '=' || c == ':') {
			hasSep = true
			continue
		}
		break
	}
	if key, err = unescape(rs[:keyLen]); err != nil {
		return "", "", err
	}
	if value, err = unescape(rs[min(valueStart, len(rs)):]); err != nil {
		return "", "", err
	}
	return key, value, nil
}

// unescape applies the Properties escapes: \t \n \r \f, \uXXXX, and \c = c for any other c.
func unescape(rs []rune) (string, error) {
	var b strings.Builder
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		if c != '\\' || i+1 >= len(rs) {
			b.WriteRune(c)
			continue
		}
		i++
		switch c = rs[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+4 >= len(rs) {
				return "", fmt.Errorf("malformed \\uxxxx escape in %q", string(rs))
			}
			v, ok := hex4(rs[i+1 : i+5])
			if !ok {
				return "", fmt.Errorf("malformed \\uxxxx escape in %q", string(rs))
			}
			i += 4
			// Java strings are UTF-16: a surrogate pair written as two escapes is one rune.
			if utf16.IsSurrogate(v) && i+6 < len(rs) && rs[i+1] == '\\' && rs[i+2] == 'u' {
				if lo, ok := hex4(rs[i+3 : i+7]); ok {
					if r := utf16.DecodeRune(v, lo); r != utf8.RuneError {
						v = r
						i += 6
					}
				}
			}
			b.WriteRune(v)
		default:
			b.WriteRune(c)
		}
	}
	return b.String(), nil
}

func hex4(rs []rune) (rune, bool) {
	var v rune
	for _, h := range rs {
		d := hexDigit(h)
		if d < 0 {
			return 0, false
		}
		v = v<<4 | rune(d)
	}
	return v, true
}

func hexDigit(c rune) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// javaTrim is String.trim: it removes every char <= U+0020 from both ends.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}
