package datatree

import "testing"

// The rules of PathUtils.validatePath (fact sheet §5.1). Java checks UTF-16 chars, so a
// character above U+FFFF arrives as a surrogate pair and is rejected, and bytes that are
// not UTF-8 decode to U+FFFD, which is in the rejected U+FFF0–U+FFFF range.
func TestValidatePath(t *testing.T) {
	valid := []string{
		"/", "/a", "/a/b", "/a/b/c", "/zookeeper", "/zookeeper/config",
		"/a.b", "/.a", "/a.", "/...", "/a/..b", "/a/b..", "/.../x",
		"/ ", "/a b", "/-_~!@#$%^&*()=+[]{};:'\",<>?|\\`",
		"/é", "/日本", "/\u00a0", "/\u00ff",
		"/\ud7ff",       // last char before the surrogates
		"/\uf900",       // first char after the private-use area
		"/\uffef",       // last char before U+FFF0
		"/a/0000000007", // a sequential name
	}
	invalid := []string{
		"", "a", "a/b", "./a", " /a",
		"//", "/a/", "/a/b/", "/a//b", "//a",
		"/.", "/..", "/a/.", "/a/..", "/./a", "/../a", "/a/./b", "/a/../b",
		"/a\x00b", "/\x00", "/\x01", "/\x1f", "/a\tb", "/a\nb", "/\x7f", "/\u0080", "/\u009f",
		"/\ue000", "/\uf8ff", // private use (U+D800–U+F8FF)
		"/\ufff0", "/\ufffd", "/\uffff",
		"/\U0001F600", "/a/\U00010000", // non-BMP: surrogate pairs in Java
		"/\xff", "/a\xc3", "/\xed\xa0\x80", // not UTF-8
	}
	for _, p := range valid {
		if !ValidatePath(p) {
			t.Errorf("ValidatePath(%q) = false, want true", p)
		}
	}
	for _, p := range invalid {
		if ValidatePath(p) {
			t.Errorf("ValidatePath(%q) = true, want false", p)
		}
	}
	// Every code point in the rejected ranges, and the ones just outside.
	for r := rune(1); r < 0x10000; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue // not encodable in UTF-8
		}
		bad := r <= 0x1f || (r >= 0x7f && r <= 0x9f) || (r >= 0xd800 && r <= 0xf8ff) || r >= 0xfff0
		if got := ValidatePath("/x" + string(r) + "y"); got == bad {
			t.Errorf("ValidatePath with U+%04X = %v", r, got)
		}
	}
}

func TestValidPathForLoad(t *testing.T) {
	for p, want := range map[string]bool{
		"/a": true, "/a/b": true, "/.": true, "/a/..": true, "/\x01": true, "/\U0001F600": true,
		"/": false, "": false, "a": false, "/a/": false, "//a": false, "/a//b": false,
	} {
		if got := ValidPathForLoad(p); got != want {
			t.Errorf("ValidPathForLoad(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestParentBaseJoin(t *testing.T) {
	for _, c := range []struct{ path, parent, base string }{
		{"/", "", ""},
		{"/a", "/", "a"},
		{"/a/b", "/a", "b"},
		{"/a/b/c", "/a/b", "c"},
		{"/zookeeper/quota", "/zookeeper", "quota"},
		{"/a.b/c.d", "/a.b", "c.d"},
		{"/é/ü", "/é", "ü"},
	} {
		if got := Parent(c.path); got != c.parent {
			t.Errorf("Parent(%q) = %q, want %q", c.path, got, c.parent)
		}
		if got := Base(c.path); got != c.base {
			t.Errorf("Base(%q) = %q, want %q", c.path, got, c.base)
		}
		if c.path != "/" {
			if got := Join(c.parent, c.base); got != c.path {
				t.Errorf("Join(%q, %q) = %q", c.parent, c.base, got)
			}
		}
	}
	if got := Parent("a"); got != "" {
		t.Errorf("Parent(a) = %q", got)
	}
	if got := Join("/", "x"); got != "/x" {
		t.Errorf("Join(/, x) = %q", got)
	}
}
