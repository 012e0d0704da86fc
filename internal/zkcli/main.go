package zkcli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// flags are ZooKeeperMain.MyCommandOptions, plus zkd's --json and Java's -D properties.
type flags struct {
	server, timeout, clientConfig string
	readOnly, wait, json          bool
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
	s := New(opts)
	defer s.Close()
	fmt.Fprintln(s.out, "Connecting to "+f.server)
	if err := s.Connect(ctx, f.server); err != nil {
		fmt.Fprintln(s.err, err)
		if f.wait {
			return ExitFailed
		}
	}
	if len(f.command) > 0 {
		code := s.RunArgs(ctx, f.command)
		s.SetPrintWatches(false)
		return code
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

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
