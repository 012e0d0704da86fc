package zkcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/zk"
)

// Exit codes, ZooKeeper's ExitCode values as zkCli.sh returns them.
const (
	ExitOK              = 0
	ExitFailed          = 1   // a command failed (CliException's default)
	ExitCommandNotFound = 127 // CommandNotFoundException
)

// DefaultTimeout is zkCli.sh's session timeout when -timeout is not given.
const DefaultTimeout = 30 * time.Second

// Options configures a Session.
type Options struct {
	// Stdout and Stderr receive what zkCli.sh prints on them; nil discards.
	Stdout, Stderr io.Writer
	// JSON makes the read commands print one JSON document each (see the package doc).
	JSON bool
	// Timeout is the session timeout (-timeout); 0 means DefaultTimeout.
	Timeout time.Duration
	// ReadOnly lets the session connect to a read-only server (-r).
	ReadOnly bool
	// WaitForConnection makes Connect fail when no session is established within Timeout
	// (-waitforconnection). Without it a failed connect leaves the session unconnected and
	// commands print "Not connected".
	WaitForConnection bool
	// ZKOptions are passed to zk.Connect (TLS, SASL).
	ZKOptions []zk.Option
	// Progress, when set, receives a progress line (rewritten in place with '\r') during
	// long operations: deleteall and ls -R of large trees. Set it only for a terminal.
	Progress io.Writer
	// Logger receives the client's logs; nil discards them, as zkCli.sh's default log
	// configuration keeps them off the terminal.
	Logger *slog.Logger
}

// lockedWriter serialises writes from commands and from the goroutines printing watch
// events, so an event never lands inside a line.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Session is one zkCli session: a connection (or none), the command history, and the
// printwatches switch. Run executes one line as zkCli.sh's executeLine does; a REPL calls it
// for every line it reads. A Session is used by one goroutine at a time.
type Session struct {
	opts     Options
	out, err io.Writer // zkCli.sh's stdout and stderr; with JSON both are the real stderr
	data     io.Writer // the real stdout, for the JSON documents

	mu           sync.Mutex // guards conn and printWatches against the event goroutines
	conn         *zk.Conn
	printWatches bool
	connecting   bool                   // the last Connect failed: as Java's client, still "trying"
	justFailed   bool                   // and no command has failed for it yet: the next one need not redial
	watches      map[*watchReg]struct{} // the watches whose events are being printed
	printers     sync.WaitGroup         // the goroutines printing events; they end with the session

	host     string
	history  map[int]string
	count    int
	last     []string // the last parsed command: a line that parses to nothing reruns it
	exitCode int
	quit     bool
}

// New returns a Session that is not connected yet (see Connect).
func New(opts Options) *Session {
	if opts.Stdout == nil {
		opts.Stdout = io.Discard
	}
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	mu := &sync.Mutex{}
	out := &lockedWriter{mu, opts.Stdout}
	text := out
	if opts.JSON {
		// stdout carries the JSON documents alone, so it can be piped to a JSON parser:
		// what zkCli.sh prints there as text (the banner, events, "Not connected", ...)
		// goes to stderr.
		text = &lockedWriter{mu, opts.Stderr}
	}
	return &Session{
		opts:         opts,
		out:          text,
		data:         out,
		err:          &lockedWriter{mu, opts.Stderr},
		printWatches: true,
		watches:      map[*watchReg]struct{}{},
		history:      map[int]string{},
	}
}

// Quit reports whether the quit command ran: the caller should stop and exit with the
// code Run returned.
func (s *Session) Quit() bool { return s.quit }

// ExitCode is the exit code of the last command, what zkCli.sh exits with at the end of
// its input.
func (s *Session) ExitCode() int { return s.exitCode }

// Host is the connection string of the current (or last) connection.
func (s *Session) Host() string { return s.host }

// State is the state of the session's connection, "CLOSED" without one, in the words of
// Java's ZooKeeper.States (for a prompt).
func (s *Session) State() string {
	c := s.current()
	if c == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.connecting {
			return "CONNECTING"
		}
		return "CLOSED"
	}
	switch c.State() {
	case zk.StateConnected:
		return "CONNECTED"
	case zk.StateConnectedReadOnly:
		return "CONNECTEDREADONLY"
	case zk.StateConnecting, zk.StateDisconnected:
		return "CONNECTING"
	case zk.StateAuthFailed:
		return "AUTH_FAILED"
	}
	return "CLOSED"
}

