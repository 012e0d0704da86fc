package zkcli

import (
	"context"
	"errors"
	"strconv"

	"github.com/zkd-io/zkd/zk"
)

// addWatchSince is the watch-resume extension's command (zkd's own, out of the usage text):
// addWatch that first prints the events of the changes after a zxid (a number, or 0x hex as
// zkd prints zxids), then follows live ones; the Go client resumes it by itself after a
// reconnect.
func init() {
	c := &command{"addWatchSince", "[-m mode] path zxid", opts(valued("m", "")), cmdAddWatchSince}
	commands[c.name] = c
	zkdCommands[c.name] = true
}

func cmdAddWatchSince(ctx context.Context, e *env) error {
	if len(e.args) != 3 {
		return e.parseErr()
	}
	mode, err := e.watchMode()
	if err != nil {
		return err
	}
	path := e.args[1]
	if err := validatePath(path); err != nil {
		return err
	}
	since, err := strconv.ParseInt(e.args[2], 0, 64)
	if err != nil || since < 0 {
		return cliError("zxid argument must be a zxid, decimal or 0x hex")
	}
	w, at, err := e.c.AddWatchSince(ctx, path, mode, since)
	if errors.Is(err, zk.ErrWatchHistoryCompacted) {
		return cliError("The server's watch history no longer reaches back to 0x" + strconv.FormatInt(since, 16) +
			": re-read " + path + ", then watch again")
	}
	if err != nil {
		return keeper(err, path)
	}
	e.s.follow(watchKindOf(mode), path, w.Events())
	e.eprintln("watching " + path + " from zxid 0x" + strconv.FormatInt(at, 16))
	return nil
}
