package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// link is a Markdown link or image: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestLinks fails on a relative link of the manual or the README to a file that is not there,
// or to a heading the page does not have: pages move and sections are renamed, and a reader
// following a dead link learns nothing.
func TestLinks(t *testing.T) {
	anchors := map[string]map[string]bool{} // page path -> its headings' anchors
	anchorsOf := func(path string) (map[string]bool, bool) {
		if a, ok := anchors[path]; ok {
			return a, a != nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			anchors[path] = nil
			return nil, false
		}
		a := headingAnchors(string(b))
		anchors[path] = a
		return a, true
	}
	for _, page := range pages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(stripCode(string(b)), "\n") {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.Join(filepath.Dir(page), file)
				}
				if _, err := os.Stat(path); err != nil {
					// configuration.md is written by internal/config's generator; until it
					// is in the tree, links to it cannot be followed here.
					if filepath.Clean(path) == "configuration.md" || filepath.Clean(path) == filepath.Join("..", "docs", "configuration.md") {
						continue
					}
					t.Errorf("%s:%d: %s: no such file", page, i+1, target)
					continue
				}
				if frag == "" || !strings.HasSuffix(path, ".md") {
					continue
				}
				if a, ok := anchorsOf(path); ok && !a[frag] {
					t.Errorf("%s:%d: %s: %s has no heading with that anchor", page, i+1, target, path)
				}
			}
		}
	}
}

// stripCode blanks fenced code blocks (keeping their lines, so line numbers stay right):
// what looks like a link there is code.
func stripCode(page string) string {
	lines := strings.Split(page, "\n")
	in := ""
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		if strings.HasPrefix(trimmed, "```") {
			ticks := len(trimmed) - len(strings.TrimLeft(trimmed, "`"))
			fence := strings.Repeat("`", ticks)
			switch {
			case in == "":
				in = fence
			case ticks >= len(in) && strings.TrimSpace(trimmed[ticks:]) == "":
				in = ""
			}
			lines[i] = ""
			continue
		}
		if in != "" {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// headingAnchors are the anchors GitHub gives a page's headings: lower case, spaces to
// hyphens, punctuation but hyphens and underscores dropped, -1, -2... for repeats.
func headingAnchors(page string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range strings.Split(stripCode(page), "\n") {
		text, ok := strings.CutPrefix(strings.TrimLeft(l, "#"), " ")
		if !ok || !strings.HasPrefix(l, "#") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(text)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}
