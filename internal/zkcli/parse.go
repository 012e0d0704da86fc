package zkcli

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
)

// argsPattern is ZooKeeperMain.MyCommandOptions.ARGS_PATTERN with Java's \s spelled out
// (Java's \s includes \x0B, RE2's does not). Go's regexp picks the leftmost alternative as
// Java's does, so a line splits into the same words.
var argsPattern = regexp.MustCompile(`[ \t\n\x0B\f\r]*([^"'][^ \t\n\x0B\f\r]*|"[^"]*"|'[^']*')[ \t\n\x0B\f\r]*`)

// splitLine breaks a command line into words as zkCli.sh does: words are separated by
// white space, a word in matching single or double quotes keeps its spaces and loses the
// quotes. An unmatched quote character is skipped.
func splitLine(line string) []string {
	var args []string
	for _, m := range argsPattern.FindAllStringSubmatch(line, -1) {
		v := m[1]
		// QUOTED_PATTERN ^(['"])(.*)(\1)$: '.' stops at line ends, which a line never has.
		if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		args = append(args, v)
	}
	return args
}

// optSpec is one short option of a command, as commons-cli's Option: a letter, whether it
// takes a value, and its description (which only MissingOptionException prints).
type optSpec struct {
	name   string
	hasArg bool
	desc   string
}

// optSet is a command's commons-cli Options. group, when set, lists options of which at
// most one may be given (an OptionGroup); groupRequired makes one of them mandatory.
type optSet struct {
	opts          []optSpec
	group         []string
	groupRequired bool
	lenient       bool // no parsing: every word is an argument
}

func (s *optSet) find(name string) *optSpec {
	for i := range s.opts {
		if s.opts[i].name == name {
			return &s.opts[i]
		}
	}
	return nil
}

// cmdLine is a parsed command line: commons-cli's CommandLine.
type cmdLine struct {
	args   []string
	values map[string][]string
	order  []string
}

func (c *cmdLine) has(name string) bool { _, ok := c.values[name]; return ok }

