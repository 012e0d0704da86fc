// Command zkbench is a load generator for ZooKeeper-compatible servers: the workloads, the
// measurements and the reports are internal/bench's; this is its command line.
//
//	zkbench run [flags] WORKLOAD...     run workloads against --servers
//	zkbench wait [flags]                time until a server answers (restart, failover)
//	zkbench fsync [flags]               time write+fsync of a directory's disk
//	zkbench compare --a F --b F         markdown comparison of two JSON-lines files
//	zkbench plot -o F.svg FILE...       latency percentiles of JSON-lines files
//	zkbench curve -x F -o F.svg FILE... a metric against a swept parameter (bench/curves.sh)
//	zkbench list                        the workloads
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/zkd-io/zkd/internal/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := bench.Main(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "zkbench:", err)
		}
		os.Exit(1)
	}
}
