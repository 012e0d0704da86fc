// Command zkcli is ZooKeeper's zkCli.sh in one Go binary: the same commands, flags, output
// and exit codes, on zkd's Go client. See internal/zkcli for the commands.
//
//	zkcli -server h:p[,h:p][/chroot] [-timeout ms] [-r] [-waitforconnection]
//	      [-client-configuration file] [-Dprop=value ...] [--json] [cmd args...]
//	zkcli --help | --version
//
// With a command it runs that command and exits with its code (0 ok, 1 failed, 127
// unknown command). Without one it reads commands from stdin, one a line, and exits with
// the code of the last one (or at quit); on a terminal that is zkCli.sh's interactive shell,
// with line editing, history in ~/.zkcli_history and TAB completion. When no server answers,
// a command fails with ConnectionLoss and exit 1 as soon as every server has refused a
// connection. --json keeps stdout for the JSON documents alone.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/zkd-io/zkd/internal/zkcli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := zkcli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
