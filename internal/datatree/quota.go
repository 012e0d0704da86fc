package datatree

import (
	"strconv"
	"strings"
)

const (
	limitNode = "zookeeper_limits"
	statNode  = "zookeeper_stats"
)

func (t *Tree) quotaPrefix(path string) string {
	if t.quotas == nil {
		return ""
	}
	for p := path; p != "" && p != "/"; p = Parent(p) {
		if _, ok := t.quotas[p]; ok {
			return p
		}
	}
	return ""
}

func (t *Tree) quotaCreated(parentPath, path string, data []byte) {
	if strings.HasPrefix(parentPath, QuotaPath) {
		real := parentPath[len(QuotaPath):]
		switch Base(path) {
		case limitNode:
			if real != "" {
				if t.quotas == nil {
					t.quotas = map[string]struct{}{}
				}
				t.quotas[real] = struct{}{}
			}
		case statNode:
			if real != "" {
				t.updateQuotaForPath(real)
			}
		}
	}
	t.quotaChanged(path, int64(len(data)), 1)
}

func (t *Tree) quotaDeleted(parentPath, path string, data []byte) {
	if strings.HasPrefix(parentPath, QuotaPath) && Base(path) == limitNode {
		delete(t.quotas, parentPath[len(QuotaPath):])
	}
	t.quotaChanged(path, -int64(len(data)), -1)
}

func (t *Tree) quotaChanged(path string, bytes int64, count int64) {
	p := t.quotaPrefix(path)
	if p == "" {
		return
	}
	sn := t.nodes[QuotaPath+p+"/"+statNode]
	if sn == nil {
		return
	}
	c, b := parseStats(sn.Data)
	t.setStats(QuotaPath+p+"/"+statNode, sn, c+count, b+bytes)
}

func (t *Tree) setStats(path string, n *Node, count, bytes int64) {
	data := []byte("count=" + strconv.FormatInt(count, 10) + ",bytes=" + strconv.FormatInt(bytes, 10))
	t.dataSize += nodeSize(path, data) - nodeSize(path, n.Data)
	n.Data = data
}

func parseStats(b []byte) (count, bytes int64) {
	count, bytes = -1, -1
	for _, kv := range strings.FieldsFunc(string(b), func(r rune) bool { return r == ',' || r == ';' }) {
		k, v, _ := strings.Cut(kv, "=")
		v, _, _ = strings.Cut(v, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			n = -1
		}
		switch k {
		case "count":
			count = n
		case "bytes":
			bytes = n
		}
	}
	return
}

func (t *Tree) updateQuotaForPath(real string) {
	var count, bytes int64
	var walk func(p string)
	walk = func(p string) {
		n := t.nodes[p]
		if n == nil {
			return
		}
		count++
		bytes += int64(len(n.Data))
		for _, c := range n.childNames() {
			walk(Join(p, c))
		}
	}
	walk(real)
	sp := QuotaPath + real + "/" + statNode
	if sn := t.nodes[sp]; sn != nil {
		t.setStats(sp, sn, count, bytes)
	}
}

func (t *Tree) setupQuota(p string) {
	n := t.nodes[p]
	if n == nil {
		return
	}
	if n.NumChildren() == 0 {
		if strings.HasSuffix(p, "/"+limitNode) {
			real := p[len(QuotaPath) : len(p)-len(limitNode)-1]
			if real != "" {
				t.updateQuotaForPath(real)
				if t.quotas == nil {
					t.quotas = map[string]struct{}{}
				}
				t.quotas[real] = struct{}{}
			}
		}
		return
	}
	for _, c := range n.childNames() {
		t.setupQuota(Join(p, c))
	}
}
