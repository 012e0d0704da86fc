package zkcli

import (
	"context"
	"strconv"

	"github.com/zkd-io/zkd/zk"
)

// lsPaged is the paged-list extension's command (zkd's own, out of the usage text): every
// child of a node, read a page at a time from one view of the tree, a name a line, then
// the view's zxid and the count on stderr.
func init() {
	c := &command{"lsPaged", "[-n page size] path", opts(valued("n", "names per page")), cmdLsPaged}
	commands[c.name] = c
	zkdCommands[c.name] = true
}

func cmdLsPaged(ctx context.Context, e *env) error {
	if len(e.args) < 2 {
		return e.parseErr()
	}
	size := 1000
	if e.cl.has("n") {
		n, err := strconv.Atoi(e.cl.value("n"))
		if err != nil || n <= 0 {
			return cliError("-n argument must be a positive int value")
		}
		size = n
	}
	path := e.args[1]
	if err := validatePath(path); err != nil {
		return err
	}
	req := zk.PageRequest{Limit: size}
	count := 0
	for {
		p, err := e.c.ListPage(ctx, path, req)
		if err != nil {
			return keeper(err, path)
		}
		for _, name := range p.Names {
			e.println(name)
		}
		count += len(p.Names)
		if !p.Truncated {
			e.eprintln("listed " + strconv.Itoa(count) + " of " + strconv.Itoa(p.Total) + " children at zxid 0x" + strconv.FormatInt(p.Zxid, 16))
			return nil
		}
		req = zk.PageRequest{Limit: size, Cursor: p.Cursor}
	}
}
