// Package admin owns the text of ZooKeeper's four-letter-word commands (ruok, srvr, stat,
// mntr, cons, dump, ...): which 4-byte words are commands, whether the whitelist lets one
// run, and the exact bytes each one answers, as Apache ZooKeeper 3.8.0 writes them. It also
// owns the AdminServer's commands (json.go): their names and aliases and the JSON each
// answers, built from the same structs.
// Monitoring tools (zkServer.sh, Curator, go-zk's FLW helpers, exporters) parse these
// answers, so line order, tabs and number formats follow ZooKeeper byte for byte.
//
// It also states what the observer surfaces may ask the server (Backend, backend.go): plain
// values, copied on the server's core goroutine. The subpackages run the surfaces on it
// (dispatch: the commands).
//
// The package is pure: the server gathers numbers into the structs defined here and calls
// the render functions; nothing here reads clocks, sockets or files. Where ZooKeeper's own
// order is a Java hash order that cannot be reproduced (sessions in an expiry bucket,
// ephemerals per session), the renderers keep the caller's order; where ZooKeeper sorts
// (expiry buckets by time) they sort too.
package admin

import (
	"slices"
	"strconv"
	"strings"
)

// The commands Apache ZooKeeper 3.8.0 knows (FourLetterCommands.cmd2String), minus the
// telnet close sequence, which is not a command (see Lookup).
var commands = []string{
	"conf", "cons", "crst", "dirs", "dump", "envi", "gtmk", "hash", "isro", "mntr",
	"ruok", "srst", "srvr", "stat", "stmk", "wchc", "wchp", "wchs",
}

// TelnetClose is the length prefix the telnet program sends when it closes (IAC IP IAC DO,
// 0xfff4fffd). ZooKeeper lists it among the commands only to keep its logs quiet; as a frame
// length it is negative, so the connection is dropped either way. Lookup does not report it.
const TelnetClose int32 = -720899

// SetTraceMaskArgLen is how many bytes follow "stmk": a big-endian int64 trace mask.
const SetTraceMaskArgLen = 8

// DefaultTraceMask is ZooTrace's initial text trace mask, the answer of gtmk on a fresh server.
const DefaultTraceMask int64 = 306

// Commands returns the names of all known four-letter words, sorted.
func Commands() []string { return slices.Clone(commands) }

// Code is the length-prefix value a client sends for cmd: its four ASCII bytes read as a
// big-endian int32.
func Code(cmd string) int32 {
	var b [4]byte
	copy(b[:], cmd)
	return int32(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]))
}

// Lookup reports whether n, the first 4 bytes of a fresh connection read as a length prefix,
// is a four-letter word, and which. The server answers a command with text and closes the
// connection; any other value is an ordinary frame length. An allowed "stmk" carries
// SetTraceMaskArgLen more bytes, which ZooKeeper takes only from what has already arrived:
// when they are short it closes without an answer; a refused one is answered unread.
func Lookup(n int32) (cmd string, ok bool) {
	for _, c := range commands {
		if Code(c) == n {
			return c, true
		}
	}
	return "", false
}

// Allowed reports whether 4lw.commands.whitelist lets cmd run. As in ZooKeeper, "srvr" is
// always allowed (zkServer.sh needs it), "isro" is allowed when read-only mode is enabled
// (readonlymode.enabled), and an entry "*" allows every known command. Entries are trimmed.
func Allowed(cmd string, whitelist []string, readOnlyMode bool) bool {
	if cmd == "srvr" || (cmd == "isro" && readOnlyMode) {
		return true
	}
	known := slices.Contains(commands, cmd)
	for _, w := range whitelist {
		w = strings.TrimSpace(w)
		if w == "*" && known {
			return true
		}
		if w == cmd {
			return true
		}
	}
	return false
}

// NotInWhitelist is the answer to a known command that the whitelist does not allow.
func NotInWhitelist(cmd string) string {
	return cmd + " is not executed because it is not in the whitelist.\n"
}

// NotServingMsg is what most commands print (with a newline) while the server is not
// serving requests (not yet started, shutting down, or a quorum member without a quorum).
const NotServingMsg = "This ZooKeeper instance is not currently serving requests"

// NotServing returns the answer of cmd while the server is not serving. ok is false for the
// commands that do not look at the server and answer normally anyway (ruok, envi, gtmk,
// stmk). The differences are ZooKeeper's: isro prints "null", hash omits the newline.
func NotServing(cmd string) (text string, ok bool) {
	switch cmd {
	case "ruok", "envi", "gtmk", "stmk":
		return "", false
	case "isro":
		return "null", true
	case "hash":
		return NotServingMsg, true
	}
	return NotServingMsg + "\n", true
}

// Fixed answers.
const (
	Ruok = "imok" // no newline
	Crst = "Connection stats reset.\n"
	Srst = "Server stats reset.\n"
)

// Isro is the answer of isro: "ro" on a read-only server, "rw" otherwise, no newline.
func Isro(readOnly bool) string {
	if readOnly {
		return "ro"
	}
	return "rw"
}

// Gtmk is the answer of gtmk: the current trace mask in decimal, no newline.
func Gtmk(mask int64) string { return strconv.FormatInt(mask, 10) }

// Stmk is the answer of stmk: the mask just set, in decimal, no newline.
func Stmk(mask int64) string { return strconv.FormatInt(mask, 10) }

// Dirs is the answer of dirs: the byte sizes of the snapshot and log directories.
func Dirs(dataDirSize, logDirSize int64) string {
	return "datadir_size: " + strconv.FormatInt(dataDirSize, 10) + "\n" +
		"logdir_size: " + strconv.FormatInt(logDirSize, 10) + "\n"
}

// KV is one key=value line of conf or envi.
type KV struct{ Key, Value string }

// Conf is the answer of conf: one "key=value" line per setting, in the given order. The
// standalone 3.8 list and its order are produced by config.Config.Pairs.
func Conf(settings []KV) string {
	var b strings.Builder
	for _, kv := range settings {
		b.WriteString(kv.Key)
		b.WriteByte('=')
		b.WriteString(kv.Value)
		b.WriteByte('\n')
	}
	return b.String()
}

// ZxidDigest is one entry of the data tree's digest history.
type ZxidDigest struct {
	Zxid   int64
	Digest int64
}

// Hash is the answer of hash: "<zxid hex>: <digest>" per recorded digest, oldest first.
// ZooKeeper 3.8.0 answers nothing when it has recorded no digests.
func Hash(history []ZxidDigest) string {
	var b strings.Builder
	for _, d := range history {
		b.WriteString(hex(d.Zxid))
		b.WriteString(": ")
		b.WriteString(strconv.FormatInt(d.Digest, 10))
		b.WriteByte('\n')
	}
	return b.String()
}
