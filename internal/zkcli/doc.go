// Package zkcli is zkcli's command engine: ZooKeeper's zkCli.sh (ZooKeeperMain and its
// org.apache.zookeeper.cli commands) on zkd's Go client. It owns parsing a command line as
// zkCli.sh does (its word splitting and quoting, commons-cli's option rules), running the
// command on a *zk.Conn, and printing exactly what zkCli.sh 3.8 prints on stdout and stderr:
// results, the Stat printout, "Created /x" and the error texts of CliWrapperException
// ("Node does not exist: /x", "Node already exists: /x", ...), usage lines, WATCHER:: events;
// and returning its exit codes (0, 1 for a failed command, 127 for an unknown one).
//
// Session.Run runs one line (history, redo, printwatches, connect, close and quit included)
// and returns the exit code; a REPL calls it for each line, with CommandNames, Children,
// Host, State and CommandCount for completion and the prompt. Main is the whole zkcli
// command line: flags, the connection, then one command from the arguments or every line of
// stdin (zkCli.sh's non-interactive mode, banner lines included).
//
// Commands: ls [-s] [-w] [-R], create [-s] [-e] [-c] [-t ttl] path [data] [acl], get [-s]
// [-w], set [-s] [-v version], delete [-v version], deleteall [-b batch size], stat [-w],
// getAcl [-s], setAcl [-s] [-v version] [-R], addauth, addWatch [-m mode], removewatches
// [-c|-d|-a] [-l], sync, getEphemerals, getAllChildrenNumber, whoami, config [-c] [-w] [-s],
// listquota, setquota -n|-b|-N|-B, delquota [-n|-b|-N|-B], reconfig [-s] [-v version]
// [-file path | -members list | -add list -remove ids], version, history, redo,
// printwatches, connect, close, quit.
//
// # Interactive shell
//
// With no command and a terminal on stdin and stdout, Main runs zkCli.sh's interactive
// loop on a line editor (github.com/chzyer/readline): ZooKeeperMain.getPrompt's prompt,
// history in $HOME/.zkcli_history (bounded), TAB completion of command names (first word)
// and znode paths (a word starting with '/', from its parent's children, cached briefly),
// Ctrl-C dropping the line and Ctrl-D ending the shell. The session's output goes through
// the editor, so a watch event printed while a line is edited lands above the prompt, which
// is redrawn with the line below it. It prints "JLine support is enabled" as zkCli.sh does
// with JLine.
//
// # Differences from zkCli.sh
//
//   - Output follows zkCli.sh 3.8 (the reference the differential test runs): no get -b/-x,
//     set -b or removewatches -p/-r, and WatchedEvent lines without 3.9's zxid.
//   - Where Java lets a NumberFormatException escape (redo x, -v x) and the JVM dies with a
//     stack trace, zkcli prints java.lang.NumberFormatException's message and goes on.
//   - With no server to connect to, zkCli.sh's client keeps retrying in the background and
//     fails each command with ConnectionLoss at its next failed attempt. zkcli gives up the
//     connect once every server of the list has refused (or failed) a dial, says why in one
//     line on stderr, and fails the command with zkCli.sh's "KeeperErrorCode =
//     ConnectionLoss for <path>" and exit 1; each later command tries once more. (zkCli.sh
//     fails at the first refused server even when another one of the list is up.) With
//     -waitforconnection zkcli waits out the timeout, prints the Closed event and exits 1,
//     as zkCli.sh does (without its stack trace).
//   - --help, -h and --version print and exit 0 without connecting; zkCli.sh ignores
//     them and connects to localhost:2181.
//   - removewatches -l is accepted; the Go client always removes watches on the server.
//   - config -c lists the servers by id (Java walks a hash table).
//   - version prints "ZooKeeper CLI version: zkcli " and zkcli's build (internal/buildinfo),
//     and needs no server.
//   - reconfig -file reports a configuration it cannot parse with zkd's message after
//     "Error processing <path>", not Java's exception text.
//   - Completion offers command names only for the first word (JLine's completer offers them
//     for any word not starting with '/'), and puts no space after a completed path.
//
// # Watch events
//
// Java's shell sets every watch with its one default watcher, and the Java client delivers a
// notification once to each distinct watcher, so a change that fires several of the
// session's watches (a get -w and a stat -w, or a one-time watch and a persistent one from
// addWatch on the same node or an ancestor) prints one event. The Go client has a channel per
// watch; zkcli prints a notification from the first of them and drops it from the others.
//
// # --json
//
// With Options.JSON (zkcli --json) the read commands print one JSON document on one line
// instead of zkCli.sh's text, and stdout carries nothing else, so it can be piped to jq:
// whatever zkCli.sh prints on stdout as text (the Connecting/Welcome banner, WATCHER::
// events, "Not connected", sync's "Sync is OK", history, ...) goes to stderr with the
// errors. A Stat is
// {"czxid","mzxid","pzxid","ctime","mtime","version","cversion","aversion",
// "ephemeralOwner","dataLength","numChildren"} (numbers; times in ms since the epoch).
//
//	ls                    {"path": p, "children": [names, sorted], "stat": Stat (with -s)}
//	ls -R                 {"path": p, "paths": [every path, in zkCli.sh's order]}
//	get                   {"path": p, "data": string or null, "stat": Stat (with -s)};
//	                      data that is not UTF-8 is "dataBase64" instead of "data"
//	stat                  {"path": p, "stat": Stat}
//	getAcl                {"path": p, "acl": [{"scheme", "id", "perms": "cdrwa"}], "stat": Stat (with -s)}
//	config                {"config": text, "client": what config -c prints, "stat": Stat (with -s)}
//	listquota             {"path": p, "quota": {key: n}, "stats": {key: n}} (keys count, bytes,
//	                      countHardLimit, byteHardLimit as the quota node holds them)
//	getEphemerals         {"path": prefix, "ephemerals": [paths]}
//	getAllChildrenNumber  {"path": p, "count": n}
//	whoami                {"identities": [{"scheme", "user"}]}
//
// # Security
//
// As the Java client, zkcli reads its TLS and SASL settings from the -client-configuration
// file and from -Dkey=value (on the line, or in CLIENT_JVMFLAGS / JVMFLAGS as zkCli.sh passes
// them to java): zookeeper.client.secure=true with zookeeper.ssl.keyStore.* and
// zookeeper.ssl.trustStore.* (PEM, PKCS12, JKS) is TLS; java.security.auth.login.config
// names a JAAS file whose Client section (zookeeper.sasl.clientconfig) is DIGEST-MD5
// (DigestLoginModule) or Kerberos (Krb5LoginModule with useKeyTab and keyTab; krb5.conf from
// java.security.krb5.conf, KRB5_CONFIG or /etc/krb5.conf; service zookeeper.sasl.client.username),
// unless zookeeper.sasl.client=false.
//
// # Progress
//
// With Options.Progress set (zkcli sets it when stderr is a terminal) deleteall and ls -R
// rewrite one progress line there while they work, and erase it when done; scripts never
// see it.
package zkcli
