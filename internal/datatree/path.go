package datatree

import (
	"strings"
	"unicode/utf8"
)

// ValidatePath applies ZooKeeper's path rules (PathUtils.validatePath): absolute, no
// trailing slash (except "/"), no empty, "." or ".." segments, and no control or
// reserved characters.
func ValidatePath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	if p == "/" {
		return true
	}
	if p[len(p)-1] == '/' {
		return false
	}
	if !utf8.ValidString(p) {
		return false
	}
	segStart := 1
	for i, r := range p {
		if i == 0 {
			continue
		}
		switch {
		case r == 0,
			r > 0x00 && r < 0x20,
			r >= 0x7f && r <= 0x9f,
			r >= 0xd800 && r <= 0xf8ff,
			r >= 0xfff0: // Java sees characters above U+FFFF as surrogate pairs, which it rejects.
			return false
		}
		if r == '/' {
			if !validSegment(p[segStart:i]) {
				return false
			}
			segStart = i + 1
		}
	}
	return validSegment(p[segStart:])
}

func validSegment(s string) bool {
	return s != "" && s != "." && s != ".."
}

// Parent returns the parent path of p ("/" for top-level nodes, "" for the root).
func Parent(p string) string {
	i := strings.LastIndexByte(p, '/')
	switch {
	case i < 0 || p == "/":
		return ""
	case i == 0:
		return "/"
	}
	return p[:i]
}

// Base returns the last segment of p.
func Base(p string) string {
	return p[strings.LastIndexByte(p, '/')+1:]
}

// Join appends a child name to a parent path.
func Join(parent, child string) string {
	if parent == "/" {
		return "/" + child
	}
	return parent + "/" + child
}
