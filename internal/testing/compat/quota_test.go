package compat

import (
	"strings"
	"testing"

	"github.com/zkd-io/zkd/internal/testing/refzk"
	"github.com/zkd-io/zkd/jute"
	"github.com/zkd-io/zkd/server"
	"github.com/zkd-io/zkd/zktest"
)

// setquota is what zkCli's setquota (SetQuotaCommand.createQuota) writes for path: the
// /zookeeper/quota<path> parents, the limits node holding the requested StatsTrack, then a
// stats node holding "count=0,bytes=0", which the server recounts at once. limits is the
// StatsTrack the client formats, e.g. "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=3"
// for "setquota -N 3".
func setquota(sess, path, limits string) []step {
	var steps []step
	q := "/zookeeper/quota"
	for _, c := range strings.Split(path, "/")[1:] {
		q += "/" + c
		steps = append(steps, create(sess, q, nil, persistent))
	}
	return append(steps,
		create(sess, q+"/zookeeper_limits", b(limits), persistent),
		create(sess, q+"/zookeeper_stats", b("count=0,bytes=0"), persistent),
		getData(sess, q+"/zookeeper_stats", false))
}

func stats(sess, path string) step {
	return getData(sess, "/zookeeper/quota"+path+"/zookeeper_stats", false)
}

// quotaGroup compares quota tracking and enforcement (both servers run with
// zookeeper.enforceQuota=true): the stats nodes' data as creates, deletes and setData move
// them, and which writes are refused with QUOTAEXCEEDED, alone and in multi. ZooKeeper checks
// a write against the applied tree's stats, not the outstanding changes: two creates in one
// multi are each checked against the same count.
func quotaGroup() group {
	var steps []step
	add := func(s ...step) { steps = append(steps, s...) }
	add(create("a", "/qa", b("abc"), persistent),
		create("a", "/qa/x", b("12"), persistent))
	// setquota -N 4 /qa: a hard count limit.
	add(setquota("a", "/qa", "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=4")...)
	add(create("a", "/qa/y", b("1"), persistent),
		stats("a", "/qa"),
		create("a", "/qa/z", nil, persistent),
		create("a", "/qa/w", nil, persistent), // the fifth node: QUOTAEXCEEDED
		create("a", "/qa/s-", nil, seq),
		createTTL("a", "/qa/t", jute.FlagPersistentWithTTL, hour),
		container("a", "/qa/c", jute.FlagContainer),
		create("a", "/qa/x/deep", nil, persistent),
		create("a", "/qa/x", nil, persistent), // NODEEXISTS is found first
		stats("a", "/qa"),
		setData("a", "/qa", b("a longer value"), -1), // no byte limit
		multi("a", mCreate("/qa/m1", nil, persistent)),
		multi("a", mSet("/qa", b("v"), -1), mCreate("/qa/m1", nil, persistent), mSet("/qa/x", nil, -1)),
		del("a", "/qa/z", -1),
		stats("a", "/qa"),
		// Both creates are checked against count=3: the multi ends with 5 nodes.
		multi("a", mCreate("/qa/m1", b("1"), persistent), mCreate("/qa/m2", b("2"), persistent)),
		stats("a", "/qa"),
		create("a", "/qa/m3", nil, persistent),
		del("a", "/qa/m1", -1),
		del("a", "/qa/m2", -1),
		stats("a", "/qa"),
		create("a", "/qab", nil, persistent), // not under /qa
	)
	// setquota -B 10 /qb: a hard byte limit; setData counts the change in length.
	add(create("a", "/qb", b("12345"), persistent))
	add(setquota("a", "/qb", "count=-1,bytes=-1=;byteHardLimit=10;countHardLimit=-1")...)
	add(create("a", "/qb/a", b("1234"), persistent),
		create("a", "/qb/b", b("12"), persistent), // 11 bytes
		create("a", "/qb/b", nil, persistent),     // no bytes: not checked
		setData("a", "/qb", b("123456"), -1),
		setData("a", "/qb", b("123456"), 7), // the quota is checked before the version
		setData("a", "/qb", b("1234"), 7),   // fewer bytes: BADVERSION
		setData("a", "/qb", b("1234"), -1),
		stats("a", "/qb"),
		setData("a", "/qb/a", b("123456"), -1),
		setData("a", "/qb/a", b("1234567"), -1),
		multi("a", mSet("/qb/a", b(""), -1), mSet("/qb", b("1234567890"), -1)),
		stats("a", "/qb"),
	)
	// setquota -n 1 -b 2 /qc: soft limits are logged, not enforced.
	add(create("a", "/qc", nil, persistent))
	add(setquota("a", "/qc", "count=1,bytes=2=;byteHardLimit=-1;countHardLimit=-1")...)
	add(create("a", "/qc/a", b("abc"), persistent),
		setData("a", "/qc", b("abcdef"), -1),
		stats("a", "/qc"),
	)
	// A nested quota takes the writes below it; the outer one no longer sees them.
	add(create("a", "/qa/n", nil, persistent))
	add(setquota("a", "/qa/n", "count=-1,bytes=-1=;byteHardLimit=3;countHardLimit=-1")...)
	add(create("a", "/qa/n/a", b("abcd"), persistent),
		create("a", "/qa/n/a", b("abc"), persistent),
		create("a", "/qa/n/b", nil, persistent), // no count limit on /qa/n
		stats("a", "/qa/n"),
		stats("a", "/qa"),
		// Deleting the limits node lifts the quota; the stats node stays as it was.
		del("a", "/zookeeper/quota/qa/n/zookeeper_limits", -1),
		create("a", "/qa/n/c", b("abcdef"), persistent),
		stats("a", "/qa/n"),
		// The stats node's data is the server's to rewrite: a client's value is kept only
		// until the next change, with its extra keys.
		setData("a", "/zookeeper/quota/qb/zookeeper_stats", b("count=1,bytes=1=;zz=7;aa=1"), -1),
		stats("a", "/qb"),
		create("a", "/qb/c", b("1"), persistent),
		stats("a", "/qb"),
		// A limits node set by a client later: setquota on an existing quota.
		setData("a", "/zookeeper/quota/qb/zookeeper_limits", b("count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=3"), -1),
		create("a", "/qb/d", nil, persistent),
		create("a", "/qb/e", nil, persistent),
	)
	return group{name: "quota", sessions: []string{"a"}, steps: steps}
}

