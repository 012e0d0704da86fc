package zkcli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/zkd-io/zkd/zk"
)

// Quota nodes, as ZooKeeper's Quotas class names them.
const (
	quotaRoot = "/zookeeper/quota"
	limitNode = "zookeeper_limits"
	statNode  = "zookeeper_stats"
)

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// statsTrack is ZooKeeper's StatsTrack: "count=N,bytes=N" and, when other keys are set,
// "=;key=value" pairs sorted by key (the extra '=' keeps old parsers reading the first two).
type statsTrack map[string]int64

func parseStatsTrack(s string) statsTrack {
	st := statsTrack{}
	for _, kv := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' }) {
		parts := strings.Split(kv, "=")
		v := int64(-1)
		if len(parts) > 1 && parts[1] != "" {
			v, _ = strconv.ParseInt(parts[1], 10, 64)
		}
		st[parts[0]] = v
	}
	return st
}

func (st statsTrack) get(k string) int64 {
	if v, ok := st[k]; ok {
		return v
	}
	return -1
}

func (st statsTrack) String() string {
	s := fmt.Sprintf("count=%d,bytes=%d", st.get("count"), st.get("bytes"))
	var keys []string
	for k := range st {
		if k != "count" && k != "bytes" {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		sort.Strings(keys)
		s += "="
		for _, k := range keys {
			s += ";" + k + "=" + strconv.FormatInt(st[k], 10)
		}
	}
	return s
}

func (st statsTrack) json() map[string]int64 {
	m := map[string]int64{}
	for k, v := range st {
		m[k] = v
	}
	return m
}

func cmdListQuota(ctx context.Context, e *env) error {
	if len(e.args) < 2 {
		return e.parseErr()
	}
	path := e.args[1]
	limit := quotaRoot + path + "/" + limitNode
	e.eprintln("absolute path is " + limit)
	if err := validatePath(limit); err != nil {
		return err
	}
	var tracks []statsTrack
	for _, p := range []string{limit, quotaRoot + path + "/" + statNode} {
		data, _, err := e.c.Get(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			e.eprintln("quota for " + path + " does not exist.")
			return nil
		}
		if err != nil {
			return keeper(err, p)
		}
		tracks = append(tracks, parseStatsTrack(string(data)))
	}
	if e.json() {
		return e.emitJSON(map[string]any{"path": path, "quota": tracks[0].json(), "stats": tracks[1].json()})
	}
	e.println("Output quota for " + path + " " + tracks[0].String())
	e.println("Output stat for " + path + " " + tracks[1].String())
	return nil
}

func cmdSetQuota(ctx context.Context, e *env) error {
	if len(e.args) < 2 {
		return e.parseErr()
	}
	path := e.args[1]
	if strings.HasPrefix(path, quotaRoot) {
		e.eprintln("cannot set a quota under the path: " + quotaRoot)
		return nil
	}
	quota := statsTrack{"count": -1, "bytes": -1, "countHardLimit": -1, "byteHardLimit": -1}
	for _, o := range []struct {
		opt, key string
		min      int64
		bits     int
	}{{"n", "count", 1, 32}, {"b", "bytes", 0, 64}, {"N", "countHardLimit", 1, 32}, {"B", "byteHardLimit", 0, 64}} {
		if !e.cl.has(o.opt) {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimPrefix(e.cl.value(o.opt), "+"), 10, o.bits)
		if err != nil {
			e.eprintln("NumberFormatException happens when parsing the option value")
			return nil
		}
		if v < o.min {
			if o.min == 1 {
				e.eprintln("the num quota must be greater than zero")
			} else {
				e.eprintln("the bytes quota must be greater than or equal to zero")
			}
			return nil
		}
		quota[o.key] = v
	}
	return e.createQuota(ctx, path, quota)
}

// createQuota is SetQuotaCommand.createQuota: refuse a path with a quota above or below it,
// create /zookeeper/quota/<path>/zookeeper_limits and zookeeper_stats, or update the limits.
func (e *env) createQuota(ctx context.Context, path string, quota statsTrack) error {
	if err := validatePath(path); err != nil {
		return err
	}
	ok, _, err := e.c.Exists(ctx, path)
	if err != nil {
		return keeper(err, path)
	}
	if !ok {
		return cliError(path + " does not exist.")
	}
	if err := e.checkChildQuota(ctx, path); err != nil {
		return err
	}
	if err := e.checkParentQuota(ctx, path); err != nil {
		return err
	}
	create := func(p string, data []byte) error {
		_, err := e.c.Create(ctx, p, data, zk.OpenACL(), zk.ModePersistent)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return keeper(err, p)
		}
		return nil
	}
	if ok, _, err := e.c.Exists(ctx, quotaRoot); err != nil {
		return keeper(err, quotaRoot)
	} else if !ok {
		if err := create("/zookeeper", nil); err != nil {
			return err
		}
		if err := create(quotaRoot, nil); err != nil {
			return err
		}
	}
	qp := quotaRoot
	for _, part := range strings.Split(path, "/")[1:] {
		qp += "/" + part
		ok, _, err := e.c.Exists(ctx, qp)
		if err != nil {
			return keeper(err, qp)
		}
		if !ok {
			if err := create(qp, nil); err != nil {
				return err
			}
		}
	}
	statPath, limitPath := qp+"/"+statNode, qp+"/"+limitNode
	ok, _, err = e.c.Exists(ctx, limitPath)
	if err != nil {
		return keeper(err, limitPath)
	}
	if !ok {
		if _, err := e.c.Create(ctx, limitPath, []byte(quota.String()), zk.OpenACL(), zk.ModePersistent); err != nil {
			return keeper(err, limitPath)
		}
		if _, err := e.c.Create(ctx, statPath, []byte(statsTrack{"count": 0, "bytes": 0}.String()), zk.OpenACL(), zk.ModePersistent); err != nil {
			return keeper(err, statPath)
		}
		return e.checkQuota(ctx, limitPath, statPath, nil)
	}
	return e.checkQuota(ctx, limitPath, statPath, quota)
}

