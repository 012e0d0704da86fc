package zkcli

import (
	"context"

	"github.com/zkd-io/zkd/zk"
)

// createSeq64 is zkd's own (zkdCommands), for the wide extension's 64-bit sequential
// modes: create's -s stays ZooKeeper's 10-digit counter, and create's options stay
// zkCli.sh's.
func init() {
	c := &command{"createSeq64", "[-e] path [data] [acl]", opts(flag("e", "ephemeral")), cmdCreateSeq64}
	commands[c.name] = c
	zkdCommands[c.name] = true
}

func cmdCreateSeq64(ctx context.Context, e *env) error {
	if len(e.args) < 2 {
		return e.parseErr()
	}
	mode := zk.ModePersistentSequential64
	if e.cl.has("e") {
		mode = zk.ModeEphemeralSequential64
	}
	path := e.args[1]
	// As create checks a sequential path: with a digit appended.
	if err := validatePath(path + "1"); err != nil {
		return err
	}
	var data []byte
	if len(e.args) > 2 {
		data = []byte(e.args[2])
	}
	acl := zk.OpenACL()
	if len(e.args) > 3 {
		acl = e.parseACL(e.args[3])
	}
	if len(acl) == 0 {
		return cliError("Acl is not valid : null")
	}
	created, err := e.c.Create(ctx, path, data, acl, mode)
	if err != nil {
		return keeper(err, path)
	}
	e.eprintln("Created " + created) // on stderr, as create's
	return nil
}
