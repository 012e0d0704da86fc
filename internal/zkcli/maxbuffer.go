package zkcli

import (
	"context"
	"strconv"
)

// setMaxBuffer is the large-replies extension's command (zkd's own, out of the usage
// text): the session's connection asks for a larger frame limit, and the client's own read
// limit is raised with it, so the shell's next reads of big nodes and listings are served.
// It prints the limit granted.
func init() {
	c := &command{"setMaxBuffer", "bytes", opts(), cmdSetMaxBuffer}
	commands[c.name] = c
	zkdCommands[c.name] = true
}

func cmdSetMaxBuffer(ctx context.Context, e *env) error {
	if len(e.args) < 2 {
		return e.parseErr()
	}
	n, err := strconv.Atoi(e.args[1])
	if err != nil || n <= 0 {
		return cliError("bytes must be a positive int value")
	}
	got, err := e.c.SetMaxBuffer(ctx, n)
	if err != nil {
		return keeper(err, "")
	}
	e.println("granted " + strconv.Itoa(got) + " bytes")
	return nil
}