// SetPrintWatches turns the printing of events on or off, as the printwatches command does.
// zkcli turns it off before closing at the end of its input: zkCli.sh exits there without
// closing, so it prints no Closed event.
func (s *Session) SetPrintWatches(on bool) {
	s.mu.Lock()
	s.printWatches = on
	s.mu.Unlock()
}

// CommandCount is the number of lines run so far (the number in zkCli.sh's prompt).
func (s *Session) CommandCount() int { return s.count }

func (s *Session) current() *zk.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn
}

// Connect closes the current connection, if any, and connects to host ("h:p[,h:p][/chroot]"),
// as zkCli.sh's connectToZK does. It returns once a session is established, or with an error
// when none is: with WaitForConnection after the timeout; without it as soon as every server
// has refused or failed a dial once, which is when Java's client fails the command it holds
// with ConnectionLoss (it does so at the first failed attempt; zkcli tries each server once).
// After a failed Connect the Session is "connecting": the commands that need a server try
// once more, and fail with ConnectionLoss as zkCli.sh's do.
func (s *Session) Connect(ctx context.Context, host string) error {
	s.Close()
	s.host = host
	opts := append([]zk.Option{zk.WithSessionTimeout(s.opts.Timeout), zk.WithLogger(s.opts.Logger)}, s.opts.ZKOptions...)
	if s.opts.ReadOnly {
		opts = append(opts, zk.WithReadOnly())
	}
	cctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	var fails *dialFailures
	if !s.opts.WaitForConnection {
		fails = &dialFailures{want: serverCount(host), giveUp: cancel}
		opts = append(opts, zk.WithDialer(fails.dial))
	}
	c, err := zk.Connect(cctx, host, opts...)
	if err != nil {
		s.mu.Lock()
		s.connecting, s.justFailed = true, true
		s.mu.Unlock()
		if last := fails.err(); last != nil && ctx.Err() == nil {
			return fmt.Errorf("connect to %s: %w", host, last)
		}
		return fmt.Errorf("connect to %s: %w", host, err)
	}
	s.mu.Lock()
	s.conn = c
	s.connecting = false
	s.mu.Unlock()
	// zk.Connect has consumed nothing: the first event is the connection, which zkCli.sh
	// prints like any other.
	s.printers.Add(1)
	go func() {
		defer s.printers.Done()
		for ev := range c.Events() {
			s.printEvent(ev)
		}
	}()
	return nil
}

// serverCount is the number of servers in a connection string.
func serverCount(host string) int {
	hosts, _, _ := strings.Cut(host, "/")
	return len(strings.Split(hosts, ","))
}

// dialFailures ends a connect (giveUp) once each server has failed a dial: zkcli then reports
// ConnectionLoss promptly, as zkCli.sh does, instead of waiting out the session timeout.
type dialFailures struct {
	want   int
	giveUp context.CancelFunc
	dialer net.Dialer

	mu     sync.Mutex
	failed map[string]bool
	last   error
}

func (d *dialFailures) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := d.dialer.DialContext(ctx, network, addr)
	if err != nil {
		d.mu.Lock()
		if d.failed == nil {
			d.failed = map[string]bool{}
		}
		d.failed[addr] = true
		d.last = err
		all := len(d.failed) >= d.want
		d.mu.Unlock()
		if all {
			d.giveUp()
		}
	}
	return nc, err
}

// err is the last failed dial's error, nil when there was none (or d is nil).
func (d *dialFailures) err() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.last
}