// checkQuota reads back the limits and stats, warns when the limits are below the usage, and,
// with update set, merges update's set values into the limits and writes them.
func (e *env) checkQuota(ctx context.Context, limitPath, statPath string, update statsTrack) error {
	data, _, err := e.c.Get(ctx, limitPath)
	if err != nil {
		return keeper(err, limitPath)
	}
	q := parseStatsTrack(string(data))
	for k, v := range update {
		if v > -1 {
			q[k] = v
		}
	}
	data, _, err = e.c.Get(ctx, statPath)
	if err != nil {
		return keeper(err, statPath)
	}
	st := parseStatsTrack(string(data))
	below := func(limit, used int64) bool { return limit > -1 && limit < used }
	if below(q.get("count"), st.get("count")) || below(q.get("countHardLimit"), st.get("count")) {
		e.println("[Warning]: the count quota you create is less than the existing count:" + strconv.FormatInt(st.get("count"), 10))
	}
	if below(q.get("bytes"), st.get("bytes")) || below(q.get("byteHardLimit"), st.get("bytes")) {
		e.println("[Warning]: the bytes quota you create is less than the existing bytes:" + strconv.FormatInt(st.get("bytes"), 10))
	}
	if update != nil {
		if _, err := e.c.Set(ctx, limitPath, []byte(q.String()), -1); err != nil {
			return keeper(err, limitPath)
		}
	}
	return nil
}

