package zkcli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/chzyer/readline"

	"github.com/zkd-io/zkd/internal/buildinfo"
	"github.com/zkd-io/zkd/zk"
)

// flags are ZooKeeperMain.MyCommandOptions, plus zkd's --json and Java's -D properties.
type flags struct {
	server, timeout, clientConfig string
	readOnly, wait, json          bool
	help, version                 bool              // --help/-h, --version: print and exit, no connection
	props                         map[string]string // -Dkey=value, from the JVM flags and the line
	command                       []string
}

// parseFlags is MyCommandOptions.parseOptions: known options anywhere before the command,
// unknown ones ignored, the first word not starting with '-' begins the command.
func parseFlags(args []string, getenv func(string) string) (*flags, error) {
	f := &flags{server: "localhost:2181", timeout: "30000", props: map[string]string{}}
	// zkCli.sh passes CLIENT_JVMFLAGS and JVMFLAGS to java: take their -D properties, so
	// scripts that configure TLS or SASL that way keep working.
	for _, env := range []string{"JVMFLAGS", "CLIENT_JVMFLAGS"} {
		for _, w := range strings.Fields(getenv(env)) {
			addProp(f.props, w)
		}
	}
	for i := 0; i < len(args); i++ {
		opt := args[i]
		next := func() (string, error) {
			if i+1 >= len(args) {
				return "", fmt.Errorf("Error: no argument found for option %s", opt)
			}
			i++
			return args[i], nil
		}
		var err error
		switch opt {
		case "-server":
			f.server, err = next()
		case "-timeout":
			f.timeout, err = next()
		case "-r":
			f.readOnly = true
		case "-client-configuration":
			f.clientConfig, err = next()
		case "-waitforconnection":
			f.wait = true
		case "--json", "-json":
			f.json = true
		case "--help", "-help", "-h", "-?":
			f.help = true
		case "--version", "-version":
			f.version = true
		default:
			if addProp(f.props, opt) {
				continue
			}
			if !strings.HasPrefix(opt, "-") {
				f.command = args[i:]
				return f, nil
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return f, nil
}

func addProp(props map[string]string, w string) bool {
	kv, ok := strings.CutPrefix(w, "-D")
	if !ok {
		return false
	}
	k, v, _ := strings.Cut(kv, "=")
	props[k] = v
	return true
}

// Main is zkcli's command line: parse args as zkCli.sh does, connect, then run the command
// given on the line or every line of stdin, and return the exit code. ctx ends the run
// (zkcli cancels it on SIGINT and SIGTERM).
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	f, err := parseFlags(args, getenv)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return ExitFailed
	}
	// zkCli.sh has no help or version flag (it ignores them and connects): zkcli answers
	// them without a server, as a command-line tool is expected to.
	if f.help {
		printHelp(stdout)
		return ExitOK
	}
	if f.version {
		fmt.Fprintln(stdout, buildinfo.Line("zkcli"))
		return ExitOK
	}
	ms, err := strconv.Atoi(f.timeout)
	if err != nil {
		fmt.Fprintf(stderr, "Exception in thread \"main\" java.lang.NumberFormatException: For input string: %q\n", f.timeout)
		return ExitFailed
	}
	zkOpts, err := clientOptions(f)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return ExitFailed
	}
	opts := Options{
		Stdout: stdout, Stderr: stderr, JSON: f.json, Timeout: time.Duration(ms) * time.Millisecond,
		ReadOnly: f.readOnly, WaitForConnection: f.wait, ZKOptions: zkOpts,
	}
	if isTerminal(stderr) {
		opts.Progress = stderr
	}
	// No command and a terminal on both ends: zkCli.sh's interactive shell. Its output goes
	// through the line editor, which moves the line being edited below watch events.
	var (
		rl   *readline.Instance
		comp = &completer{ctx: ctx}
	)
	if len(f.command) == 0 && isTerminal(stdin) && isTerminal(stdout) {
		if rl, err = newLineEditor(stdin, stdout, stderr, getenv("HOME"), comp); err != nil {
			fmt.Fprintln(stderr, err)
			return ExitFailed
		}
		defer rl.Close()
		opts.Stdout, opts.Stderr = rl.Stdout(), rl.Stderr()
	}
	s := New(opts)
	comp.s = s
	defer s.Close()
	fmt.Fprintln(s.out, "Connecting to "+f.server)
	if err := s.Connect(ctx, f.server); err != nil {
		if f.wait {
			// zkCli.sh closes the client it gave up on (its Closed event prints) and
			// dies with ConnectionLoss.
			s.printEvent(zk.Event{Type: zk.EventSession, State: zk.StateClosed})
			fmt.Fprintln(s.err, err)
			return ExitFailed
		}
		// zkCli.sh's client logs its failed attempts; zkcli says why once, and the
		// commands fail with ConnectionLoss as zkCli.sh's do.
		fmt.Fprintln(s.err, err)
	}
	if len(f.command) > 0 {
		code := s.RunArgs(ctx, f.command)
		s.SetPrintWatches(false)
		return code
	}
	if rl != nil {
		return s.interact(ctx, rl)
	}
	// Through the session's writer: the connection's event may be printing meanwhile.
	fmt.Fprintln(s.out, "Welcome to ZooKeeper!")
	fmt.Fprintln(s.out, "JLine support is disabled")
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() && ctx.Err() == nil {
		code := s.Run(ctx, strings.TrimSuffix(sc.Text(), "\r"))
		if s.Quit() {
			return code
		}
	}
	s.SetPrintWatches(false)
	if err := sc.Err(); err != nil {
		fmt.Fprintln(stderr, "reading commands:", err)
		return ExitFailed
	}
	return s.ExitCode()
}

// printHelp prints zkcli's usage: its flags, then the commands as zkCli.sh's usage lists them.
func printHelp(w io.Writer) {
	var b strings.Builder
	b.WriteString(`Usage: zkcli [-server host:port[,host:port...][/chroot]] [-timeout ms] [-r]
             [-waitforconnection] [-client-configuration file] [-Dkey=value ...]
             [--json] [command [args...]]
       zkcli --help | --version

zkcli is ZooKeeper's zkCli.sh in one binary: the same commands, output and exit codes.
With a command it runs that command and exits with its code (0 ok, 1 failed, 127 unknown
command); without one it reads commands from stdin (an interactive shell on a terminal).

  -server               servers to connect to (default localhost:2181)
  -timeout              session timeout in milliseconds (default 30000)
  -r                    allow a read-only server
  -waitforconnection    wait up to the timeout for a session, exit 1 without one
                        (without it, commands fail with ConnectionLoss as soon as
                        every server has refused a connection)
  -client-configuration the Java client's properties file (TLS, SASL)
  -Dkey=value           a Java client system property (also read from CLIENT_JVMFLAGS
                        and JVMFLAGS)
  --json                read commands print one JSON document per line on stdout;
                        everything else goes to stderr
  --help, -h            print this help
  --version             print zkcli's version, commit and Go version

Commands:
`)
	u := commandUsage()
	for _, name := range CommandNames() {
		b.WriteString("\t" + name + " " + u[name] + "\n")
	}
	io.WriteString(w, b.String())
}
