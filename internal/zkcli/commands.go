package zkcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/zkd-io/zkd/internal/buildinfo"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/zk"
)

// command is one of zkCli.sh's CliCommands: its name, option string (the usage line), its
// commons-cli options and what it does.
type command struct {
	name      string
	optionStr string
	opts      *optSet
	run       func(ctx context.Context, e *env) error
}

func (c *command) usageStr() string { return c.name + " " + c.optionStr }

// env is what a command runs with.
type env struct {
	s     *Session
	c     *zk.Conn
	cl    *cmdLine
	args  []string // the words that are not options, the command's name first
	raw   []string // every word, as typed
	opts  *optSet
	usage string
}

func (e *env) println(a ...any)          { fmt.Fprintln(e.s.out, a...) }
func (e *env) eprintln(a ...any)         { fmt.Fprintln(e.s.err, a...) }
func (e *env) printf(f string, a ...any) { fmt.Fprintf(e.s.out, f, a...) }
func (e *env) json() bool                { return e.s.opts.JSON }
func (e *env) parseErr() error           { return cliError(e.usage) }
func opts(o ...optSpec) *optSet          { return &optSet{opts: o} }
func flag(name, desc string) optSpec     { return optSpec{name: name, desc: desc} }
func valued(name, desc string) optSpec   { return optSpec{name: name, hasArg: true, desc: desc} }
func (e *env) emitJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("json: %w", err)
	}
	fmt.Fprintln(e.s.data, string(b))
	return nil
}

var commands = map[string]*command{}

// zkdCommands are the commands zkCli.sh does not have (see init).
var zkdCommands = map[string]bool{}

func init() {
	for _, c := range []*command{
		{"close", "", opts(), cmdClose},
		{"create", "[-s] [-e] [-c] [-t ttl] path [data] [acl]", opts(flag("e", "ephemeral"), flag("s", "sequential"), flag("c", "container"), valued("t", "ttl")), cmdCreate},
		{"delete", "[-v version] path", opts(valued("v", "version")), cmdDelete},
		{"deleteall", "path [-b batch size]", opts(valued("b", "batch size")), cmdDeleteAll},
		{"set", "[-s] [-v version] path data", opts(flag("s", "stats"), valued("v", "version")), cmdSet},
		{"get", "[-s] [-w] path", opts(flag("s", "stats"), flag("w", "watch")), cmdGet},
		{"ls", "[-s] [-w] [-R] path", opts(flag("?", "help"), flag("s", "stat"), flag("w", "watch"), flag("R", "recurse")), cmdLs},
		{"getAcl", "[-s] path", opts(flag("s", "stats")), cmdGetACL},
		{"setAcl", "[-s] [-v version] [-R] path acl", opts(flag("s", "stats"), valued("v", "version"), flag("R", "recursive")), cmdSetACL},
		{"stat", "[-w] path", opts(flag("w", "watch")), cmdStat},
		{"sync", "path", opts(), cmdSync},
		{"setquota", "-n|-b|-N|-B val path", &optSet{
			opts:  []optSpec{valued("n", "num soft quota"), valued("b", "bytes soft quota"), valued("N", "num hard quota"), valued("B", "bytes hard quota")},
			group: []string{"n", "b", "N", "B"}, groupRequired: true}, cmdSetQuota},
		{"listquota", "path", opts(), cmdListQuota},
		{"delquota", "[-n|-b|-N|-B] path", &optSet{
			opts:  []optSpec{flag("n", "num soft quota"), flag("b", "bytes soft quota"), flag("N", "num hard quota"), flag("B", "bytes hard quota")},
			group: []string{"n", "b", "N", "B"}}, cmdDelQuota},
		{"addauth", "scheme auth", opts(), cmdAddAuth},
		{"config", "[-c] [-w] [-s]", opts(flag("s", "stats"), flag("w", "watch"), flag("c", "client connection string")), cmdConfig},
		{"removewatches", "path [-c|-d|-a] [-l]", opts(flag("c", "child watcher type"), flag("d", "data watcher type"), flag("a", "any watcher type"), flag("l", "remove locally when there is no server connection")), cmdRemoveWatches},
		{"getEphemerals", "path", opts(), cmdGetEphemerals},
		{"getAllChildrenNumber", "path", opts(), cmdGetAllChildrenNumber},
		{"version", "", opts(), cmdVersion},
		{"addWatch", "[-m mode] path # optional mode is one of [PERSISTENT, PERSISTENT_RECURSIVE] - default is PERSISTENT_RECURSIVE", opts(valued("m", "")), cmdAddWatch},
		{"whoami", "", nil, cmdWhoAmI},
	} {
		commands[c.name] = c
	}
	// zkd's own commands, beyond zkCli.sh's: usable, but left out of the usage text so that
	// it stays zkCli.sh's.
	for _, c := range []*command{
		{"capabilities", "", opts(), cmdCapabilities},
	} {
		commands[c.name] = c
		zkdCommands[c.name] = true
	}
	// whoami and close do not parse their arguments: any word is fine.
	commands["whoami"].opts = &optSet{lenient: true}
	commands["close"].opts = &optSet{lenient: true}
}

