package zkcli

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/zk"
)

// lsRecursive is ZKUtil.visitSubTreeDFS: the path, then each node's sorted children before
// their own subtrees; nodes deleted meanwhile are skipped.
func (e *env) lsRecursive(ctx context.Context, path string, watch bool) error {
	var err error
	if watch {
		var ch <-chan zk.Event
		_, _, ch, err = e.c.GetW(ctx, path)
		e.s.follow(watchData, path, ch)
	} else {
		_, _, err = e.c.Get(ctx, path)
	}
	if err != nil {
		return keeper(err, path)
	}
	var all []string
	count := 0
	emit := func(p string) {
		count++
		if e.json() {
			all = append(all, p)
		} else {
			e.println(p)
		}
	}
	emit(path)
	prog := &progress{e: e}
	defer prog.done()
	var visit func(p string) error
	visit = func(p string) error {
		var (
			kids []string
			ch   <-chan zk.Event
			err  error
		)
		if watch {
			kids, _, ch, err = e.c.ChildrenW(ctx, p)
			e.s.follow(watchChild, p, ch)
		} else {
			kids, _, err = e.c.Children(ctx, p)
		}
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return keeper(err, p)
		}
		sort.Strings(kids)
		prefix := p + "/"
		if p == "/" {
			prefix = "/"
		}
		for _, k := range kids {
			emit(prefix + k)
		}
		prog.update("ls -R %s: %d nodes", path, count)
		for _, k := range kids {
			if err := visit(prefix + k); err != nil {
				return err
			}
		}
		return nil
	}
	if err := visit(path); err != nil {
		return err
	}
	if e.json() {
		return e.emitJSON(map[string]any{"path": path, "paths": nonNil(all)})
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// createArgs are create's arguments, parsed and checked as ZooKeeperMain's CreateCommand
// does.
type createArgs struct {
	mode       zk.CreateMode
	ttl        int64
	path       string
	data       []byte
	acl        []zk.ACL
	hasT, hasC bool
}

// parseCreate reads create's options and arguments ([-s] [-e] [-c] [-t ttl] path [data]
// [acl]); a command without -t passes none.
func parseCreate(e *env) (*createArgs, error) {
	if len(e.args) < 2 {
		return nil, e.parseErr()
	}
	hasE, hasS, hasC, hasT := e.cl.has("e"), e.cl.has("s"), e.cl.has("c"), e.cl.has("t")
	if hasC && (hasE || hasS) {
		return nil, cliError("-c cannot be combined with -s or -e. Containers cannot be ephemeral or sequential.")
	}
	var ttl int64
	if hasT {
		v, err := strconv.ParseInt(strings.TrimPrefix(e.cl.value("t"), "+"), 10, 64)
		if err != nil {
			return nil, cliError("-t argument must be a long value")
		}
		ttl = v
	}
	if hasT && hasE {
		return nil, cliError("TTLs cannot be used with Ephemeral znodes")
	}
	if hasT && hasC {
		return nil, cliError("TTLs cannot be used with Container znodes")
	}
	var mode zk.CreateMode
	switch {
	case hasE && hasS:
		mode = zk.ModeEphemeralSequential
	case hasE:
		mode = zk.ModeEphemeral
	case hasS && hasT:
		mode = zk.ModePersistentSequentialTTL
	case hasS:
		mode = zk.ModePersistentSequential
	case hasC:
		mode = zk.ModeContainer
	case hasT:
		mode = zk.ModePersistentTTL
	}
	if hasT && (ttl <= 0 || ttl > maxTTL) {
		return nil, cliError("ttl must be positive and cannot be larger than: " + strconv.FormatInt(maxTTL, 10))
	}
	a := &createArgs{mode: mode, ttl: ttl, path: e.args[1], acl: zk.OpenACL(), hasT: hasT, hasC: hasC}
	if len(e.args) > 2 {
		a.data = []byte(e.args[2])
	}
	if len(e.args) > 3 {
		a.acl = e.parseACL(e.args[3])
	}
	// ZooKeeper.create validates a sequential path with a digit appended.
	check := a.path
	if mode.IsSequential() {
		check += "1"
	}
	if err := validatePath(check); err != nil {
		return nil, err
	}
	if len(a.acl) == 0 {
		e.eprintln("KeeperErrorCode = InvalidACL")
		return nil, cliError("Acl is not valid : null")
	}
	return a, nil
}

func cmdCreate(ctx context.Context, e *env) error {
	a, err := parseCreate(e)
	if err != nil {
		return err
	}
	path, data, acl, mode, ttl, hasT, hasC := a.path, a.data, a.acl, a.mode, a.ttl, a.hasT, a.hasC
	var created string
	switch {
	case hasT:
		created, _, err = e.c.CreateTTL(ctx, path, data, acl, mode, msDuration(ttl))
	case hasC:
		created, _, err = e.c.CreateContainer(ctx, path, data, acl)
	default:
		created, err = e.c.Create(ctx, path, data, acl, mode)
	}
	switch {
	case errors.Is(err, zk.ErrEphemeralOnLocalSession):
		e.eprintln("Unable to create ephemeral node on a local session")
	case errors.Is(err, zk.ErrInvalidACL):
		e.eprintln(keeperMessage(jute.ErrInvalidACL, path))
	}
	if err != nil {
		return keeper(err, path)
	}
	e.eprintln("Created " + created)
	return nil
}

// maxTTL is EphemeralType.TTL's largest value (40 bits of milliseconds).
const maxTTL = 1<<40 - 1

// parseACL is AclParser.parse: "scheme:id:perms,..." with complaints on stderr about
// malformed entries and unknown permission letters, which are skipped.
func (e *env) parseACL(s string) []zk.ACL {
	var acl []zk.ACL
	for _, a := range strings.Split(s, ",") {
		first, last := strings.IndexByte(a, ':'), strings.LastIndexByte(a, ':')
		if first == -1 || first == last {
			e.eprintln(a + " does not have the form scheme:id:perm")
			continue
		}
		var perms int32
		for _, c := range a[last+1:] {
			switch c {
			case 'r':
				perms |= zk.PermRead
			case 'w':
				perms |= zk.PermWrite
			case 'c':
				perms |= zk.PermCreate
			case 'd':
				perms |= zk.PermDelete
			case 'a':
				perms |= zk.PermAdmin
			default:
				e.eprintln("Unknown perm type: " + string(c))
			}
		}
		acl = append(acl, zk.ACL{Perms: perms, ID: zk.ID{Scheme: a[:first], ID: a[first+1 : last]}})
	}
	return acl
}

// permString is ZKUtil.getPermString.
func permString(p int32) string {
	var b strings.Builder
	for _, x := range []struct {
		bit int32
		c   byte
	}{{zk.PermCreate, 'c'}, {zk.PermDelete, 'd'}, {zk.PermRead, 'r'}, {zk.PermWrite, 'w'}, {zk.PermAdmin, 'a'}} {
		if p&x.bit != 0 {
			b.WriteByte(x.c)
		}
	}
	return b.String()
}

// csvString is jute's Utils.toCSVString, which Id.toString uses.
func csvString(s string) string {
	r := strings.NewReplacer("%", "%25", "\x00", "%00", "\n", "%0A", "\r", "%0D", ",", "%2C", "}", "%7D")
	return "'" + r.Replace(s)
}

func cmdDelete(ctx context.Context, e *env) error {
	if len(e.args) < 2 {
		return e.parseErr()
	}
	if err := e.compat("'delete path [version]' has been deprecated. Please use 'delete [-v version] path' instead.", false); err != nil {
		return err
	}
	path := e.args[1]
	v, err := e.version()
	if err != nil {
		return err
	}
	if err := validatePath(path); err != nil {
		return err
	}
	if err := e.c.Delete(ctx, path, v); err != nil {
		return keeper(err, path)
	}
	return nil
}

func cmdDeleteAll(ctx context.Context, e *env) error {
	if len(e.args) < 2 {
		return e.parseErr()
	}
	batch := 1000
	if e.cl.has("b") {
		v, err := strconv.ParseInt(strings.TrimPrefix(e.cl.value("b"), "+"), 10, 32)
		if err != nil {
			return cliError("-b argument must be an int value")
		}
		batch = int(v)
	}
	path := e.args[1]
	if err := validatePath(path); err != nil {
		return err
	}
	prog := &progress{e: e}
	defer prog.done()
	// ZKUtil.listSubTreeBFS: the tree in breadth-first order, deleted from the end.
	tree := []string{path}
	for i := 0; i < len(tree); i++ {
		kids, _, err := e.c.Children(ctx, tree[i])
		if err != nil {
			return keeper(err, tree[i])
		}
		prefix := tree[i] + "/"
		if tree[i] == "/" {
			prefix = "/"
		}
		for _, k := range kids {
			tree = append(tree, prefix+k)
		}
		prog.update("deleteall %s: %d nodes found", path, len(tree))
	}
	ok, deleted := true, 0
	var ops []zk.Op
	for i := len(tree) - 1; i >= 0; i-- {
		ops = append(ops, &zk.DeleteOp{Path: tree[i], Version: -1})
		if len(ops) == batch || i == 0 {
			if _, err := e.c.Multi(ctx, ops...); err != nil {
				ok = false
				break // fail fast, as deleteInBatch does
			}
			deleted += len(ops)
			ops = nil
			prog.update("deleteall %s: %d of %d nodes deleted", path, deleted, len(tree))
		}
	}
	if !ok {
		e.eprintln("Failed to delete some node(s) in the subtree!")
	}
	return nil
}

func cmdSet(ctx context.Context, e *env) error {
	if len(e.args) < 3 {
		return e.parseErr()
	}
	path := e.args[1]
	data := []byte(e.args[2])
	v, err := e.version()
	if err != nil {
		return err
	}
	if err := validatePath(path); err != nil {
		return err
	}
	st, err := e.c.Set(ctx, path, data, v)
	if err != nil {
		return keeper(err, path)
	}
	if e.cl.has("s") {
		e.printStat(st)
	}
	return nil
}

func cmdGet(ctx context.Context, e *env) error {
	if len(e.args) < 2 {
		return e.parseErr()
	}
	if err := e.compat("'get path [watch]' has been deprecated. Please use 'get [-s] [-w] path' instead.", true); err != nil {
		return err
	}
	path := e.args[1]
	if err := validatePath(path); err != nil {
		return err
	}
	var (
		data []byte
		st   *zk.Stat
		ch   <-chan zk.Event
		err  error
	)
	if e.cl.has("w") {
		data, st, ch, err = e.c.GetW(ctx, path)
	} else {
		data, st, err = e.c.Get(ctx, path)
	}
	if err != nil {
		return keeper(err, path)
	}
	e.s.follow(watchData, path, ch)
	if e.json() {
		doc := map[string]any{"path": path}
		switch {
		case data == nil:
			doc["data"] = nil
		case utf8.Valid(data):
			doc["data"] = string(data)
		default:
			doc["dataBase64"] = base64.StdEncoding.EncodeToString(data)
		}
		if e.cl.has("s") {
			doc["stat"] = statJSON(st)
		}
		return e.emitJSON(doc)
	}
	if data == nil {
		e.println("null")
	} else {
		e.println(javaString(data))
	}
	if e.cl.has("s") {
		e.printStat(st)
	}
	return nil
}

// javaString is new String(data, UTF_8): invalid bytes become U+FFFD.
func javaString(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }

func cmdStat(ctx context.Context, e *env) error {
	if len(e.args) < 2 {
		return e.parseErr()
	}
	if err := e.compat("'stat path [watch]' has been deprecated. Please use 'stat [-w] path' instead.", true); err != nil {
		return err
	}
	path := e.args[1]
	if err := validatePath(path); err != nil {
		return err
	}
	var (
		ok  bool
		st  *zk.Stat
		ch  <-chan zk.Event
		err error
	)
	if e.cl.has("w") {
		ok, st, ch, err = e.c.ExistsW(ctx, path)
	} else {
		ok, st, err = e.c.Exists(ctx, path)
	}
	if err != nil {
		return keeper(err, path)
	}
	e.s.follow(watchExist, path, ch)
	if !ok {
		return keeper(jute.ErrNoNode, path)
	}
	if e.json() {
		return e.emitJSON(map[string]any{"path": path, "stat": statJSON(st)})
	}
	e.printStat(st)
	return nil
}

func cmdGetACL(ctx context.Context, e *env) error {
	if len(e.args) < 2 {
		return e.parseErr()
	}
	path := e.args[1]
	if err := validatePath(path); err != nil {
		return err
	}
	acl, st, err := e.c.GetACL(ctx, path)
	if err != nil {
		return keeper(err, path)
	}
	if e.json() {
		type entry struct {
			Scheme string `json:"scheme"`
			ID     string `json:"id"`
			Perms  string `json:"perms"`
		}
		list := []entry{}
		for _, a := range acl {
			list = append(list, entry{a.ID.Scheme, a.ID.ID, permString(a.Perms)})
		}
		doc := map[string]any{"path": path, "acl": list}
		if e.cl.has("s") {
			doc["stat"] = statJSON(st)
		}
		return e.emitJSON(doc)
	}
	for _, a := range acl {
		e.printf("%s,%s\n: %s\n", csvString(a.ID.Scheme), csvString(a.ID.ID), permString(a.Perms))
	}
	if e.cl.has("s") {
		e.printStat(st)
	}
	return nil
}

func cmdSetACL(ctx context.Context, e *env) error {
	if len(e.args) < 3 {
		return e.parseErr()
	}
	path := e.args[1]
	acl := e.parseACL(e.args[2])
	v, err := e.version()
	if err != nil {
		return err
	}
	if err := validatePath(path); err != nil {
		return err
	}
	if len(acl) == 0 {
		return cliError("Acl is not valid : " + path)
	}
	if e.cl.has("R") {
		// visitSubTreeDFS; a node that fails prints the error with no newline, as Java does.
		if _, _, err := e.c.Get(ctx, path); err != nil {
			return keeper(err, path)
		}
		var visit func(p string)
		set := func(p string) {
			if _, err := e.c.SetACL(ctx, p, acl, v); err != nil {
				var code jute.Code
				if errors.As(err, &code) {
					fmt.Fprint(e.s.out, keeperMessage(code, p))
				} else {
					fmt.Fprint(e.s.out, err.Error())
				}
			}
		}
		set(path)
		visit = func(p string) {
			kids, _, err := e.c.Children(ctx, p)
			if err != nil {
				return
			}
			sort.Strings(kids)
			prefix := p + "/"
			if p == "/" {
				prefix = "/"
			}
			for _, k := range kids {
				set(prefix + k)
			}
			for _, k := range kids {
				visit(prefix + k)
			}
		}
		visit(path)
		return nil
	}
	st, err := e.c.SetACL(ctx, path, acl, v)
	if err != nil {
		return keeper(err, path)
	}
	if e.cl.has("s") {
		e.printStat(st)
	}
	return nil
}

func cmdSync(ctx context.Context, e *env) error {
	if len(e.args) < 2 {
		return e.parseErr()
	}
	path := e.args[1]
	if err := validatePath(path); err != nil {
		return err
	}
	err := e.c.Sync(ctx, path)
	var code jute.Code
	switch {
	case err == nil:
		e.println("Sync is OK")
	case errors.As(err, &code):
		e.println("Sync has failed. rc=" + strconv.Itoa(int(code)))
	default:
		return cliError(err.Error())
	}
	return nil
}

func cmdAddAuth(ctx context.Context, e *env) error {
	if len(e.args) < 2 {
		return e.parseErr()
	}
	var auth []byte
	if len(e.args) >= 3 {
		auth = []byte(e.args[2])
	}
	// Java's addAuthInfo does not wait for the answer: a refusal shows as the AuthFailed
	// event, which the event printer prints.
	_ = e.c.AddAuth(ctx, e.args[1], auth)
	return nil
}

func cmdAddWatch(ctx context.Context, e *env) error {
	if len(e.args) != 2 {
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
	w, err := e.c.AddWatch(ctx, path, mode)
	if err != nil {
		return keeper(err, path)
	}
	e.s.follow(watchKindOf(mode), path, w.Events())
	return nil
}

// watchMode is addWatch's -m: PERSISTENT_RECURSIVE unless it says PERSISTENT.
func (e *env) watchMode() (zk.AddWatchMode, error) {
	if !e.cl.has("m") {
		return zk.AddWatchPersistentRecursive, nil
	}
	switch strings.ToUpper(e.cl.value("m")) {
	case "PERSISTENT":
		return zk.AddWatchPersistent, nil
	case "PERSISTENT_RECURSIVE":
		return zk.AddWatchPersistentRecursive, nil
	}
	return 0, e.parseErr()
}

// watchKindOf is the session's kind of watch for an addWatch mode.
func watchKindOf(mode zk.AddWatchMode) int {
	if mode == zk.AddWatchPersistent {
		return watchPersistent
	}
	return watchRecursive
}

func cmdRemoveWatches(ctx context.Context, e *env) error {
	if len(e.args) < 2 {
		return e.parseErr()
	}
	path := e.args[1]
	t := zk.WatcherAny
	switch {
	case e.cl.has("c"):
		t = zk.WatcherChildren
	case e.cl.has("d"):
		t = zk.WatcherData
	}
	if err := validatePath(path); err != nil {
		return err
	}
	// -l (remove locally while disconnected) is accepted; the Go client always asks the
	// server, which is the same while connected.
	if err := e.c.RemoveWatches(ctx, path, t); err != nil {
		return keeper(err, path)
	}
	return nil
}

func cmdGetEphemerals(ctx context.Context, e *env) error {
	prefix := "/"
	if len(e.args) >= 2 {
		prefix = e.args[1]
		if err := validatePath(prefix); err != nil {
			return err
		}
	}
	list, err := e.c.Ephemerals(ctx, prefix)
	if err != nil {
		return keeper(err, prefix)
	}
	if e.json() {
		return e.emitJSON(map[string]any{"path": prefix, "ephemerals": nonNil(list)})
	}
	e.println("[" + strings.Join(list, ", ") + "]")
	return nil
}

func cmdGetAllChildrenNumber(ctx context.Context, e *env) error {
	if len(e.args) < 2 {
		return e.parseErr()
	}
	path := e.args[1]
	if err := validatePath(path); err != nil {
		return err
	}
	n, err := e.c.AllChildrenNumber(ctx, path)
	if err != nil {
		return keeper(err, path)
	}
	if e.json() {
		return e.emitJSON(map[string]any{"path": path, "count": n})
	}
	e.println(n)
	return nil
}

func cmdWhoAmI(ctx context.Context, e *env) error {
	infos, err := e.c.WhoAmI(ctx)
	if err != nil {
		return keeper(err, "")
	}
	if e.json() {
		type id struct {
			Scheme string `json:"scheme"`
			User   string `json:"user"`
		}
		list := []id{}
		for _, i := range infos {
			list = append(list, id{i.AuthScheme, i.User})
		}
		return e.emitJSON(map[string]any{"identities": list})
	}
	e.println("Auth scheme: User")
	for _, i := range infos {
		e.println(i.AuthScheme + ": " + i.User)
	}
	return nil
}

func cmdConfig(ctx context.Context, e *env) error {
	var (
		data []byte
		st   *zk.Stat
		ch   <-chan zk.Event
		err  error
	)
	if e.cl.has("w") {
		data, st, ch, err = e.c.GetConfigW(ctx)
	} else {
		data, st, err = e.c.GetConfig(ctx)
	}
	if err != nil {
		return keeper(err, "/zookeeper/config")
	}
	e.s.follow(watchData, "/zookeeper/config", ch)
	text := "null"
	if data != nil {
		text = javaString(data)
	}
	if e.json() {
		doc := map[string]any{"config": string(data), "client": clientConfig(string(data))}
		if e.cl.has("s") {
			doc["stat"] = statJSON(st)
		}
		return e.emitJSON(doc)
	}
	if e.cl.has("c") {
		text = clientConfig(string(data))
	}
	e.println(text)
	if e.cl.has("s") {
		e.printStat(st)
	}
	return nil
}

// clientConfig is ConfigUtils.getClientConfigStr: the version, a space, and the client
// addresses of the server.N lines. Java walks a Hashtable, in no useful order; zkcli sorts
// the lines by server id.
func clientConfig(cfg string) string {
	version := ""
	type srv struct {
		id   int
		addr string
	}
	var list []srv
	for _, line := range strings.Split(cfg, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if k == "version" {
			version = v
		}
		idStr, isServer := strings.CutPrefix(k, "server.")
		if !isServer {
			continue
		}
		id, _ := strconv.Atoi(idStr)
		addr := ""
		if _, client, ok := strings.Cut(v, ";"); ok {
			addr = client
			if !strings.Contains(addr, ":") {
				addr = "0.0.0.0:" + addr
			}
		}
		list = append(list, srv{id, addr})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].id < list[j].id })
	var addrs []string
	for _, s := range list {
		addrs = append(addrs, s.addr)
	}
	return version + " " + strings.Join(addrs, ",")
}

// cmdCapabilities prints the connected server's capabilities (zkd's capability node): what
// it is, and the extensions it enables; "none" on Apache ZooKeeper or a zkd without any.
func cmdCapabilities(ctx context.Context, e *env) error {
	caps, err := e.c.Capabilities(ctx)
	if err != nil {
		return keeper(err, "")
	}
	if e.json() {
		names := []string{}
		for _, n := range caps.Extensions {
			names = append(names, string(n))
		}
		return e.emitJSON(map[string]any{"version": caps.Version, "server": caps.Server, "extensions": names})
	}
	server := caps.Server
	if caps.Version == 0 {
		server = "(no capability node: Apache ZooKeeper, or zkd with no extension enabled)"
	}
	e.println("server: " + server)
	if len(caps.Extensions) == 0 {
		e.println("extensions: none")
		return nil
	}
	names := make([]string, len(caps.Extensions))
	for i, n := range caps.Extensions {
		names[i] = string(n)
	}
	e.println("extensions: " + strings.Join(names, ","))
	return nil
}