// Close closes the connection and waits (for at most 5 s) until its events, the last
// being Closed, are printed: every watch ends with the session.
func (s *Session) Close() {
	s.mu.Lock()
	s.connecting = false
	s.mu.Unlock()
	c := s.current()
	if c == nil {
		return
	}
	c.Close()
	done := make(chan struct{})
	go func() {
		s.printers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
}

// alive is Java's States.isAlive: a session that is neither closed nor failed.
func alive(c *zk.Conn) bool {
	if c == nil {
		return false
	}
	switch c.State() {
	case zk.StateClosed, zk.StateExpired, zk.StateAuthFailed:
		return false
	}
	return true
}

// keeperState names a state as Java's Watcher.Event.KeeperState does.
func keeperState(st zk.State) string {
	switch st {
	case zk.StateConnected:
		return "SyncConnected"
	case zk.StateDisconnected, zk.StateConnecting:
		return "Disconnected"
	case zk.StateExpired:
		return "Expired"
	case zk.StateAuthFailed:
		return "AuthFailed"
	case zk.StateConnectedReadOnly:
		return "ConnectedReadOnly"
	case zk.StateClosed:
		return "Closed"
	}
	return st.String()
}

// printEvent prints an event as ZooKeeperMain's MyWatcher does, in one write.
func (s *Session) printEvent(ev zk.Event) {
	if ev.Type == zk.EventNotWatching {
		// The client's own end-of-watch marker, which Java has no event for; said only when
		// an addWatchSince watch could not be resumed after a reconnect (the session goes on).
		if errors.Is(ev.Err, zk.ErrWatchHistoryCompacted) || errors.Is(ev.Err, zk.ErrUnsupported) {
			fmt.Fprintf(s.err, "\nThe watch on %s could not be resumed (%v): re-read it, then watch again\n", ev.Path, ev.Err)
		}
		return
	}
	s.mu.Lock()
	on := s.printWatches
	s.mu.Unlock()
	if !on {
		return
	}
	typ, path := "None", "null"
	if ev.Type != zk.EventSession {
		typ = jute.EventType(ev.Type).String()
		path = ev.Path
	}
	state := keeperState(ev.State)
	if ev.Type != zk.EventSession && !ev.State.Connected() {
		state = "SyncConnected" // watch events come from a live connection
	}
	fmt.Fprintf(s.out, "\nWATCHER::\n\nWatchedEvent state:%s type:%s path:%s\n", state, typ, path)
}

// Kinds of watches: the one-time ones as Java's client keeps them (dataWatches,
// existWatches, childWatches) and addWatch's two persistent modes.
const (
	watchData = iota
	watchExist
	watchChild
	watchPersistent
	watchRecursive
)

// watchReg is one watch the session set. Java's shell sets every watch with its one default
// watcher, and the client delivers a notification once to each distinct watcher
// (ZKWatchManager.materialize returns a set), so a change that fires several of the session's
// watches, one-time or persistent, prints once. The Go client has a channel per watch: the
// first of them to deliver a notification prints it and tells every other watch that the same
// notification fires to drop it when it comes.
type watchReg struct {
	kind    int
	path    string
	swallow []eventKey // notifications another watch printed, still to arrive here
}

type eventKey struct {
	typ  zk.EventType
	path string
}

// fires reports whether the client delivers a notification of type t on path to w: the
// rules of the Go client's watch registry, which are WatchManager's.
func (w *watchReg) fires(t zk.EventType, path string) bool {
	switch w.kind {
	case watchData, watchExist, watchChild:
		if w.path != path {
			return false
		}
		switch t {
		case zk.EventNodeCreated, zk.EventNodeDataChanged:
			return w.kind == watchData || w.kind == watchExist
		case zk.EventNodeChildrenChanged:
			return w.kind == watchChild
		case zk.EventNodeDeleted:
			return true
		}
	case watchPersistent:
		return w.path == path && notification(t)
	case watchRecursive:
		return notification(t) && t != zk.EventNodeChildrenChanged && under(path, w.path)
	}
	return false
}

// notification reports whether t is a change the server notifies (not a removal or a
// session event).
func notification(t zk.EventType) bool {
	switch t {
	case zk.EventNodeCreated, zk.EventNodeDeleted, zk.EventNodeDataChanged, zk.EventNodeChildrenChanged:
		return true
	}
	return false
}

// under reports whether path is root or below it.
func under(path, root string) bool {
	return path == root || root == "/" || strings.HasPrefix(path, root+"/")
}

// follow prints the events of the watch of kind on path that ch delivers (one for a one-time
// watch, any number for a persistent one), each notification once for the whole session.
func (s *Session) follow(kind int, path string, ch <-chan zk.Event) {
	if ch == nil {
		return
	}
	w := &watchReg{kind: kind, path: path}
	s.mu.Lock()
	s.watches[w] = struct{}{}
	s.mu.Unlock()
	s.printers.Add(1)
	go func() {
		defer s.printers.Done()
		for ev := range ch {
			if s.claim(w, ev) {
				s.printEvent(ev)
			}
		}
		s.mu.Lock()
		delete(s.watches, w)
		s.mu.Unlock()
	}()
}

// claim reports whether w's event ev is to be printed: not when another watch printed the
// same notification already. When it is, the other watches it fires are told to drop it.
func (s *Session) claim(w *watchReg, ev zk.Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := eventKey{ev.Type, ev.Path}
	if i := slices.Index(w.swallow, k); i >= 0 {
		w.swallow = slices.Delete(w.swallow, i, i+1)
		return false
	}
	if notification(ev.Type) {
		for o := range s.watches {
			if o != w && o.fires(ev.Type, ev.Path) {
				o.swallow = append(o.swallow, k)
			}
		}
	}
	return true
}

// cliErr is a CliException: the message zkCli.sh prints on stderr and its exit code.
type cliErr struct {
	msg  string
	code int
}

func (e *cliErr) Error() string { return e.msg }

func cliError(msg string) error { return &cliErr{msg, ExitFailed} }

// Run executes one line as zkCli.sh's executeLine: an empty line does nothing; any other is
// split into words, added to the history and run. It prints what zkCli.sh prints and
// returns the exit code zkCli.sh would exit with after it.
func (s *Session) Run(ctx context.Context, line string) int {
	if line == "" {
		return s.exitCode
	}
	if args := splitLine(line); len(args) > 0 {
		s.last = args
	}
	s.history[s.count] = line
	s.process(ctx, s.last)
	s.count++
	return s.exitCode
}

// RunArgs runs one command given as words (zkcli's command-line mode: no quote handling,
// no history) and returns its exit code.
func (s *Session) RunArgs(ctx context.Context, args []string) int {
	s.last = args
	s.process(ctx, args)
	return s.exitCode
}

// process is processCmd: a CliException's message goes to stderr and sets the exit code.
func (s *Session) process(ctx context.Context, args []string) {
	err := s.processZKCmd(ctx, args)
	if s.quit {
		return // quit exits with the previous command's code
	}
	var ce *cliErr
	switch {
	case err == nil:
		s.exitCode = ExitOK
	case errors.As(err, &ce):
		s.exitCode = ce.code
		fmt.Fprintln(s.err, ce.msg)
	default:
		s.exitCode = ExitFailed
		fmt.Fprintln(s.err, err.Error())
	}
}

func (s *Session) processZKCmd(ctx context.Context, args []string) error {
	if len(args) < 1 {
		s.usage()
		return cliError("No command entered")
	}
	name := args[0]
	if _, ok := commandUsage()[name]; !ok && !zkdCommands[name] {
		s.usage()
		return &cliErr{"Command not found: Command not found " + name, ExitCommandNotFound}
	}
	switch {
	case name == "quit":
		s.Close()
		s.quit = true
		return nil
	case name == "redo" && len(args) >= 2:
		i, err := javaDecode(args[1])
		if err != nil {
			return err
		}
		if s.count <= i || i < 0 { // don't allow redoing this redo
			return cliError("Command index out of range")
		}
		redo := splitLine(s.history[i])
		if len(redo) > 0 {
			s.last = redo
		}
		if len(s.last) > 0 && s.last[0] == "redo" {
			return cliError("No redoing redos")
		}
		s.history[s.count] = s.history[i]
		s.process(ctx, s.last)
	case name == "history":
		for i := s.count - 10; i <= s.count; i++ {
			if i >= 0 {
				fmt.Fprintf(s.out, "%d - %s\n", i, s.history[i])
			}
		}
	case name == "printwatches":
		s.mu.Lock()
		if len(args) == 1 {
			on := "off"
			if s.printWatches {
				on = "on"
			}
			s.mu.Unlock()
			fmt.Fprintln(s.out, "printwatches is "+on)
		} else {
			s.printWatches = args[1] == "on"
			s.mu.Unlock()
		}
	case name == "connect":
		host := s.host
		if len(args) >= 2 {
			host = args[1]
		}
		if err := s.Connect(ctx, host); err != nil {
			if s.opts.WaitForConnection {
				return err
			}
			// zkCli.sh would go on connecting in the background; zkcli says why it is not.
			fmt.Fprintln(s.err, err)
		}
	}
	// The commands below need a live connection; version asks no server.
	c := s.current()
	s.mu.Lock()
	connecting := s.connecting
	s.mu.Unlock()
	if !alive(c) && !connecting && name != "version" {
		fmt.Fprintln(s.out, "Not connected")
		return nil
	}
	cmd, ok := commands[name]
	if !ok || name == "connect" {
		return nil
	}
	cl, err := cmd.opts.parse(args)
	if err != nil {
		return cliError(err.Error())
	}
	if c == nil && name != "version" {
		// Java's client would still be trying, and fail the command at its next failed
		// attempt: try once more, quietly (unless an attempt has just failed), and fail as
		// it does.
		s.mu.Lock()
		lost := s.justFailed
		s.justFailed = false
		s.mu.Unlock()
		if !lost {
			lost = s.Connect(ctx, s.host) != nil
			s.mu.Lock()
			s.justFailed = false // this command reports the failure
			s.mu.Unlock()
		}
		if lost {
			path := ""
			if len(cl.args) > 1 {
				path = cl.args[1]
			}
			return cliError(keeperMessage(jute.ErrConnectionLoss, path))
		}
		c = s.current()
	}
	return cmd.run(ctx, &env{s: s, c: c, cl: cl, args: cl.args, raw: args, opts: cmd.opts, usage: cmd.usageStr()})
}

// javaDecode is Integer.decode, which redo's argument goes through. Java lets its
// NumberFormatException escape and the shell dies; zkcli reports it as a failed command.
func javaDecode(s string) (int, error) {
	t, neg := s, false
	if strings.HasPrefix(t, "-") {
		t, neg = t[1:], true
	} else {
		t = strings.TrimPrefix(t, "+")
	}
	base := 10
	switch {
	case strings.HasPrefix(t, "0x"), strings.HasPrefix(t, "0X"):
		t, base = t[2:], 16
	case strings.HasPrefix(t, "#"):
		t, base = t[1:], 16
	case strings.HasPrefix(t, "0") && len(t) > 1:
		t, base = t[1:], 8
	}
	v, err := strconv.ParseInt(t, base, 32)
	if err != nil || t == "" || t[0] == '-' || t[0] == '+' {
		return 0, cliError(fmt.Sprintf("java.lang.NumberFormatException: For input string: %q", s))
	}
	if neg {
		v = -v
	}
	return int(v), nil
}

// usage is ZooKeeperMain.usage, on stderr.
func (s *Session) usage() {
	var b strings.Builder
	b.WriteString("ZooKeeper -server host:port -client-configuration properties-file cmd args\n")
	u := commandUsage()
	for _, name := range CommandNames() {
		b.WriteString("\t" + name + " " + u[name] + "\n")
	}
	io.WriteString(s.err, b.String())
}

// commandUsage maps every command to its option string, as ZooKeeperMain's commandMap.
func commandUsage() map[string]string {
	m := map[string]string{
		"connect": "host:port", "history": "", "redo": "cmdno", "printwatches": "on|off", "quit": "",
	}
	for name, c := range commands {
		if !zkdCommands[name] {
			m[name] = c.optionStr
		}
	}
	return m
}

// CommandNames lists the commands in the order zkCli.sh's usage prints them (for
// completion).
func CommandNames() []string {
	var names []string
	for name := range commandUsage() {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Children returns the sorted children of path (for completion); nil when not connected.
func (s *Session) Children(ctx context.Context, path string) ([]string, error) {
	c := s.current()
	if !alive(c) {
		return nil, nil
	}
	kids, _, err := c.Children(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("children of %s: %w", path, err)
	}
	sort.Strings(kids)
	return kids, nil
}