// TestCompatQuotaMntr compares the quota lines of mntr (the gauge sets
// quota_*_per_namespace and the counter set quota_exceeded_error_per_namespace, which
// ZooKeeper 3.8 and 3.9 both print) after setting quotas and passing a hard one, and
// approximate_data_size as the stats nodes change.
func TestCompatQuotaMntr(t *testing.T) {
	refzk.Require(t)
	ref := refzk.StartStandalone(t, refOptions("", "zookeeper.enforceQuota=true"))
	z := zktest.Start(t, zkdConfig("", func(c *server.Config) {
		c.EnforceQuota = true
		c.FourLetterWhitelist = []string{"*"}
	}))
	targets := []target{{"zookeeper", ref.Addr()}, {"zkd", z.Addr()}}
	mntr := func(r *run) string {
		out := flwProbe(r.tgt.addr, []byte("mntr"))
		var lines []string
		for l := range strings.SplitSeq(strings.ReplaceAll(out, `\n`, "\n"), "\n") {
			// approximate_data_size: ZooKeeper does not count the stats nodes' in-memory
			// updates in it.
			if strings.Contains(l, "quota") || strings.Contains(l, "approximate_data_size") {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "\n")
	}
	var steps []step
	add := func(s ...step) { steps = append(steps, s...) }
	add(step{sess: "a", label: "mntr quota lines", act: mntr})
	add(create("a", "/m1", b("abc"), persistent), create("a", "/m2", nil, persistent))
	add(setquota("a", "/m1", "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=1")...)
	add(setquota("a", "/m2", "count=5,bytes=100")...)
	add(create("a", "/m1/a", nil, persistent),
		create("a", "/m1/b", nil, persistent),
		create("a", "/m2/a", b("xyz"), persistent),
		step{sess: "a", label: "mntr quota lines", act: mntr},
		del("a", "/m2/a", -1),
		setData("a", "/zookeeper/quota/m2/zookeeper_stats", b("count=1"), -1),
		create("a", "/m2/b", b("xy"), persistent),
		step{sess: "a", label: "mntr quota lines", act: mntr},
		del("a", "/zookeeper/quota/m2/zookeeper_stats", -1),
		step{sess: "a", label: "mntr quota lines", act: mntr})
	compareScript(t, targets, []group{{name: "quota-mntr", sessions: []string{"a"}, steps: steps}})
}
