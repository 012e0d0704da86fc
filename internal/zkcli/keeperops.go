package zkcli

import (
	"context"
	"math"
	"strconv"
	"strings"
)

// The keeper-ops commands are zkd's own (zkdCommands): they run like the others but stay
// out of the usage text, which remains zkCli.sh's, and a stock command never changes
// meaning.
func init() {
	for _, c := range []*command{
		// keeper-ops: an atomic deleteall (deleteall itself stays ZooKeeper's batches).
		{"removeRecursive", "[-l limit] path", opts(valued("l", "most nodes to delete")), cmdRemoveRecursive},
		// keeper-ops: create with the missing parents, in one write.
		{"createWithParents", "[-s] [-e] [-c] path [data] [acl]", opts(flag("e", "ephemeral"), flag("s", "sequential"), flag("c", "container")), cmdCreateWithParents},
	} {
		commands[c.name] = c
		zkdCommands[c.name] = true
	}
}

func cmdRemoveRecursive(ctx context.Context, e *env) error {
	if len(e.args) < 2 {
		return e.parseErr()
	}
	limit := uint32(math.MaxUint32)
	if e.cl.has("l") {
		v, err := strconv.ParseUint(strings.TrimPrefix(e.cl.value("l"), "+"), 10, 32)
		if err != nil {
			return cliError("-l argument must be a non-negative int value")
		}
		limit = uint32(v)
	}
	path := e.args[1]
	if err := validatePath(path); err != nil {
		return err
	}
	if err := e.c.RemoveRecursive(ctx, path, limit); err != nil {
		return keeper(err, path)
	}
	return nil
}

func cmdCreateWithParents(ctx context.Context, e *env) error {
	a, err := parseCreate(e)
	if err != nil {
		return err
	}
	path := a.path
	created, _, err := e.c.CreateWithParents(ctx, path, a.data, a.acl, a.mode)
	if err != nil {
		return keeper(err, path)
	}
	e.eprintln("Created " + created) // on stderr, as create's
	return nil
}