// compat is the retainCompatibility of ls, get and stat (rewrite, true: the third word of
// the line becomes -w, as in 'get path watch') and delete (rewrite false: parsed again as is),
// with its deprecation warning, when the line has more than two plain words.
func (e *env) compat(warning string, rewrite bool) error {
	if len(e.args) <= 2 {
		return nil
	}
	e.eprintln(warning)
	raw := append([]string(nil), e.raw...)
	if rewrite {
		raw[2] = "-w"
	}
	cl, err := e.opts.parse(raw)
	if err != nil {
		return cliError(err.Error())
	}
	e.cl, e.args = cl, cl.args
	return nil
}

// keeper turns an operation's error into the CliWrapperException zkCli.sh prints, path being
// the path the command asked about (what Java's KeeperException carries).
func keeper(err error, path string) error {
	var code jute.Code
	if !errors.As(err, &code) {
		return cliError(err.Error())
	}
	switch code {
	case jute.ErrNoNode:
		return cliError("Node does not exist: " + path)
	case jute.ErrNoChildrenForEphemerals:
		return cliError("Ephemerals cannot have children: " + path)
	case jute.ErrNodeExists:
		return cliError("Node already exists: " + path)
	case jute.ErrNotEmpty:
		return cliError("Node not empty: " + path)
	case jute.ErrNotReadOnly:
		return cliError("Not a read-only call: " + path)
	case jute.ErrInvalidACL:
		return cliError("Acl is not valid : " + path)
	case jute.ErrNoAuth:
		return cliError("Insufficient permission : " + path)
	case jute.ErrBadArguments:
		return cliError("Arguments are not valid : " + path)
	case jute.ErrBadVersion:
		return cliError("version No is not valid : " + path)
	case jute.ErrReconfigInProgress:
		return cliError("Another reconfiguration is in progress -- concurrent reconfigs not supported (yet)")
	case jute.ErrNewConfigNoQuorum:
		return cliError("No quorum of new config is connected and up-to-date with the leader of last commmitted config - try invoking reconfiguration after new servers are connected and synced")
	case jute.ErrQuotaExceeded:
		return cliError("Quota has exceeded : " + path)
	}
	return cliError(keeperMessage(code, path))
}

// keeperMessage is KeeperException.getMessage.
func keeperMessage(code jute.Code, path string) string {
	msg := codeMessages[code]
	if msg == "" {
		msg = "Unknown error " + javaCodeName(code)
	}
	if path == "" {
		return "KeeperErrorCode = " + msg
	}
	return "KeeperErrorCode = " + msg + " for " + path
}

func javaCodeName(code jute.Code) string {
	return strings.ToUpper(strings.TrimPrefix(code.Error(), "zk: "))
}

// codeMessages is KeeperException.getCodeMessage.
var codeMessages = map[jute.Code]string{
	jute.ErrSystemError: "SystemError", jute.ErrRuntimeInconsistency: "RuntimeInconsistency",
	jute.ErrDataInconsistency: "DataInconsistency", jute.ErrConnectionLoss: "ConnectionLoss",
	jute.ErrMarshallingError: "MarshallingError", jute.ErrNewConfigNoQuorum: "NewConfigNoQuorum",
	jute.ErrReconfigInProgress: "ReconfigInProgress", jute.ErrUnimplemented: "Unimplemented",
	jute.ErrOperationTimeout: "OperationTimeout", jute.ErrBadArguments: "BadArguments",
	jute.ErrAPIError: "APIError", jute.ErrNoNode: "NoNode", jute.ErrNoAuth: "NoAuth",
	jute.ErrBadVersion: "BadVersion", jute.ErrNoChildrenForEphemerals: "NoChildrenForEphemerals",
	jute.ErrNodeExists: "NodeExists", jute.ErrInvalidACL: "InvalidACL", jute.ErrAuthFailed: "AuthFailed",
	jute.ErrNotEmpty: "Directory not empty", jute.ErrSessionExpired: "Session expired",
	jute.ErrInvalidCallback: "Invalid callback", jute.ErrSessionMoved: "Session moved",
	jute.ErrNotReadOnly: "Not a read-only call", jute.ErrEphemeralOnLocalSession: "Ephemeral node on local session",
	jute.ErrNoWatcher: "No such watcher", jute.ErrReconfigDisabled: "Reconfig is disabled",
	jute.ErrSessionClosedRequireSASL: "Session closed because client failed to authenticate",
	jute.ErrQuotaExceeded:            "Quota has exceeded", jute.ErrThrottled: "Op throttled due to high load",
}

