// Command zkcli is ZooKeeper's zkCli.sh in one Go binary: the same commands, flags, output
// and exit codes, on zkd's Go client. See internal/zkcli for the commands.
//
//	zkcli -server h:p[,h:p][/chroot] [-timeout ms] [-r] [-waitforconnection]
//	      [-client-configuration file] [-Dprop=value ...] [--json] [cmd args...]
//
// With a command it runs that command and exits with its code (0 ok, 1 failed, 127
// unknown command). Without one it reads commands from stdin, one a line, and exits with
// the code of the last one (or at quit).
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkd-io/zkd/internal/zkcli"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

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

func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	f, err := parseFlags(args, getenv)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return zkcli.ExitFailed
	}
	ms, err := strconv.Atoi(f.timeout)
	if err != nil {
		fmt.Fprintf(stderr, "Exception in thread \"main\" java.lang.NumberFormatException: For input string: %q\n", f.timeout)
		return zkcli.ExitFailed
	}
	zkOpts, err := clientOptions(f)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return zkcli.ExitFailed
	}
	opts := zkcli.Options{
		Stdout: stdout, Stderr: stderr, JSON: f.json, Timeout: time.Duration(ms) * time.Millisecond,
		ReadOnly: f.readOnly, WaitForConnection: f.wait, ZKOptions: zkOpts,
	}
	if isTerminal(stderr) {
		opts.Progress = stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := zkcli.New(opts)
	defer s.Close()
	fmt.Fprintln(stdout, "Connecting to "+f.server)
	if err := s.Connect(ctx, f.server); err != nil {
		fmt.Fprintln(stderr, err)
		if f.wait {
			return zkcli.ExitFailed
		}
	}
	if len(f.command) > 0 {
		return s.RunArgs(ctx, f.command)
	}
	fmt.Fprintln(stdout, "Welcome to ZooKeeper!")
	fmt.Fprintln(stdout, "JLine support is disabled")
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() && ctx.Err() == nil {
		code := s.Run(ctx, strings.TrimSuffix(sc.Text(), "\r"))
		if s.Quit() {
			return code
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(stderr, "reading commands:", err)
		return zkcli.ExitFailed
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
