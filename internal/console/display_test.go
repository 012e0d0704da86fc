package console

import (
	"io"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestDisplay: bidi controls, zero-width characters and the other invisible code points are
// escaped, everything a reader sees (accents, CJK, emoji, a literal backslash) is kept.
func TestDisplay(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"\u202egnp.exe", `\u202egnp.exe`}, // reads "exe.png" raw
		{"a\u202ab\u202bc\u202cd\u202de", `a\u202ab\u202bc\u202cd\u202de`},
		{"\u2066x\u2067y\u2068z\u2069", `\u2066x\u2067y\u2068z\u2069`},
		{"l\u200er\u200fa\u061c", `l\u200er\u200fa\u061c`},
		{"zero\u200bwidth\u200cnon\u200djoin", `zero\u200bwidth\u200cnon\u200djoin`},
		{"\ufeffbom", `\ufeffbom`},
		{"word\u2060joiner", `word\u2060joiner`},
		{"soft\u00adhyphen", `soft\u00adhyphen`},
		{"line\u2028para\u2029", `line\u2028para\u2029`},
		{"ctl\x01\x7f\u0085", `ctl\u0001\u007f\u0085`},
		{"hangul\u3164filler\u115f", `hangul\u3164filler\u115f`},
		{"tag\U000E0041", `tag\u{e0041}`},
		{"plain-name_01", "plain-name_01"},
		{"/app/héllo/日本語/Ω", "/app/héllo/日本語/Ω"},
		{"emoji 👍 ❤", "emoji 👍 ❤"},
		{`back\slash`, `back\slash`},
		{"", ""},
	} {
		if got := Display(tc.in); got != tc.want {
			t.Errorf("Display(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Whatever the input, the output holds no invisible code point.
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if out := Display("a" + string(r) + "b"); strings.ContainsFunc(out, invisible) {
			t.Fatalf("Display(%U) = %q still holds an invisible code point", r, out)
		}
	}
}

// TestDisplayScript: display.js holds exactly the set Display escapes, as a JavaScript
// regular expression the page matches names with.
func TestDisplayScript(t *testing.T) {
	h := Handler("/console", nil, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/console/display.js", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/javascript") {
		t.Fatalf("display.js: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	m := regexp.MustCompile(`const invisibleChars = /\[(.*)\]/gu;`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("display.js has no invisibleChars:\n%s", body)
	}
	in := map[rune]bool{}
	for _, rg := range regexp.MustCompile(`\\u\{([0-9a-f]+)\}(?:-\\u\{([0-9a-f]+)\})?`).FindAllStringSubmatch(string(m[1]), -1) {
		lo, _ := strconv.ParseInt(rg[1], 16, 32)
		hi := lo
		if rg[2] != "" {
			hi, _ = strconv.ParseInt(rg[2], 16, 32)
		}
		for r := rune(lo); r <= rune(hi); r++ {
			in[r] = true
		}
	}
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if in[r] != invisible(r) {
			t.Fatalf("%U: in display.js %v, escaped by Display %v", r, in[r], invisible(r))
		}
	}
	for _, r := range []rune{0x202e, 0x2066, 0x200b, 0xfeff, 0x061c} {
		if !in[r] {
			t.Errorf("%U missing from display.js", r)
		}
	}
}
