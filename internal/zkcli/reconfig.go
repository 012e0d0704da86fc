package zkcli

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/zkd-io/zkd/internal/config"
	"github.com/zkd-io/zkd/zk"
)

func init() {
	commands["reconfig"] = &command{"reconfig",
		"[-s] [-v version] [[-file path] | [-members serverID=host:port1:port2;port3[,...]*]] | " +
			"[-add serverId=host:port1:port2;port3[,...]]* [-remove serverId[,...]*]",
		opts(flag("s", "stats"), valued("v", "required current config version"),
			valued("file", "path of config file to parse for membership"),
			valued("members", "comma-separated list of config strings for non-incremental reconfig"),
			valued("add", "comma-separated list of config strings for new servers"),
			valued("remove", "comma-separated list of server IDs to remove")),
		cmdReconfig}
}

// reconfigArgs is what ReconfigCommand.parse makes of a line: an incremental change
// (joining and leaving, each nil when not given) or a whole new membership (members), and
// the configuration version it applies to (-1: any).
type reconfigArgs struct {
	joining, leaving, members *string
	version                   int64
}

// parseReconfig is ReconfigCommand.parse, with its checks in Java's order and its messages.
func parseReconfig(e *env) (*reconfigArgs, error) {
	cl := e.cl
	if !cl.has("file") && !cl.has("members") && !cl.has("add") && !cl.has("remove") {
		return nil, e.parseErr()
	}
	r := &reconfigArgs{version: -1}
	if cl.has("v") {
		// The version is hex, as /zookeeper/config's version line prints it.
		v, err := strconv.ParseInt(cl.value("v"), 16, 64)
		if err != nil {
			return nil, cliError("-v must be followed by a long (configuration version)")
		}
		r.version = v
	}
	if (cl.has("file") || cl.has("members")) && (cl.has("add") || cl.has("remove")) {
		return nil, cliError("Can't use -file or -members together with -add or -remove (mixing incremental and non-incremental modes is not allowed)")
	}
	if cl.has("file") && cl.has("members") {
		return nil, cliError("Can't use -file and -members together (conflicting non-incremental modes)")
	}
	lower := func(name string) *string {
		if !cl.has(name) {
			return nil
		}
		v := strings.ToLower(cl.value(name))
		return &v
	}
	r.joining, r.leaving, r.members = lower("add"), lower("remove"), lower("members")
	if cl.has("file") {
		path := cl.value("file")
		text, err := membersFromFile(path)
		if err != nil {
			// Java concatenates the path and the exception's message without a separator.
			return nil, cliError("Error processing " + path + err.Error())
		}
		r.members = &text
	}
	return r, nil
}

// membersFromFile reads a dynamic configuration file as ReconfigCommand does: loaded as
// java.util.Properties (ISO-8859-1), checked by parseDynamicConfig, and sent as the
// QuorumVerifier's text. The error's text is what Java's exception message would say.
func membersFromFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			// FileNotFoundException: "path (No such file or directory)", strerror capitalised.
			msg := pe.Err.Error()
			if msg != "" {
				msg = strings.ToUpper(msg[:1]) + msg[1:]
			}
			return "", errors.New(path + " (" + msg + ")")
		}
		return "", err
	}
	latin1 := make([]rune, len(b))
	for i, c := range b {
		latin1[i] = rune(c)
	}
	d, err := config.ParseDynamic([]byte(string(latin1)))
	if err != nil {
		var de *config.DynamicError
		if errors.As(err, &de) {
			return "", errors.New(de.Msg)
		}
		return "", err
	}
	return d.Text(), nil
}

// cmdReconfig is ReconfigCommand.exec: the new configuration, then its Stat with -s.
func cmdReconfig(ctx context.Context, e *env) error {
	r, err := parseReconfig(e)
	if err != nil {
		return err
	}
	var (
		data []byte
		st   *zk.Stat
	)
	if r.members != nil {
		data, st, err = e.c.Reconfig(ctx, []string{*r.members}, r.version)
	} else {
		data, st, err = e.c.IncrementalReconfig(ctx, list(r.joining), list(r.leaving), r.version)
	}
	if err != nil {
		// ZooKeeperAdmin throws the KeeperException with an empty path.
		return keeper(err, "")
	}
	e.println("Committed new configuration:\n" + javaString(data))
	if e.cl.has("s") {
		e.printStat(st)
	}
	return nil
}

// list is the client's form of an optional comma-separated list: nil stays null on the wire.
func list(s *string) []string {
	if s == nil {
		return nil
	}
	return []string{*s}
}
