package metrics

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// zkSourceTag is the ZooKeeper release the names are taken from.
const zkSourceTag = "release-3.9.4-2"

// namesFile is what extractNames found in that release's source, one "kind name" line per
// metric: the committed record the name lists are checked against on machines without the
// source. Regenerate it with -update-names when a mirror of ZooKeeper's repository is at
// ZKD_ZOOKEEPER_GIT (default /work/.mirror/apache+zookeeper/repo).
const namesFile = "testdata/zookeeper-3.9.4-metrics.txt"

var updateNames = flag.Bool("update-names", false, "rewrite "+namesFile+" from ZooKeeper's source")

// zkGit is a bare clone of Apache ZooKeeper's repository, or "" when there is none.
func zkGit() string {
	dir := os.Getenv("ZKD_ZOOKEEPER_GIT")
	if dir == "" {
		dir = "/work/.mirror/apache+zookeeper/repo"
	}
	if _, err := os.Stat(dir); err != nil {
		return ""
	}
	return dir
}

func gitShow(t *testing.T, dir, path string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "show", zkSourceTag+":"+path).Output()
	if err != nil {
		t.Fatalf("git show %s:%s: %v", zkSourceTag, path, err)
	}
	return string(out)
}

// extractNames reads the metric registrations out of ZooKeeper's source: ServerMetrics
// (counters, summaries with their detail level, the labelled sets), the gauges of
// ZooKeeperServer and of the quorum roles, and the quota sets' names.
func extractNames(t *testing.T, dir string) []string {
	const srv = "zookeeper-server/src/main/java/org/apache/zookeeper/server/"
	consts := map[string]string{}
	for _, m := range regexp.MustCompile(`static final String (\w+) = "([a-z_]+)"`).FindAllStringSubmatch(gitShow(t, dir, srv+"util/QuotaMetricsUtils.java"), -1) {
		consts["QuotaMetricsUtils."+m[1]] = m[2]
	}
	name := func(lit, ref string) string {
		if lit != "" {
			return lit
		}
		n, ok := consts[ref]
		if !ok {
			t.Fatalf("unresolved metric name %s", ref)
		}
		return n
	}
	var out []string
	sm := strings.Join(strings.Fields(gitShow(t, dir, srv+"ServerMetrics.java")), " ")
	re := regexp.MustCompile(`metricsContext\.get(Counter|Summary|CounterSet|SummarySet)\( ?(?:"([a-z0-9_]+)"|(QuotaMetricsUtils\.[A-Z_]+)) ?(?:, ?DetailLevel\.([A-Z]+))?`)
	for _, m := range re.FindAllStringSubmatch(sm, -1) {
		kind := m[1]
		if m[4] != "" {
			kind += "-" + m[4]
		}
		out = append(out, kind+" "+name(m[2], m[3]))
	}
	gauges := regexp.MustCompile(`registerGauge(Set)?\( ?(?:"([a-z0-9_]+)"|(QuotaMetricsUtils\.[A-Z_]+))`)
	for file, kind := range map[string]string{
		"ZooKeeperServer.java":                "Gauge",
		"quorum/LeaderZooKeeperServer.java":   "RoleGauge",
		"quorum/FollowerZooKeeperServer.java": "RoleGauge",
		"quorum/QuorumZooKeeperServer.java":   "RoleGauge",
	} {
		for _, m := range gauges.FindAllStringSubmatch(gitShow(t, dir, srv+file), -1) {
			k := kind
			if m[1] != "" {
				k = "GaugeSet"
			}
			out = append(out, k+" "+name(m[2], m[3]))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func readNamesFile(t *testing.T) []string {
	f, err := os.Open(namesFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// TestNamesFileMatchesSource re-extracts the names from ZooKeeper's source, when it is at
// hand, and compares them with the committed record.
func TestNamesFileMatchesSource(t *testing.T) {
	dir := zkGit()
	if dir == "" {
		t.Skip("no ZooKeeper git mirror (ZKD_ZOOKEEPER_GIT); " + namesFile + " is checked by TestZooKeeperNames alone")
	}
	got := extractNames(t, dir)
	if *updateNames {
		text := fmt.Sprintf("# Metric registrations in Apache ZooKeeper %s (Apache License 2.0), extracted by\n# names_test.go: kind name, where kind is the registering call and its DetailLevel.\n", zkSourceTag)
		if err := os.WriteFile(namesFile, []byte(text+strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want := readNamesFile(t); !slices.Equal(got, want) {
		t.Errorf("%s is stale (run with -update-names):\n source %v\n file   %v", namesFile, got, want)
	}
}

// TestZooKeeperNames checks names.go against the record of ZooKeeper's registrations:
// every name with its kind, and the summary detail levels that decide the quantiles.
func TestZooKeeperNames(t *testing.T) {
	want := readNamesFile(t)
	if len(want) < 100 {
		t.Fatalf("%s has %d names; the extraction broke", namesFile, len(want))
	}
	var have []string
	add := func(kind string, names []string) {
		for _, n := range names {
			have = append(have, kind+" "+n)
		}
	}
	add("Gauge", zkGauges)
	add("RoleGauge", zkRoleGauges)
	add("Counter", zkCounters)
	add("Summary-BASIC", zkBasicSummaries)
	add("Summary-ADVANCED", zkAdvancedSummaries)
	add("SummarySet-BASIC", zkBasicSummarySets)
	add("SummarySet-ADVANCED", zkAdvancedSummarySets)
	add("CounterSet", zkCounterSets)
	add("GaugeSet", zkGaugeSets)
	slices.Sort(have)
	for _, w := range want {
		if !slices.Contains(have, w) {
			t.Errorf("ZooKeeper registers %q; names.go does not have it", w)
		}
	}
	for _, h := range have {
		if !slices.Contains(want, h) {
			t.Errorf("names.go has %q; ZooKeeper %s does not register it", h, zkSourceTag)
		}
	}
}
