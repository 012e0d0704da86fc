package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// QuorumText renders an ensemble's membership as ZooKeeper stores it in /zookeeper/config
// and writes it to zoo.cfg.dynamic files: QuorumMaj.toString, one
// `server.N=host:quorumPort:electionPort:participant|observer[;clientHost:clientPort]` line
// per member, then `version=<hex>` without a newline. version is the configuration's
// version (0 for a static configuration, which has no version key).
//
// The client part appears only when the server.N line had one. ZooKeeper also gives the
// local member the static clientPortAddress, but marks it so that it is not printed. A
// line whose client part is a lone port listens on all interfaces: ZooKeeper prints it as
// 0.0.0.0.
//
// The members come in the iteration order of Java's HashMap<Long, QuorumServer>, which is
// what ZooKeeper prints: by bucket (the id's hash modulo the table's capacity), so ascending
// for ids below the capacity (16 for up to 12 members). Within one bucket Java keeps
// insertion order, which follows java.util.Properties' own hash order; zkd takes ascending
// ids there, so ensembles with ids at or above the capacity may list colliding ids in
// another order than ZooKeeper.
func QuorumText(servers map[int]Member, version int64) string {
	var b strings.Builder
	writeServerLines(&b, servers)
	b.WriteString("version=")
	b.WriteString(strconv.FormatUint(uint64(version), 16))
	return b.String()
}

// writeServerLines writes QuorumText's server.N lines.
func writeServerLines(b *strings.Builder, servers map[int]Member) {
	for _, id := range serverOrder(servers) {
		fmt.Fprintf(b, "server.%d=%s\n", id, quorumServerString(servers[id]))
	}
}

// serverOrder is the order in which ZooKeeper's HashMap of members lists the servers.
func serverOrder(servers map[int]Member) []int {
	ids := make([]int, 0, len(servers))
	for id := range servers {
		ids = append(ids, id)
	}
	capacity := javaHashMapCapacity(len(ids))
	slices.SortFunc(ids, func(a, b int) int {
		if ba, bb := javaLongBucket(int64(a), capacity), javaLongBucket(int64(b), capacity); ba != bb {
			return ba - bb
		}
		return a - b
	})
	return ids
}

// quorumServerString is QuorumServer.toString.
func quorumServerString(s Member) string {
	role := "participant"
	if s.Observer {
		role = "observer"
	}
	out := s.addrsString(true) + ":" + role
	if s.ClientPort != 0 {
		host := s.ClientHost
		if host == "" {
			host = "0.0.0.0"
		}
		out += fmt.Sprintf(";%s:%d", bracketHost(host), s.ClientPort)
	}
	return out
}

// javaHashMapCapacity is the table size of a default HashMap after n puts: 16, doubled
// whenever the size passes three quarters of it.
func javaHashMapCapacity(n int) int {
	c := 16
	for n > c*3/4 {
		c *= 2
	}
	return c
}

// javaLongBucket is the bucket of a Long key in a HashMap of the given capacity: Long's
// hashCode, spread by HashMap.hash, masked.
func javaLongBucket(id int64, capacity int) int {
	h := int32(id ^ int64(uint64(id)>>32))
	h ^= int32(uint32(h) >> 16)
	return int(h) & (capacity - 1)
}
