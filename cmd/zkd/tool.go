package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/zkd-io/zkd/internal/datatool"
)

const toolUsage = `usage: zkd tool COMMAND [flags] ARGS
  log FILE [--json]                      dump a txn log as zkTxnLogToolkit.sh prints it
  snapshot FILE [-d] [--json] [--ncdu]   dump a snapshot as zkSnapShotToolkit.sh prints it
                                         (-d: data in base64; --ncdu: its -json output)
  verify DIR                             check every log's checksums and tail, and every snapshot
  repair FILE [--fix-crc]                cut a log's torn or corrupt tail (FILE.bak keeps the original)
  repair DIR                             cut a data directory's log at its damage, as a server
                                         that refused to start names it (the files it changes
                                         are kept as damaged.*), accepting the loss
  diff SNAP1 SNAP2                       the znodes that differ
  summary SNAP [--depth N] [--top N]     node counts and data bytes by subtree
  save URL FILE [--auth "digest u:p"]    fetch a consistent snapshot from a running server's
                                         AdminServer (URL: http://host:8080/commands)
Dates print in the local time zone (TZ), as the Java tools do.`

// runTool runs `zkd tool ...`.
func runTool(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stderr, toolUsage)
		if len(args) == 0 {
			return fmt.Errorf("tool: no command")
		}
		return nil
	}
	cmd := args[0]
	fset := flag.NewFlagSet("zkd tool "+cmd, flag.ContinueOnError)
	fset.SetOutput(stderr)
	jsonOut := fset.Bool("json", false, "JSON lines instead of ZooKeeper's text")
	data := fset.Bool("d", false, "print each znode's data (base64)")
	ncdu := fset.Bool("ncdu", false, "SnapshotFormatter -json's ncdu export")
	fixCRC := fset.Bool("fix-crc", false, "recompute mismatched checksums instead of cutting there")
	depth := fset.Int("depth", 1, "subtree depth for summary")
	top := fset.Int("top", 20, "subtrees to list in summary (0: all)")
	auth := fset.String("auth", "", `save: the Authorization header, e.g. "digest super:secret"`)
	pos, err := parseInterleaved(fset, args[1:])
	if err != nil {
		return err
	}
	need := func(n int) error {
		if len(pos) != n {
			return fmt.Errorf("tool %s: want %d arguments, got %q\n%s", cmd, n, pos, toolUsage)
		}
		return nil
	}
	opts := datatool.Options{JSON: *jsonOut, Data: *data}
	switch cmd {
	case "log":
		if err := need(1); err != nil {
			return err
		}
		return datatool.DumpLog(stdout, pos[0], opts)
	case "snapshot":
		if err := need(1); err != nil {
			return err
		}
		if *ncdu {
			return datatool.DumpNcdu(stdout, pos[0], time.Now())
		}
		return datatool.DumpSnapshot(stdout, pos[0], opts)
	case "verify":
		if err := need(1); err != nil {
			return err
		}
		return datatool.Verify(stdout, pos[0])
	case "repair":
		if err := need(1); err != nil {
			return err
		}
		if st, err := os.Stat(pos[0]); err == nil && st.IsDir() {
			return datatool.RepairDir(stdout, pos[0], strconv.FormatInt(time.Now().UnixMilli(), 10))
		}
		return datatool.Repair(stdout, pos[0], datatool.RepairOptions{FixCRC: *fixCRC})
	case "diff":
		if err := need(2); err != nil {
			return err
		}
		return datatool.Diff(stdout, pos[0], pos[1])
	case "summary":
		if err := need(1); err != nil {
			return err
		}
		return datatool.Summary(stdout, pos[0], *depth, *top)
	case "save":
		if err := need(2); err != nil {
			return err
		}
		return datatool.Save(context.Background(), stdout, pos[0], *auth, pos[1])
	}
	return fmt.Errorf("tool: unknown command %q\n%s", cmd, toolUsage)
}

// parseInterleaved parses flags wherever they stand among the positional arguments (the
// flag package stops at the first non-flag), so `zkd tool log FILE --json` works.
func parseInterleaved(fset *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		if err := fset.Parse(args); err != nil {
			return nil, err
		}
		args = fset.Args()
		if len(args) == 0 {
			break
		}
		if args[0] == "--" || !strings.HasPrefix(args[0], "-") {
			if args[0] == "--" {
				return append(pos, args[1:]...), nil
			}
			pos = append(pos, args[0])
			args = args[1:]
		}
	}
	return pos, nil
}
