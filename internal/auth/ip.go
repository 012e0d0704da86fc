package auth

import (
	"net/netip"
	"strconv"
	"strings"
)

// IP ids follow IPAuthenticationProvider: "a.b.c.d" or "a.b.c.d/bits", compared as a prefix
// under the mask. IPv4 parts are parsed like Java's Integer.parseInt, so "010.0.0.1" (ten)
// and "+10.0.0.1" are accepted as ZooKeeper accepts them. IPv6 ("::1", "fe80::/10") is
// accepted as ZooKeeper does since ZOOKEEPER-4240 (3.9.4); 3.8 and 3.9.0-3.9.3 reject IPv6
// ACL ids as invalid. Its IPv6 syntax is its own parseV6addr, not RFC 4291's: no embedded
// IPv4 ("::ffff:1.2.3.4") and no zone are accepted, and a group is Integer.parseInt(g, 16),
// so "::+1" and "::-1" (0xffff) are.

// parseACLAddr parses the address part of an ip ACL id.
func parseACLAddr(s string) ([]byte, bool) {
	if strings.Contains(s, ":") {
		return parseV6(s)
	}
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return nil, false
	}
	b := make([]byte, 4)
	for i, p := range parts {
		v, ok := javaParseInt(p)
		if !ok || v < 0 || v > 255 {
			return nil, false
		}
		b[i] = byte(v)
	}
	return b, true
}

// parseV6 is IPAuthenticationProvider.parseV6addr: at most one "::", eight groups without
// it and fewer than eight with it, each group one to four characters read by
// Integer.parseInt(group, 16) and stored as its low 16 bits.
func parseV6(s string) ([]byte, bool) {
	parts := strings.Split(s, "::")
	var head, tail []string
	switch len(parts) {
	case 1:
		head = strings.Split(parts[0], ":")
		if len(head) != 8 {
			return nil, false
		}
	case 2:
		if parts[0] != "" {
			head = strings.Split(parts[0], ":")
		}
		if parts[1] != "" {
			tail = strings.Split(parts[1], ":")
		}
		if len(head)+len(tail) >= 8 {
			return nil, false
		}
	default:
		return nil, false
	}
	b := make([]byte, 16)
	if !parseV6Groups(b[:2*len(head)], head) || !parseV6Groups(b[16-2*len(tail):], tail) {
		return nil, false
	}
	return b, true
}

// parseV6Groups writes groups into b, two bytes each.
func parseV6Groups(b []byte, groups []string) bool {
	for i, g := range groups {
		if g == "" || len(g) > 4 {
			return false
		}
		v, err := strconv.ParseInt(g, 16, 32)
		if err != nil {
			return false
		}
		b[2*i], b[2*i+1] = byte(v>>8), byte(v)
	}
	return true
}

// parseClientAddr parses a connection's address as the server formats it. IPv4 clients
// reaching a dual-stack listener appear as ::ffff:a.b.c.d, which Java reports as plain IPv4;
// a zone is irrelevant to ACLs.
func parseClientAddr(s string) ([]byte, bool) {
	if strings.Contains(s, ":") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, false
		}
		a = a.WithZone("").Unmap()
		return a.AsSlice(), true
	}
	return parseACLAddr(s)
}

// parseIPID splits an ip ACL id into address bytes and prefix length.
func parseIPID(id string) ([]byte, int, bool) {
	addrPart, bitsPart, hasBits := strings.Cut(id, "/")
	addr, ok := parseACLAddr(addrPart)
	if !ok {
		return nil, 0, false
	}
	bits := len(addr) * 8
	if hasBits {
		b, ok := javaParseInt(bitsPart)
		if !ok || b < 0 || b > len(addr)*8 {
			return nil, 0, false
		}
		bits = b
	}
	return addr, bits, true
}

// ValidIPID reports whether id is a well-formed ip ACL id.
func ValidIPID(id string) bool {
	_, _, ok := parseIPID(id)
	return ok
}

// IPMatches reports whether a client at clientIP matches the ip ACL id aclID: both
// addresses, masked to the id's prefix length, are equal. An IPv4 id never matches an IPv6
// client and vice versa; malformed input never matches.
func IPMatches(aclID string, clientIP string) bool {
	acl, bits, ok := parseIPID(aclID)
	if !ok {
		return false
	}
	client, ok := parseClientAddr(clientIP)
	if !ok || len(client) != len(acl) {
		return false
	}
	for i := range acl {
		m := prefixMask(bits, i)
		if acl[i]&m != client[i]&m {
			return false
		}
	}
	return true
}

// prefixMask is the mask of byte i under a prefix of bits.
func prefixMask(bits, i int) byte {
	switch rest := bits - 8*i; {
	case rest >= 8:
		return 0xFF
	case rest <= 0:
		return 0
	default:
		return ^byte(0xFF >> rest)
	}
}
