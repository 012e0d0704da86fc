package zkcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chzyer/readline"
)

// HistoryFile is where the interactive shell keeps its history, in the home directory.
const HistoryFile = ".zkcli_history"

// historyLimit bounds the history file: older lines are dropped when it grows past this.
const historyLimit = 1000

// childrenTTL is how long completion trusts a znode's children: long enough that a burst
// of TABs asks the server once, short enough that new znodes show up promptly.
const childrenTTL = 2 * time.Second

// newLineEditor sets up the interactive shell's line editor on the terminal: history in
// home/HistoryFile (in memory only when home is ""), completion, and the keys zkCli.sh's
// JLine has (Ctrl-C drops the line, Ctrl-D on an empty line ends the shell).
func newLineEditor(stdin io.Reader, stdout, stderr io.Writer, home string, complete readline.AutoCompleter) (*readline.Instance, error) {
	cfg := &readline.Config{
		HistoryLimit:    historyLimit,
		AutoComplete:    complete,
		InterruptPrompt: "^C",
		EOFPrompt:       "\n", // readline's spelling of "just end the line"
		Stdin:           readline.NewCancelableStdin(stdin),
		Stdout:          stdout,
		Stderr:          stderr,
	}
	if home != "" {
		cfg.HistoryFile = filepath.Join(home, HistoryFile)
		// The history holds addauth's passwords: create it for its owner alone (readline
		// would create it world-readable). A file that cannot be made just means no history.
		if f, err := os.OpenFile(cfg.HistoryFile, os.O_CREATE|os.O_RDONLY, 0o600); err == nil {
			f.Close()
		}
	}
	// readline's defaults drive the process's own stdin and stdout; Main's are the ones to
	// use (Main checked that they are terminals).
	if in, ok := stdin.(*os.File); ok {
		fd := int(in.Fd())
		var saved *readline.State
		cfg.FuncIsTerminal = func() bool { return true }
		cfg.FuncMakeRaw = func() error {
			st, err := readline.MakeRaw(fd)
			if err != nil {
				return fmt.Errorf("raw mode: %w", err)
			}
			saved = st
			return nil
		}
		cfg.FuncExitRaw = func() error {
			if saved == nil {
				return nil
			}
			st := saved
			saved = nil
			return readline.Restore(fd, st)
		}
	}
	if out, ok := stdout.(*os.File); ok {
		fd := int(out.Fd())
		cfg.FuncGetWidth = func() int {
			w, _, err := readline.GetSize(fd)
			if err != nil {
				return -1
			}
			return w
		}
	}
	rl, err := readline.NewEx(cfg)
	if err != nil {
		return nil, fmt.Errorf("line editor: %w", err)
	}
	return rl, nil
}

// prompt is ZooKeeperMain.getPrompt: "[zk: host(STATE) count] ".
func prompt(s *Session) string {
	return "[zk: " + s.Host() + "(" + s.State() + ") " + strconv.Itoa(s.CommandCount()) + "] "
}

// interact is zkCli.sh's interactive loop: read a line with the prompt, run it, until
// Ctrl-D, quit or the end of ctx. It returns the exit code, as the loop on stdin does.
func (s *Session) interact(ctx context.Context, rl *readline.Instance) int {
	fmt.Fprintln(s.out, "Welcome to ZooKeeper!")
	fmt.Fprintln(s.out, "JLine support is enabled")
	for ctx.Err() == nil {
		rl.SetPrompt(prompt(s))
		line, err := rl.Readline()
		switch {
		case errors.Is(err, readline.ErrInterrupt):
			continue // Ctrl-C: the line is dropped, the shell goes on
		case errors.Is(err, io.EOF):
			s.SetPrintWatches(false)
			return s.ExitCode()
		case err != nil:
			fmt.Fprintln(s.err, "reading commands:", err)
			return ExitFailed
		}
		code := s.Run(ctx, line)
		if s.Quit() {
			return code
		}
	}
	s.SetPrintWatches(false)
	return s.ExitCode()
}

// completer completes the word before the cursor as zkCli.sh's JLineZNodeCompleter does:
// a word starting with '/' from the children of its parent znode, the first word of the
// line from the command names.
type completer struct {
	ctx context.Context
	s   *Session

	mu    sync.Mutex
	cache map[string]cachedChildren
}

type cachedChildren struct {
	kids []string
	at   time.Time
}

// Do implements readline.AutoCompleter: the candidates' remaining text and the length of
// the part already typed.
func (c *completer) Do(line []rune, pos int) ([][]rune, int) {
	head := string(line[:pos])
	start := strings.LastIndexAny(head, " \t") + 1
	word := head[start:]
	var out [][]rune
	if strings.HasPrefix(word, "/") {
		slash := strings.LastIndexByte(word, '/')
		dir, prefix := word[:slash], word[slash+1:]
		if dir == "" {
			dir = "/"
		}
		for _, k := range c.children(dir) {
			if strings.HasPrefix(k, prefix) {
				out = append(out, []rune(k[len(prefix):]))
			}
		}
		return out, len([]rune(prefix))
	}
	if strings.TrimSpace(head[:start]) != "" {
		return nil, 0 // an argument that is not a path: nothing to offer
	}
	for _, name := range CommandNames() {
		if strings.HasPrefix(name, word) {
			out = append(out, []rune(name[len(word):]+" "))
		}
	}
	return out, len([]rune(word))
}

// children are dir's children, from the cache when fresh; none when the server cannot say
// (not connected, no such znode, no permission).
func (c *completer) children(dir string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.cache[dir]; ok && time.Since(e.at) < childrenTTL {
		return e.kids
	}
	ctx, cancel := context.WithTimeout(c.ctx, childrenTTL)
	defer cancel()
	kids, err := c.s.Children(ctx, dir)
	if err != nil {
		kids = nil
	}
	if c.cache == nil || len(c.cache) >= 256 {
		c.cache = map[string]cachedChildren{} // bounded: a fresh start costs one round trip
	}
	c.cache[dir] = cachedChildren{kids, time.Now()}
	return kids
}

// isTerminal reports whether f is a terminal (not merely a character device such as
// /dev/null): stdin and stdout both being one makes zkcli interactive.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && readline.IsTerminal(int(file.Fd()))
}
