// Package doctest runs the commands of the manual (docs/*.md), so that a page cannot keep
// telling readers to type something that no longer works.
//
// A page marks a fenced code block as runnable with the info string "sh runnable", optionally
// followed by needs=TOOL[,TOOL] naming the tools it uses besides zkd and zkcli. The block is a
// bash script; it passes when it exits 0. A fenced block with the info string "output" right
// after it states what the script must print: each of its lines must appear, in order, within
// the lines the script writes to stdout and stderr. docs/README.md documents the marker for
// the pages' authors.
package doctest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/zkd-io/zkd/internal/testing/proc"
)

// Marker is the info string (first word "sh", then this) of a runnable block.
const Marker = "runnable"

// Block is one runnable block of a page.
type Block struct {
	Page   string   // the page's name, for messages
	Line   int      // the line of its opening fence, 1-based
	Script string   // the commands, as the page shows them
	Needs  []string // tools besides zkd and zkcli
	Output []string // what it must print, in order; nil when the page states nothing
}

// Name is page:line, the block's name in test output.
func (b Block) Name() string { return fmt.Sprintf("%s:%d", b.Page, b.Line) }

// fence is an opening or closing code fence: its backtick run and what follows it.
func fence(line string) (ticks int, info string, ok bool) {
	// CommonMark lets a fence be indented by up to three spaces.
	trimmed := strings.TrimLeft(line, " ")
	if len(line)-len(trimmed) > 3 {
		return 0, "", false
	}
	for ticks < len(trimmed) && trimmed[ticks] == '`' {
		ticks++
	}
	if ticks < 3 {
		return 0, "", false
	}
	return ticks, strings.TrimSpace(trimmed[ticks:]), true
}

// Extract returns the runnable blocks of page (named name in messages). It fails on what
// would otherwise silently run nothing: an unterminated fence, a runnable block with an
// attribute it does not know, an output block that follows no runnable block.
func Extract(name, page string) ([]Block, error) {
	lines := strings.Split(page, "\n")
	var blocks []Block
	// last is the index in blocks of the runnable block the previous fence closed, or -1:
	// an output block must come right after one (blank lines between them only).
	last := -1
	for i := 0; i < len(lines); i++ {
		ticks, info, ok := fence(lines[i])
		if !ok {
			if strings.TrimSpace(lines[i]) != "" {
				last = -1
			}
			continue
		}
		start := i
		var body []string
		closed := false
		for i++; i < len(lines); i++ {
			// A fence closes only with at least as many backticks and nothing after them,
			// so a page can show a runnable block inside a longer fence without running it.
			if n, rest, ok := fence(lines[i]); ok && n >= ticks && rest == "" {
				closed = true
				break
			}
			body = append(body, lines[i])
		}
		if !closed {
			return nil, fmt.Errorf("%s:%d: the code fence is never closed", name, start+1)
		}
		words := strings.Fields(info)
		switch {
		case len(words) >= 2 && words[0] == "sh" && words[1] == Marker:
			b := Block{Page: name, Line: start + 1, Script: strings.Join(body, "\n") + "\n"}
			for _, w := range words[2:] {
				tools, ok := strings.CutPrefix(w, "needs=")
				if !ok || tools == "" {
					return nil, fmt.Errorf("%s:%d: unknown attribute %q of a runnable block (only needs=TOOL[,TOOL])", name, start+1, w)
				}
				b.Needs = append(b.Needs, strings.Split(tools, ",")...)
			}
			blocks = append(blocks, b)
			last = len(blocks) - 1
			continue
		case len(words) == 1 && words[0] == "output":
			if last < 0 {
				return nil, fmt.Errorf("%s:%d: an output block must follow a runnable block", name, start+1)
			}
			for _, l := range body {
				if l = strings.TrimSpace(l); l != "" {
					blocks[last].Output = append(blocks[last].Output, l)
				}
			}
		case looksRunnable(words):
			// "bash runnable", "sh runable"...: a typo must not turn the check off.
			return nil, fmt.Errorf("%s:%d: %q: a runnable block's info string is \"sh %s\"", name, start+1, info, Marker)
		}
		last = -1
	}
	return blocks, nil
}

// looksRunnable reports an info string that was meant to mark a runnable block but does
// not: a word that starts like the marker.
func looksRunnable(words []string) bool {
	for _, w := range words {
		if strings.HasPrefix(strings.ToLower(w), "run") {
			return true
		}
	}
	return false
}

// Env is where blocks run.
type Env struct {
	Dir     string            // the working directory
	Path    []string          // directories put first in PATH (the built zkd and zkcli)
	Replace map[string]string // text of the page -> text run (the test server's addresses)
	Timeout time.Duration     // per block; 0 means 30 s
}

// Script is the block's script with env's replacements made.
func (env Env) Script(b Block) string { return env.replace(b.Script) }

func (env Env) replace(s string) string {
	for from, to := range env.Replace {
		s = strings.ReplaceAll(s, from, to)
	}
	return s
}

// Run runs b in env with bash (-e, -u, pipefail: a failing command anywhere fails the block)
// and returns what it printed, and an error when it did not exit 0, ran out of time, or
// did not print the block's output.
func Run(b Block, env Env) (string, error) {
	timeout := env.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	cmd := exec.Command("bash", "-eu", "-o", "pipefail", "-c", env.Script(b))
	cmd.Dir = env.Dir
	path := strings.Join(append(append([]string{}, env.Path...), os.Getenv("PATH")), string(os.PathListSeparator))
	cmd.Env = append(os.Environ(), "PATH="+path)
	var out bytes.Buffer
	// One writer for both, so their lines interleave as the script wrote them.
	cmd.Stdout, cmd.Stderr = &out, &out
	// A command the script leaves in the background would keep the output pipe open and
	// hold Wait forever: once the script has exited, stop reading after a moment.
	cmd.WaitDelay = 2 * time.Second
	// proc puts the script in a process group of its own, so a command it leaves running
	// is killed with it, by PID only.
	p, err := proc.Start(cmd)
	if err != nil {
		return "", err
	}
	if err := p.Wait(timeout); err != nil {
		_ = p.Kill(5 * time.Second)
		return out.String(), fmt.Errorf("%s: not done after %v: %w", b.Name(), timeout, err)
	}
	if code := p.ExitCode(); code != 0 {
		return out.String(), fmt.Errorf("%s: exit status %d", b.Name(), code)
	}
	if err := Match(out.String(), env.replacedOutput(b)); err != nil {
		return out.String(), fmt.Errorf("%s: %w", b.Name(), err)
	}
	return out.String(), nil
}

func (env Env) replacedOutput(b Block) []string {
	want := make([]string, len(b.Output))
	for i, w := range b.Output {
		want[i] = env.replace(w)
	}
	return want
}

// Match checks that each of want appears, in order, within the lines of got: want[i+1] on
// a line after the one that held want[i].
func Match(got string, want []string) error {
	lines := strings.Split(got, "\n")
	at := 0
	for _, w := range want {
		found := false
		for ; at < len(lines); at++ {
			if strings.Contains(lines[at], w) {
				found = true
				at++
				break
			}
		}
		if !found {
			return fmt.Errorf("the output lacks %q (in order after the lines before it)", w)
		}
	}
	return nil
}

// ErrNoBlocks is what a caller reports when pages hold no runnable block at all: the marker
// was renamed, or every block lost it.
var ErrNoBlocks = errors.New("no runnable blocks found")