// value is the option's first value, as CommandLine.getOptionValue returns it.
func (c *cmdLine) value(name string) string {
	if v := c.values[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// parseError is a commons-cli ParseException; CliParseException prints it with its Java
// class name, as Throwable.toString does.
type parseError struct{ class, msg string }

func (e *parseError) Error() string { return "org.apache.commons.cli." + e.class + ": " + e.msg }

// parse runs commons-cli 1.4's DefaultParser (stopAtNonOption false) over args, the command
// name included: options may come anywhere, "-sw" is "-s -w", "-v3" gives v the value 3, a
// value may follow as the next word (which may be a negative number), "--" ends the options,
// and an unknown "-x" is an error.
func (s *optSet) parse(args []string) (*cmdLine, error) {
	cl := &cmdLine{values: map[string][]string{}}
	if s.lenient {
		cl.args = args
		return cl, nil
	}
	var current *optSpec // an option still waiting for its value
	skip := false
	selected := ""
	missingArg := func() error {
		if current != nil && len(cl.values[current.name]) == 0 {
			return &parseError{"MissingArgumentException", "Missing argument for option: " + current.name}
		}
		return nil
	}
	handle := func(o *optSpec) error {
		if err := missingArg(); err != nil {
			return err
		}
		for _, g := range s.group {
			if g == o.name {
				if selected != "" && selected != o.name {
					return &parseError{"AlreadySelectedException", "The option '" + o.name +
						"' was specified but an option from this group has already been selected: '" + selected + "'"}
				}
				selected = o.name
			}
		}
		if _, ok := cl.values[o.name]; !ok {
			cl.values[o.name] = nil
			cl.order = append(cl.order, o.name)
		}
		current = nil
		if o.hasArg {
			current = o
		}
		return nil
	}
	addValue := func(v string) {
		cl.values[current.name] = append(cl.values[current.name], v)
		current = nil // every option here takes one value
	}
	isOption := func(tok string) bool {
		if !strings.HasPrefix(tok, "-") || tok == "-" {
			return false
		}
		t := tok[1:]
		if i := strings.IndexByte(t, '='); i >= 0 {
			t = t[:i]
		}
		return s.find(t) != nil || (len(t) > 0 && s.find(t[:1]) != nil)
	}
	unknown := func(tok string) error {
		if strings.HasPrefix(tok, "-") && len(tok) > 1 {
			return &parseError{"UnrecognizedOptionException", "Unrecognized option: " + tok}
		}
		cl.args = append(cl.args, tok)
		return nil
	}
	for _, tok := range args {
		var err error
		switch {
		case skip:
			cl.args = append(cl.args, tok)
		case tok == "--":
			skip = true
		case current != nil && (!isOption(tok) || isNegativeNumber(tok)):
			addValue(stripQuotes(tok))
		case strings.HasPrefix(tok, "--"):
			// No command has long options.
			err = unknown(tok)
		case strings.HasPrefix(tok, "-") && tok != "-":
			t := tok[1:]
			if i := strings.IndexByte(t, '='); i >= 0 && len(t) > 1 {
				// -S=V
				if o := s.find(t[:i]); o != nil && o.hasArg {
					if err = handle(o); err == nil {
						addValue(t[i+1:])
					}
				} else {
					err = unknown(tok)
				}
				break
			}
			if o := s.find(t); o != nil {
				err = handle(o)
				break
			}
			// -S1S2S3 or -S1S2V
			for i := 1; i < len(tok); i++ {
				o := s.find(tok[i : i+1])
				if o == nil {
					err = unknown(tok)
					break
				}
				if err = handle(o); err != nil {
					break
				}
				if current != nil && len(tok) != i+1 {
					addValue(tok[i+1:])
					break
				}
			}
		default:
			err = unknown(tok)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := missingArg(); err != nil {
		return nil, err
	}
	if s.groupRequired && selected == "" {
		var parts []string
		for _, g := range s.group {
			parts = append(parts, "-"+g+" "+s.find(g).desc)
		}
		return nil, &parseError{"MissingOptionException", "Missing required option: [" + strings.Join(parts, ", ") + "]"}
	}
	return cl, nil
}

func isNegativeNumber(tok string) bool {
	if len(tok) < 2 || tok[0] != '-' {
		return false
	}
	dot := false
	for _, c := range tok[1:] {
		switch {
		case c == '.' && !dot:
			dot = true
		case c < '0' || c > '9':
			return false
		}
	}
	return true
}

// stripQuotes is commons-cli's Util.stripLeadingAndTrailingQuotes: one '"' off each end,
// when the value has no other '"'.
func stripQuotes(s string) string {
	if len(s) > 1 && s[0] == '"' && s[len(s)-1] == '"' && !strings.Contains(s[1:len(s)-1], `"`) {
		return s[1 : len(s)-1]
	}
	return s
}

// validatePath is PathUtils.validatePath with its messages, which zkCli.sh prints for a bad
// path (MalformedPathException).
func validatePath(path string) error {
	if path == "" {
		return cliError("Path length must be > 0")
	}
	if path[0] != '/' {
		return cliError("Path must start with / character")
	}
	if len(path) == 1 {
		return nil
	}
	if path[len(path)-1] == '/' {
		return cliError("Path must not end with / character")
	}
	// Java walks UTF-16 code units: a character above U+FFFF is a surrogate pair, which
	// falls in the invalid range.
	chars := utf16.Encode([]rune(path))
	reason := ""
	last := uint16('/')
	for i := 1; i < len(chars); last, i = chars[i], i+1 {
		c := chars[i]
		switch {
		case c == 0:
			reason = "null character not allowed @" + strconv.Itoa(i)
		case c == '/' && last == '/':
			reason = "empty node name specified @" + strconv.Itoa(i)
		case c == '.' && last == '.':
			if chars[i-2] == '/' && (i+1 == len(chars) || chars[i+1] == '/') {
				reason = "relative paths not allowed @" + strconv.Itoa(i)
			}
		case c == '.':
			if chars[i-1] == '/' && (i+1 == len(chars) || chars[i+1] == '/') {
				reason = "relative paths not allowed @" + strconv.Itoa(i)
			}
		case c > 0 && c <= 0x1f, c >= 0x7f && c <= 0x9f, c >= 0xd800 && c <= 0xf8ff, c >= 0xfff0 && c <= 0xffff:
			reason = "invalid character @" + strconv.Itoa(i)
		}
		if reason != "" {
			return cliError(`Invalid path string "` + path + `" caused by ` + reason)
		}
	}
	return nil
}