// parseInt is Integer.parseInt for version arguments; Java lets its NumberFormatException
// escape and the shell dies, zkcli reports it as a failed command.
func parseInt(s string, bits int) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimPrefix(s, "+"), 10, bits)
	if err != nil {
		return 0, cliError(fmt.Sprintf("java.lang.NumberFormatException: For input string: %q", s))
	}
	return v, nil
}

func (e *env) version() (int32, error) {
	if !e.cl.has("v") {
		return -1, nil
	}
	v, err := parseInt(e.cl.value("v"), 32)
	return int32(v), err
}

// javaDate is java.util.Date.toString in the local time zone.
func javaDate(ms int64) string {
	return time.UnixMilli(ms).Format("Mon Jan 02 15:04:05 MST 2006")
}

// printStat is StatPrinter.print.
func (e *env) printStat(st *zk.Stat) {
	var b strings.Builder
	fmt.Fprintf(&b, "cZxid = 0x%x\nctime = %s\nmZxid = 0x%x\nmtime = %s\npZxid = 0x%x\n",
		uint64(st.Czxid), javaDate(st.Ctime), uint64(st.Mzxid), javaDate(st.Mtime), uint64(st.Pzxid))
	fmt.Fprintf(&b, "cversion = %d\ndataVersion = %d\naclVersion = %d\nephemeralOwner = 0x%x\ndataLength = %d\nnumChildren = %d\n",
		st.Cversion, st.Version, st.Aversion, uint64(st.EphemeralOwner), st.DataLength, st.NumChildren)
	fmt.Fprint(e.s.out, b.String())
}

// jsonStat is a Stat in --json output.
type jsonStat struct {
	Czxid          int64 `json:"czxid"`
	Mzxid          int64 `json:"mzxid"`
	Pzxid          int64 `json:"pzxid"`
	Ctime          int64 `json:"ctime"`
	Mtime          int64 `json:"mtime"`
	Version        int32 `json:"version"`
	Cversion       int32 `json:"cversion"`
	Aversion       int32 `json:"aversion"`
	EphemeralOwner int64 `json:"ephemeralOwner"`
	DataLength     int32 `json:"dataLength"`
	NumChildren    int32 `json:"numChildren"`
}

func statJSON(st *zk.Stat) *jsonStat {
	if st == nil {
		return nil
	}
	return &jsonStat{st.Czxid, st.Mzxid, st.Pzxid, st.Ctime, st.Mtime, st.Version, st.Cversion,
		st.Aversion, st.EphemeralOwner, st.DataLength, st.NumChildren}
}

// progressInterval paces the progress line (tests set it to 0).
var progressInterval = 200 * time.Millisecond

// progress writes a progress line to Options.Progress at most every progressInterval.
type progress struct {
	e    *env
	last time.Time
	used bool
}

func (p *progress) update(format string, a ...any) {
	w := p.e.s.opts.Progress
	if w == nil || time.Since(p.last) < progressInterval {
		return
	}
	p.last, p.used = time.Now(), true
	fmt.Fprintf(w, "\r\x1b[K"+format, a...)
}

func (p *progress) done() {
	if p.used {
		fmt.Fprint(p.e.s.opts.Progress, "\r\x1b[K")
	}
}

func cmdClose(ctx context.Context, e *env) error {
	e.s.Close()
	return nil
}

func cmdVersion(ctx context.Context, e *env) error {
	if len(e.args) > 1 {
		return e.parseErr()
	}
	// zkCli.sh: "ZooKeeper CLI version: 3.8.0-<commit>, built on <date>"; zkcli keeps the
	// prefix scripts match on and names its own build.
	e.println("ZooKeeper CLI version: zkcli " + buildinfo.Get().String())
	return nil
}

func cmdLs(ctx context.Context, e *env) error {
	if e.cl.has("?") {
		e.printf("usage: ls [options] path\n -?   help\n -R   recurse\n -s   stat\n -w   watch\n")
	}
	if err := e.compat("'ls path [watch]' has been deprecated. Please use 'ls [-w] path' instead.", true); err != nil {
		return err
	}
	if len(e.args) < 2 {
		return e.parseErr()
	}
	path := e.args[1]
	watch, withStat := e.cl.has("w"), e.cl.has("s")
	if err := validatePath(path); err != nil {
		return err
	}
	if e.cl.has("R") {
		return e.lsRecursive(ctx, path, watch)
	}
	var (
		kids []string
		st   *zk.Stat
		ch   <-chan zk.Event
		err  error
	)
	if watch {
		kids, st, ch, err = e.c.ChildrenW(ctx, path)
	} else {
		kids, st, err = e.c.Children(ctx, path)
	}
	if err != nil {
		return keeper(err, path)
	}
	e.s.follow(watchChild, path, ch)
	sort.Strings(kids)
	if e.json() {
		doc := map[string]any{"path": path, "children": nonNil(kids)}
		if withStat {
			doc["stat"] = statJSON(st)
		}
		return e.emitJSON(doc)
	}
	e.println("[" + strings.Join(kids, ", ") + "]")
	if withStat {
		e.printStat(st)
	}
	return nil
}