// checkChildQuota refuses a path with a quota on a node below it.
func (e *env) checkChildQuota(ctx context.Context, path string) error {
	root := quotaRoot + path
	if _, _, err := e.c.Get(ctx, root); err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return keeper(err, root)
	}
	var visit func(p string) error
	check := func(p string) error {
		kids, _, err := e.c.Children(ctx, p)
		if err != nil {
			return nil // removed meanwhile
		}
		for _, k := range kids {
			if p != quotaRoot+path && k == limitNode {
				return cliError(path + " has a child " + strings.TrimPrefix(p, quotaRoot) + " which has a quota")
			}
		}
		return nil
	}
	visit = func(p string) error {
		kids, _, err := e.c.Children(ctx, p)
		if err != nil {
			return nil
		}
		sort.Strings(kids)
		for _, k := range kids {
			if err := check(p + "/" + k); err != nil {
				return err
			}
		}
		for _, k := range kids {
			if err := visit(p + "/" + k); err != nil {
				return err
			}
		}
		return nil
	}
	if err := check(root); err != nil {
		return err
	}
	return visit(root)
}

// checkParentQuota refuses a path with a quota on a node above it.
func (e *env) checkParentQuota(ctx context.Context, path string) error {
	parts := strings.Split(path, "/")
	qp := quotaRoot
	for i := 1; i < len(parts)-1; i++ {
		qp += "/" + parts[i]
		kids, _, err := e.c.Children(ctx, qp)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return keeper(err, qp)
		}
		if len(kids) == 0 {
			return nil
		}
		for _, k := range kids {
			if qp != quotaRoot+path && k == limitNode {
				return cliError(path + " has a parent " + strings.TrimPrefix(qp, quotaRoot) + " which has a quota")
			}
		}
	}
	return nil
}

func cmdDelQuota(ctx context.Context, e *env) error {
	if len(e.args) < 2 {
		return e.parseErr()
	}
	path := e.args[1]
	parent := quotaRoot + path
	limit := parent + "/" + limitNode
	if err := validatePath(limit); err != nil {
		return err
	}
	err := e.delQuota(ctx, path, parent, limit)
	if errors.Is(err, zk.ErrNoNode) {
		e.eprintln("quota for " + path + " does not exist.")
		return nil
	}
	var oe *zk.OpError
	if err != nil && errors.As(err, &oe) {
		return keeper(err, oe.Path)
	}
	return err
}

func (e *env) delQuota(ctx context.Context, path, parent, limit string) error {
	ok, _, err := e.c.Exists(ctx, limit)
	if err != nil {
		return keeper(err, limit)
	}
	if !ok {
		e.println("Quota does not exist for " + path)
		return nil
	}
	data, _, err := e.c.Get(ctx, limit)
	if err != nil {
		return fmt.Errorf("get %s: %w", limit, err)
	}
	flags := map[string]string{"n": "count", "b": "bytes", "N": "countHardLimit", "B": "byteHardLimit"}
	flagSet := false
	for o := range flags {
		flagSet = flagSet || e.cl.has(o)
	}
	if !flagSet {
		kids, _, err := e.c.Children(ctx, parent)
		if err != nil {
			return fmt.Errorf("children of %s: %w", parent, err)
		}
		for _, k := range kids {
			if err := e.c.Delete(ctx, parent+"/"+k, -1); err != nil {
				return fmt.Errorf("delete %s/%s: %w", parent, k, err)
			}
		}
		// trimProcQuotas: remove the emptied ancestors up to /zookeeper/quota.
		for p := parent; p != quotaRoot; p = p[:strings.LastIndexByte(p, '/')] {
			kids, _, err := e.c.Children(ctx, p)
			if err != nil {
				return fmt.Errorf("children of %s: %w", p, err)
			}
			if len(kids) > 0 {
				break
			}
			if err := e.c.Delete(ctx, p, -1); err != nil {
				return fmt.Errorf("delete %s: %w", p, err)
			}
		}
		return nil
	}
	st := parseStatsTrack(string(data))
	for o, k := range flags {
		if e.cl.has(o) {
			st[k] = -1
		}
	}
	if _, err := e.c.Set(ctx, limit, []byte(st.String()), -1); err != nil {
		return fmt.Errorf("set %s: %w", limit, err)
	}
	return nil
}
